#!/usr/bin/env python3
"""Timing agreement with ncu: kpilot's median against ncu's gpu__time_duration.sum for the same kernel.

    bench/ncu_agreement.py TASK CANDIDATE WORKLOAD KERNEL_REGEX [--kpilot build/bin/kpilot]

1. `kpilot eval --json --workload W`: kpilot's median for the candidate.
2. `ncu --clock-control none --target-processes all -k regex:KERNEL --metrics gpu__time_duration.sum
   --csv --page raw kpilot eval … --no-time --no-sandbox --no-store`: the correctness calls only.
   References often reuse the kernel's name, so the matches alternate reference, candidate per seed;
   the candidate's are the 2nd, 4th, … (ncu flushes caches before each kernel, like kpilot's timing).
"""
import argparse, csv, io, json, os, re, statistics, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UNITS = {"nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0, "second": 1e3, "ns": 1e-6, "us": 1e-3, "ms": 1.0}


def parse_ncu_csv(text):
    """Rows of ncu's raw CSV (program output may be mixed in): [(kernel name, duration ms)]."""
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith('"ID"'))
    rows = list(csv.reader(io.StringIO("\n".join(l for l in lines[start:] if l.startswith('"')))))
    header, units = rows[0], rows[1]
    col = header.index("gpu__time_duration.sum")
    name_col = header.index("Kernel Name")
    out = []
    for r in rows[2:]:
        if len(r) <= col:
            continue
        v = float(r[col].replace(",", ""))
        out.append((r[name_col], v * UNITS.get(units[col], 1.0)))
    return out


ap = argparse.ArgumentParser()
ap.add_argument("task"); ap.add_argument("candidate"); ap.add_argument("workload"); ap.add_argument("kernel")
ap.add_argument("--kpilot", default=os.path.join(ROOT, "build/bin/kpilot"))
a = ap.parse_args()
with tempfile.TemporaryDirectory(prefix="kpilot-ncu-") as store:
    p = subprocess.run([a.kpilot, "eval", a.task, a.candidate, "--json", "--workload", a.workload, "--store", store],
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(p.stderr + p.stdout)
    ours = json.loads(p.stdout)["timings"][0]["candidate"]["median_ms"]
    env = dict(os.environ, KPILOT_NO_CUPTI="1")
    p = subprocess.run(["ncu", "--clock-control", "none", "--target-processes", "all", "-k", "regex:" + a.kernel,
                        "--metrics", "gpu__time_duration.sum", "--csv", "--page", "raw",
                        a.kpilot, "eval", a.task, a.candidate, "--no-time", "--no-sandbox", "--workload", a.workload,
                        "--store", store], capture_output=True, text=True, env=env)
    rows = parse_ncu_csv(p.stdout)
cand = [ms for i, (_, ms) in enumerate(rows) if i % 2 == 1]
theirs = statistics.median(cand)
print(f"agreement: {os.path.relpath(a.candidate, ROOT)} workload {a.workload}")
print(f"  kpilot median {ours*1e3:.2f} µs; ncu gpu__time_duration.sum median {theirs*1e3:.2f} µs over {len(cand)} "
      f"calls ({len(rows)} matches); kpilot/ncu − 1 = {(ours/theirs-1)*100:+.2f}%")
