"""Runs the suite's native candidates on the CPU, for a machine without a GPU: each .cu is rewritten
(`kernel<<<grid, block, smem, stream>>>(args)` -> a call of kemu::Launch), built with g++ against
shim/cuda_runtime.h (one std::thread per CUDA thread, __shared__ as static, barriers for
__syncthreads and warp shuffles), and sent to kpilot's worker (python/kpilot_torch, `run`, device
cpu, candidate kind native) against the problem's Model at small shapes with tails (module-level
constants rewritten in a copy of the problem file). This checks indexing, tails, reductions, the
ABI mapping and the epilogues; it says nothing about speed, memory coalescing, or races that the
emulator's scheduling happens not to expose.

  .venv-torch/bin/python examples/kernelbench/tools/emu/emulate.py [--problems GLOB] [-D NAME=VALUE ...] [FILE.cu ...]

Without files: every candidates/<stem>/*.cu and better/*.cu at its defaults, on every shape listed
in SHAPES for its problem. Exit status 1 when any run does not pass.
"""
import argparse
import fnmatch
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SUITE = HERE.parents[1]
REPO = SUITE.parents[1]

# Small shapes per problem (module-level constants), with tails and both vector and scalar paths.
SHAPES = {
    "1_ReLU": [{"batch_size": 3, "dim": 1001}],
    "2_GELUTanh": [{"batch_size": 3, "dim": 1001}],
    "3_RowSoftmax": [{"batch_size": 4, "dim": 1000}, {"batch_size": 3, "dim": 1003}],
    "4_LayerNorm": [{"batch_size": 4, "dim": 1000}, {"batch_size": 3, "dim": 999}],
    "5_SumReduceDim": [{"batch_size": 2, "dim1": 37, "dim2": 132}, {"batch_size": 2, "dim1": 37, "dim2": 130}],
    "6_MatmulSquare": [{"N": 67}],
    "7_TransposeCopy": [{"rows": 70, "cols": 45}],
    "1_LinearBiasReLU": [{"batch_size": 5, "in_features": 37, "out_features": 70}],
    "2_MatmulScaleResidual": [{"M": 33, "K": 20, "N": 70}],
    "3_SwishBiasAdd": [{"batch_size": 3, "dim": 1000}, {"batch_size": 3, "dim": 999}],
    "4_ResidualAddLayerNorm": [{"batch_size": 4, "dim": 1000}, {"batch_size": 3, "dim": 999}],
    "1_MLPBlock": [{"tokens": 9, "hidden": 40, "ffn": 72}],
    "2_AttentionHead": [{"batch_size": 2, "seq_len": 70, "d_model": 40, "d_head": 64},
                        {"batch_size": 2, "seq_len": 37, "d_model": 24, "d_head": 16}],
}


def matching_paren(s, i):
    depth = 0
    for j in range(i, len(s)):
        if s[j] == "(":
            depth += 1
        elif s[j] == ")":
            depth -= 1
            if depth == 0:
                return j
    raise ValueError("unbalanced parentheses")


def split_top(s):
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts]


def rewrite_launches(src):
    out = ""
    while True:
        i = src.find("<<<")
        if i < 0:
            return out + src
        j = src.find(">>>", i)
        # The kernel expression: back from <<< over a name and optional template arguments.
        k = i
        if src[k - 1] == ">":
            depth = 0
            while True:
                k -= 1
                if src[k] == ">":
                    depth += 1
                elif src[k] == "<":
                    depth -= 1
                    if depth == 0:
                        break
        m = re.search(r"[A-Za-z_][A-Za-z0-9_:]*$", src[:k])
        start = m.start()
        kernel = src[start:i]
        config = split_top(src[i + 3:j])
        p = j + 3
        while src[p].isspace():
            p += 1
        assert src[p] == "(", "a launch without arguments"
        q = matching_paren(src, p)
        args = src[p:q + 1]
        out += src[:start] + "::kemu::Launch(dim3(%s), dim3(%s), [&]() { %s%s; })" % (config[0], config[1], kernel, args)
        src = src[q + 1:]


def build(cu, defines, tmp):
    src = Path(cu).read_text()
    cpp = Path(tmp) / (Path(cu).stem + ".cpp")
    cpp.write_text('#include "cuda_runtime.h"\n' + rewrite_launches(src))
    so = Path(tmp) / (Path(cu).stem + ".so")
    cmd = ["g++", "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", "-w", "-I", str(HERE / "shim"), "-I",
           str(REPO / "include")] + ["-D" + d for d in defines] + [str(cpp), "-o", str(so)]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    if p.returncode != 0:
        raise RuntimeError("g++ failed for %s:\n%s" % (cu, p.stderr[-3000:]))
    return so


def small_problem(problem, shape, tmp):
    src = Path(problem).read_text()
    for name, value in shape.items():
        src, n = re.subn(r"(?m)^%s = \d+$" % re.escape(name), "%s = %d" % (name, value), src)
        if n != 1:
            raise ValueError("%s: no module-level constant %s" % (problem, name))
    path = Path(tmp) / Path(problem).name
    path.write_text(src)
    return path


def run(problem, so, cu):
    req = {"version": 1, "mode": "run", "format": "kernelbench", "problem": str(problem),
           "workloads": [{"name": "default"}],
           "candidate": {"kind": "native", "path": str(Path(cu).resolve()), "object": str(so)},
           "seeds": [1, 2], "time": False, "device": "cpu", "timeout_s": 600}
    with tempfile.TemporaryDirectory() as tmp:
        rp = os.path.join(tmp, "request.json")
        with open(rp, "w") as f:
            json.dump(req, f)
        env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
        p = subprocess.run([sys.executable, "-m", "kpilot_torch.worker", "run", rp], cwd=tmp, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    lines = [l for l in p.stdout.splitlines() if l.strip()]
    if not lines:
        return {"status": "error", "message": "worker printed nothing: " + p.stderr[-1000:]}
    return json.loads(lines[-1])


def shown(path):
    try:
        return path.relative_to(SUITE)
    except ValueError:
        return path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="*")
    ap.add_argument("--problems", default="*")
    ap.add_argument("-D", dest="defines", action="append", default=[])
    a = ap.parse_args()
    files = [Path(f) for f in a.files] or sorted(
        list(SUITE.glob("candidates/*/*.cu")) + list(SUITE.glob("candidates/*/better/*.cu")))
    failed = 0
    for cu in files:
        cu = cu.resolve()
        stem = cu.parent.name if cu.parent.name != "better" else cu.parent.parent.name
        if not fnmatch.fnmatch(stem, a.problems):
            continue
        problem = next(SUITE.glob("level*/%s.py" % stem), None)
        if problem is None:
            print("FAIL %s: no problem %s in %s" % (cu, stem, SUITE))
            failed += 1
            continue
        with tempfile.TemporaryDirectory() as tmp:
            try:
                so = build(cu, a.defines, tmp)
            except RuntimeError as e:
                print("FAIL %s: %s" % (shown(cu), e))
                failed += 1
                continue
            for shape in SHAPES[stem]:
                r = run(small_problem(problem, shape, tmp), so, cu)
                worst = max((c.get("max_abs_error") or 0 for c in r.get("checks") or []), default=0)
                ok = r.get("status") == "passed"
                failed += not ok
                print("%s %s %s %s: %s (max abs error %.3g)%s" % (
                    "ok  " if ok else "FAIL", shown(cu), " ".join(a.defines),
                    ",".join("%s=%d" % kv for kv in shape.items()), r.get("status"), worst,
                    "" if ok else " — " + str(r.get("message", ""))[:600]))
                sys.stdout.flush()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
