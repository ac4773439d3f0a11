#!/usr/bin/env python3
"""A kpilot GEMM object against torch.matmul (cuBLAS/cuBLASLt) in one process, on the same inputs:
rounds that call the two one after the other, alternating which goes first, the L2 flushed before
each call, CUDA events on one stream. Prints per shape the medians, the throughput in TFLOP/s and
kpilot's share of torch's throughput with a bootstrap 95% CI over the paired rounds, after
checking the object's output against torch's.

The object is a candidate compiled by kpilot (`kpilot eval TASK CANDIDATE --json --store S` leaves it
in S/cache/<compile.key>/object.so), or compiled here through kpilot eval when --task and --candidate are given:

  python3 bench/gemm_vs_torch.py --object OBJ.so --shapes 4096x4096x4096,8192x8192x8192
  python3 bench/gemm_vs_torch.py --object GELU.so --epilogue bias_gelu --shapes 16384x4096x4096
  python3 bench/gemm_vs_torch.py --kpilot .stage/bin/kpilot --task examples/cuda/gemm_tc \\
      --candidate examples/cuda/gemm_tc/candidates/cutlass_sm90.cu -D TILE_N=256 --shapes kernelbench

Shapes are MxNxK; `kernelbench` stands for the matmul shapes of KernelBench's level 1 (square
4096, 2048x4096 with K 8192, the irregular 8205x5921x2949, which gemm_tc runs on padded copies).
--dtype bf16|f16 gives bf16 or f16 operands and output; --dtype f32 times f32 with TF32 off on
both sides.
"""

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
from kpilot_torch.native import NativeKernel  # noqa: E402

KERNELBENCH = ["4096x4096x4096", "2048x4096x8192", "8205x5921x2949"]
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}


def compile_object(a):
    """The object of --candidate through `kpilot eval --json` (which also checks it on the task)."""
    store = tempfile.mkdtemp(prefix="kpilot-gemm-")
    cmd = [a.kpilot, "eval", a.task, a.candidate, "--json", "--store", store]
    if a.workload:
        cmd += ["--workload", a.workload]
    for d in a.define or []:
        cmd += ["-D", d]
    r = subprocess.run(cmd, capture_output=True, text=True)
    try:
        e = json.loads(r.stdout)
    except json.JSONDecodeError:
        sys.exit("kpilot eval printed no JSON (exit %d):\n%s" % (r.returncode, r.stderr[-3000:]))
    verdict = e.get("verdict", {})
    status = verdict.get("kind") if isinstance(verdict, dict) else verdict
    print("kpilot eval: %s, speedup over the task's baseline %s; compile %.1f s" % (
        status, e.get("speedup_geomean"), (e.get("compile") or {}).get("seconds", 0)))
    # The compile cache keeps the object under its key (docs/store-format.md).
    key = (e.get("compile") or {}).get("key", "")
    obj = str(Path(store) / "cache" / key / "object.so") if key else ""
    if not obj or not Path(obj).is_file():
        sys.exit("kpilot eval named no compiled object:\n%s" % r.stdout[-2000:])
    return obj


def parse_shapes(text):
    out = []
    for s in text.split(","):
        if s == "kernelbench":
            out += [tuple(int(x) for x in k.split("x")) for k in KERNELBENCH]
        else:
            m, n, k = (int(x) for x in s.lower().split("x"))
            out.append((m, n, k))
    return out


