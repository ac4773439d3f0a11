#!/usr/bin/env python3
"""Wall time of `kpilot eval`, split into compile, run and total, cold and warm compile cache.

    bench/eval_wall.py [--task examples/host/saxpy] [--candidate …/omp_simd.cpp] [--repeats 5]
                       [--kpilot build/bin/kpilot] [-- extra eval args]

Cold: a fresh store (so an empty compile cache) for every repeat. Warm: the same store again.
Prints a table of medians (and min–max) over the repeats; --json prints the raw numbers.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_eval(kpilot, task, candidate, store, extra):
    t0 = time.monotonic()
    p = subprocess.run([kpilot, "eval", task, candidate, "--json", "--store", store] + extra,
                       capture_output=True, text=True)
    wall = time.monotonic() - t0
    if p.returncode not in (0, 1):
        sys.exit(f"kpilot eval failed ({p.returncode}): {p.stderr}")
    j = json.loads(p.stdout)
    return {"compile": j["wall_s"]["compile"], "run": j["wall_s"]["run"], "total": j["wall_s"]["total"],
            "process": wall, "verdict": j["verdict"]["kind"], "cache_hit": j["compile"]["cache_hit"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", default=os.path.join(ROOT, "examples/host/saxpy"))
    ap.add_argument("--candidate", default=os.path.join(ROOT, "examples/host/saxpy/candidates/omp_simd.cpp"))
    ap.add_argument("--kpilot", default=os.path.join(ROOT, "build/bin/kpilot"))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("extra", nargs="*")
    a = ap.parse_args()
    rows = {"cold": [], "warm": []}
    for _ in range(a.repeats):
        with tempfile.TemporaryDirectory(prefix="kpilot-bench-") as store:
            rows["cold"].append(run_eval(a.kpilot, a.task, a.candidate, store, a.extra))
            rows["warm"].append(run_eval(a.kpilot, a.task, a.candidate, store, a.extra))
    if a.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"kpilot eval {os.path.relpath(a.task, ROOT)} {os.path.relpath(a.candidate, ROOT)} {' '.join(a.extra)}")
    print(f"{a.repeats} repeats; seconds, median [min–max]")
    print(f"{'cache':<6} {'compile':>20} {'run':>20} {'total (kpilot)':>20} {'process wall':>20}  verdicts")
    for name, rs in rows.items():
        cells = []
        for key in ("compile", "run", "total", "process"):
            v = [r[key] for r in rs]
            cells.append(f"{statistics.median(v):7.2f} [{min(v):.2f}–{max(v):.2f}]")
        verdicts = ",".join(sorted({r['verdict'] for r in rs}))
        hits = sum(r["cache_hit"] for r in rs)
        print(f"{name:<6} {cells[0]:>20} {cells[1]:>20} {cells[2]:>20} {cells[3]:>20}  {verdicts} (cache hits {hits}/{len(rs)})")


if __name__ == "__main__":
    main()
