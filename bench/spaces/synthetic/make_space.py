#!/usr/bin/env python3
"""Writes a synthetic space file (the format of `kpilot sweep`, docs/sweep.md) for the shell task
bench/spaces/synthetic/task, so that replays (kpilot optimize --space, bench/search_efficiency.py)
can be developed and policy constants checked without a GPU, and never on the real GEMM space.

The landscape is a made-up but GEMM-shaped cost model over the task's params (BM, BN, BK, TM, TN,
VEC), with per-seed random weights:
  - a larger per-thread register tile (TM x TN) raises arithmetic intensity until it spills
    (TM*TN = 64 spills for most seeds), a larger block tile (BM x BN) raises reuse;
  - the grid has wave quantization over a fixed 132-SM device, and occupancy follows from
    threads and shared memory (2 stages of (BM + BN) x BK floats);
  - a larger k slice (BK) means fewer barriers but more shared memory: over 48 KiB per block the
    launch fails (runtime_error);
  - VEC above TN is clamped by the kernel to TN, so such configs compile to the same binary as
    VEC = TN (same object_sha: the optimizer's duplicate rule fires);
  - a seeded rugged term (sigma `--rugged`), about 1% scattered compile errors and 2% incorrect
    configs.
Every passed config gets `--samples` (default 30..60) timing pairs: candidate and baseline
samples share a per-pair drift factor (what pairing cancels), each has its own lognormal noise
(1..3%) and rare outliers (x1.3..1.8). Everything is deterministic for --seed.

  python3 bench/spaces/synthetic/make_space.py --seed 1 --out /tmp/space-s1.json
"""
import argparse
import hashlib
import itertools
import json
import math
import os
import random
import sys
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
TASK_DIR = os.path.join(HERE, "task")
M = N = K = 2048
SMS = 132


def load_task(task_dir):
    with open(os.path.join(task_dir, "task.toml"), "rb") as f:
        return tomllib.load(f)


def enumerate_space(task):
    """The task's valid configs, last-declared param fastest (as kpilot's EnumerateSpace)."""
    names = list(task["params"].keys())
    values = [task["params"][n] for n in names]
    out = []
    for combo in itertools.product(*values):
        env = dict(zip(names, combo))
        # The constraints are muparser expressions; these use only + - * / and comparisons,
        # which Python evaluates the same way (float division).
        if all(eval(c, {"__builtins__": {}}, dict(env)) for c in task.get("constraints", [])):
            out.append(env)
    return out


def unit_hash(seed, key, salt):
    h = hashlib.sha256(f"{seed}/{salt}/{key}".encode()).digest()
    return int.from_bytes(h[:8], "little") / 2.0**64


