#!/usr/bin/env python3
"""Timing stability: one candidate evaluated N times in separate `kpilot eval` runs; spread of the medians.

    bench/stability.py TASK CANDIDATE [--runs 10] [--kpilot build/bin/kpilot] [-- extra eval args]

Prints, per workload, the N medians and the spread max/min − 1 (goal ≤ 2% for kernels ≥ 20 µs).
"""
import argparse, json, os, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

ap = argparse.ArgumentParser()
ap.add_argument("task"); ap.add_argument("candidate")
ap.add_argument("--runs", type=int, default=10)
ap.add_argument("--kpilot", default=os.path.join(ROOT, "build/bin/kpilot"))
ap.add_argument("extra", nargs=argparse.REMAINDER)
a = ap.parse_args()
if a.extra[:1] == ["--"]:
    a.extra = a.extra[1:]
medians = {}
with tempfile.TemporaryDirectory(prefix="kpilot-stability-") as store:
    for i in range(a.runs):
        p = subprocess.run([a.kpilot, "eval", a.task, a.candidate, "--json", "--store", store] + a.extra,
                           capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"run {i}: exit {p.returncode}: {p.stderr[-2000:]} {p.stdout[-2000:]}")
        for t in json.loads(p.stdout)["timings"]:
            medians.setdefault(t["workload"], []).append(t["candidate"]["median_ms"])
print(f"stability: {os.path.relpath(a.candidate, ROOT)}, {a.runs} separate runs")
for w, m in medians.items():
    spread = max(m) / min(m) - 1
    print(f"  {w:<14} median of medians {sorted(m)[len(m)//2]*1e3:10.2f} µs  min {min(m)*1e3:.2f}  max {max(m)*1e3:.2f}"
          f"  spread {spread*100:.2f}%")