def bootstrap_ratio(ours, theirs, draws=2000, seed=7):
    """kpilot's share of torch's throughput (torch's median time over ours), with a 95% CI from
    resampling the paired rounds."""
    rng = random.Random(seed)
    n = len(ours)
    point = statistics.median(theirs) / statistics.median(ours)
    stats = []
    for _ in range(draws):
        idx = [rng.randrange(n) for _ in range(n)]
        stats.append(statistics.median(theirs[i] for i in idx) / statistics.median(ours[i] for i in idx))
    stats.sort()
    return point, stats[int(0.025 * draws)], stats[int(0.975 * draws) - 1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--object", help="a compiled kpilot-ABI GEMM object (A m x k, B k x n, C m x n, row-major)")
    ap.add_argument("--kpilot", default="kpilot")
    ap.add_argument("--task")
    ap.add_argument("--candidate")
    ap.add_argument("--workload", help="the task's workload kpilot eval checks (default: all)")
    ap.add_argument("-D", dest="define", action="append", help="a param NAME=VALUE for the candidate")
    ap.add_argument("--shapes", default="4096x4096x4096")
    ap.add_argument("--dtype", default="bf16", choices=sorted(DTYPES))
    ap.add_argument("--epilogue", default="none", choices=["none", "bias_gelu", "scale_residual"],
                    help="bias_gelu: the object takes (a, b, bias) and computes gelu(a @ b + bias); scale_residual: "
                         "(a, b, r) and a scalar alpha, alpha * (a @ b) + r; torch's side is torch.matmul followed "
                         "by the same epilogue in eager ops")
    ap.add_argument("--rounds", type=int, default=0,
                    help="paired rounds per shape; 0: as many as fill about --seconds of calls, 50 to 2000")
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--json", help="write the figures here too")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("no CUDA device: this compares against cuBLAS on the GPU")
    if not a.object:
        if not (a.task and a.candidate):
            sys.exit("give --object, or --task and --candidate to compile one through kpilot eval")
        a.object = compile_object(a)
    kernel = NativeKernel(a.object)
    dtype = DTYPES[a.dtype]
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    flush = torch.empty(2 * max(getattr(props, "L2_cache_size", 50 << 20), 50 << 20) // 4, dtype=torch.int32, device=dev)
    print("%s, torch %s, %s operands, epilogue %s, %s rounds" % (props.name, torch.__version__, a.dtype, a.epilogue,
                                                                  a.rounds or "adaptive"))
    torch_side = {"none": "matmul", "bias_gelu": "matmul, + bias, gelu", "scale_residual": "matmul, * alpha, + r"}
    print("| shape MxNxK | kpilot ms | torch ms (%s) |" % torch_side[a.epilogue], end="")
    print(" kpilot TFLOP/s | torch TFLOP/s | kpilot / torch throughput [95% CI] |")
    print("|---|---:|---:|---:|---:|---|")
    rows = []
    for m, n, k in parse_shapes(a.shapes):
        torch.manual_seed(0)
        A = torch.randn(m, k, device=dev, dtype=dtype)
        B = torch.randn(k, n, device=dev, dtype=dtype)
        C = torch.empty(m, n, device=dev, dtype=dtype)
        ins, scalars, alpha = [("a", A), ("b", B)], [], 0.125
        if a.epilogue == "bias_gelu":
            bias = torch.randn(n, device=dev, dtype=dtype)
            ins.append(("bias", bias))
        elif a.epilogue == "scale_residual":
            R = torch.randn(m, n, device=dev, dtype=dtype)
            ins.append(("r", R))
            scalars = [("alpha", alpha, "f32")]

        def ours():
            kernel.launch(ins, [("c", C)], scalars)

        def theirs():
            if a.epilogue == "bias_gelu":
                return torch.nn.functional.gelu(torch.matmul(A, B) + bias)
            if a.epilogue == "scale_residual":
                return torch.matmul(A, B) * alpha + R
            return torch.matmul(A, B)

        try:
            ours()
        except Exception as e:  # the object refuses a shape (alignment, size): say so, go on
            print("| %dx%dx%d | %s | | | | |" % (m, n, k, str(e)))
            continue
        ref = theirs()
        torch.cuda.synchronize()
        err = ((C.float() - ref.float()).abs().max() / ref.float().abs().max().clamp_min(1e-30)).item()
        for _ in range(a.warmup):
            ours()
            theirs()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

        def timed(fn):
            flush.zero_()
            start.record()
            fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end)

        # Sub-millisecond calls spread round to round (clocks, the flush): as many rounds as fill
        # about --seconds, so a 0.2 ms GEMM gets a CI as tight as an 8192-cube one.
        rounds = a.rounds or max(50, min(2000, int(a.seconds * 1e3 / (timed(ours) + timed(theirs)))))
        t_ours, t_theirs = [], []
        for r in range(rounds):
            if r % 2 == 0:
                t_ours.append(timed(ours))
                t_theirs.append(timed(theirs))
            else:
                t_theirs.append(timed(theirs))
                t_ours.append(timed(ours))
        flops = 2.0 * m * n * k
        mo, mt = statistics.median(t_ours), statistics.median(t_theirs)
        share, lo, hi = bootstrap_ratio(t_ours, t_theirs)
        rows.append({"m": m, "n": n, "k": k, "kpilot_ms": mo, "torch_ms": mt, "share": share, "ci": [lo, hi],
                     "rounds": rounds, "max_rel_err": err})
        print("| %dx%dx%d | %.4f | %.4f | %.0f | %.0f | %.3f [%.3f, %.3f]%s |" % (
            m, n, k, mo, mt, flops / mo / 1e9, flops / mt / 1e9, share, lo, hi,
            "" if err < 2e-2 else " (output differs from torch's: max rel err %.3g)" % err))
        del A, B, C, ref, ins
        torch.cuda.empty_cache()
    if a.json:
        Path(a.json).write_text(json.dumps({"gpu": props.name, "torch": torch.__version__, "dtype": a.dtype,
                                            "epilogue": a.epilogue, "object": a.object, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