def model(p, w, seed):
    """(status, message, log time in ms) of config p under weights w."""
    bm, bn, bk, tm, tn, vec = p["BM"], p["BN"], p["BK"], p["TM"], p["TN"], p["VEC"]
    vec_eff = min(vec, tn)
    key = f"{bm},{bn},{bk},{tm},{tn},{vec_eff}"  # the binary: VEC beyond TN is clamped
    threads = (bm // tm) * (bn // tn)
    smem = 2 * (bm + bn) * bk * 4
    if unit_hash(seed, key, "compile") < w["p_compile_error"]:
        return "compile_error", f"tiled.cu:{40 + int(unit_hash(seed, key, 'line') * 80)}: error: (synthetic)", 0.0
    if smem > 48 * 1024:
        return "runtime_error", f"cudaErrorInvalidValue: {smem} bytes of dynamic shared memory exceed the default 49152", 0.0
    if unit_hash(seed, key, "incorrect") < w["p_incorrect"]:
        return "incorrect", "output c differs from the reference at 37 elements (synthetic)", 0.0
    # Throughput terms, in log time (lower is faster).
    lt = math.log(w["t0_ms"])
    lt -= w["reuse"] * math.log(bm * bn / (bm + bn))                    # block-tile reuse
    lt -= w["ilp"] * math.log(tm * tn)                                  # register-tile intensity
    if tm * tn >= w["spill_at"]:
        lt += w["spill"]                                                # register spills
    lt -= w["vec"] * math.log(vec_eff)
    lt -= w["bk"] * math.log(bk) - w["bk_curv"] * math.log(bk) ** 2    # fewer barriers, diminishing
    per_sm = max(1, min(32, 2048 // threads, (228 * 1024) // max(smem, 1)))
    resident_threads = per_sm * threads
    if resident_threads < 512:
        lt += w["latency"] * math.log(512 / resident_threads)          # too few warps to hide latency
    blocks = math.ceil(M / bm) * math.ceil(N / bn)
    waves = blocks / (SMS * per_sm)
    lt += math.log(math.ceil(waves) / waves)                            # wave quantization (tail)
    if tm != tn:
        lt += w["aspect"] * abs(math.log2(tm / tn))                     # lopsided thread tiles
    lt += w["rugged"] * (2 * unit_hash(seed, key, "rugged") - 1) * math.sqrt(3)
    return "passed", "", lt


def weights(seed, rugged):
    r = random.Random(seed * 7919 + 17)
    return {
        "t0_ms": 40.0,
        "reuse": r.uniform(0.4, 0.8),
        "ilp": r.uniform(0.25, 0.45),
        "spill_at": r.choice([32, 64, 64]),
        "spill": r.uniform(0.4, 0.9),
        "vec": r.uniform(0.05, 0.15),
        "bk": r.uniform(0.3, 0.6),
        "bk_curv": r.uniform(0.05, 0.12),
        "latency": r.uniform(0.3, 0.6),
        "aspect": r.uniform(0.02, 0.1),
        "rugged": rugged,
        "p_compile_error": 0.01,
        "p_incorrect": 0.02,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True)
    ap.add_argument("--task", default=TASK_DIR)
    ap.add_argument("--rugged", type=float, default=0.06, help="sigma of the rugged term, in log time")
    ap.add_argument("--samples", default="30,60", help="timing pairs per passed config: MIN,MAX")
    a = ap.parse_args()
    task = load_task(a.task)
    w = weights(a.seed, a.rugged)
    lo, hi = (int(x) for x in a.samples.split(","))
    rng = random.Random(a.seed)
    space = enumerate_space(task)
    # The naive reference: a little slower than the naive end of the space (the first values).
    baseline_ms = 1.2 * math.exp(model(space[0], dict(w, p_compile_error=0, p_incorrect=0), a.seed)[2])
    configs = []
    for p in space:
        status, message, lt = model(p, w, a.seed)
        vec_eff = min(p["VEC"], p["TN"])
        binary = dict(p, VEC=vec_eff)
        entry = {"params": {k: str(v) for k, v in p.items()}, "status": status, "message": message,
                 "compile_s": round(rng.uniform(1.5, 4.0), 3)}
        if status != "compile_error":
            entry["object_sha"] = hashlib.sha256(json.dumps(binary, sort_keys=True).encode()).hexdigest()
        if status == "passed":
            t = math.exp(lt)
            n = rng.randint(lo, hi)
            sigma = rng.uniform(0.01, 0.03)
            cand, base = [], []
            for _ in range(n):
                drift = math.exp(rng.gauss(0, 0.02))
                c = t * drift * math.exp(rng.gauss(0, sigma))
                b = baseline_ms * drift * math.exp(rng.gauss(0, 0.01))
                if rng.random() < 0.01:
                    c *= rng.uniform(1.3, 1.8)
                cand.append(round(c, 6))
                base.append(round(b, 6))
            cm, bm = sorted(cand), sorted(base)
            med = lambda s: (s[(len(s) - 1) // 2] + s[len(s) // 2]) / 2
            entry.update({"candidate_ms": cand, "baseline_ms": base, "median_ms": med(cm),
                          "baseline_median_ms": med(bm), "speedup": med(bm) / med(cm), "model_ms": t})
        configs.append(entry)
    out = {"version": 1, "task": task["name"], "task_dir": os.path.abspath(a.task),
             "candidate": os.path.join(os.path.abspath(a.task), "candidates", "tiled.cpp"),
             "workload": task["workloads"][0]["name"], "baseline": "reference",
             "gpu": {"name": "synthetic", "seed": a.seed, "weights": w}, "created": "synthetic", "configs": configs}
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(out, f)
    passed = [c for c in configs if c["status"] == "passed"]
    best = max(passed, key=lambda c: c["speedup"])
    counts = {}
    for c in configs:
        counts[c["status"]] = counts.get(c["status"], 0) + 1
    shas = [c.get("object_sha") for c in configs if c.get("object_sha")]
    print(f"{a.out}: {len(configs)} configs {counts}, {len(shas) - len(set(shas))} share a binary; "
          f"best {best['speedup']:.2f}x at {best['params']}", file=sys.stderr)


if __name__ == "__main__":
    main()
