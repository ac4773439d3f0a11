#!/usr/bin/env python3
"""kpilot report's cost: generation time and file size of the pages of runs of several sizes, and
the time Chromium takes to open each (load, parse, run the page's script, draw the first view).

The runs are replays of a measured space (`kpilot optimize TASK --space SPACE --budget N`: real
H200 measurements, no compiling or timing here), one per size:

  python3 bench/report_figures.py --kpilot build/bin/kpilot --sizes 20,100,500 \\
      --task bench/spaces/tuning/conv2d --space bench/spaces/real/conv2d_space.json.gz

Open time: the page's script stamps how long it took to draw (data-render-ms on <body>); the
total is Chromium's whole headless run with --dump-dom (start-up included), beside the same for an
empty page. Standard library only; needs Debian's chromium.
"""
import argparse
import gzip
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def chromium_open(chromium, page, runs):
    """(median seconds of a headless --dump-dom, median data-render-ms of the page's script)."""
    walls, renders = [], []
    for _ in range(runs):
        profile = tempfile.mkdtemp(prefix="kpilot-chromium-")
        t0 = time.monotonic()
        r = subprocess.run([chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                            "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--virtual-time-budget=5000",
                            "--dump-dom", "file://" + os.path.abspath(page) + "#view=tree"],
                           capture_output=True, text=True, timeout=120)
        walls.append(time.monotonic() - t0)
        shutil.rmtree(profile, ignore_errors=True)
        m = re.search(r'data-render-ms="([0-9.]+)"', r.stdout)
        if m:
            renders.append(float(m.group(1)))
    return statistics.median(walls), (statistics.median(renders) if renders else None)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kpilot", default="build/bin/kpilot")
    ap.add_argument("--task", default="bench/spaces/tuning/conv2d")
    ap.add_argument("--space", default="bench/spaces/real/conv2d_space.json.gz")
    ap.add_argument("--sizes", default="20,100,500")
    ap.add_argument("--runs", type=int, default=3, help="Chromium opens per page (median)")
    ap.add_argument("--chromium", default=shutil.which("chromium") or "")
    ap.add_argument("--json", help="also write the figures here")
    a = ap.parse_args()
    if not a.chromium:
        sys.exit("chromium not found: apt-get install chromium")
    work = tempfile.mkdtemp(prefix="kpilot-report-figures-")
    space = os.path.join(work, "space.json")
    with (gzip.open(a.space, "rt") if a.space.endswith(".gz") else open(a.space)) as f, open(space, "w") as g:
        g.write(f.read())
    empty = os.path.join(work, "empty.html")
    with open(empty, "w") as f:
        f.write("<!doctype html><title>empty</title>")
    base_wall, _ = chromium_open(a.chromium, empty, a.runs)
    rows = []
    for n in [int(s) for s in a.sizes.split(",")]:
        store = os.path.join(work, f"store{n}")
        subprocess.run([a.kpilot, "optimize", a.task, "--space", space, "--budget", str(n), "--store", store],
                       check=True, capture_output=True)
        times = []
        for _ in range(a.runs):
            t0 = time.monotonic()
            r = subprocess.run([a.kpilot, "report", "1", "--store", store, "--out", os.path.join(work, f"out{n}"),
                                "--json"], check=True, capture_output=True, text=True)
            times.append(time.monotonic() - t0)
        w = json.loads(r.stdout)
        wall, render = chromium_open(a.chromium, w["page"], a.runs)
        rows.append({"nodes": w["nodes"], "generate_s": statistics.median(times), "bytes": w["bytes"],
                     "chromium_s": wall, "chromium_empty_page_s": base_wall, "render_ms": render})
    print("| nodes | kpilot report (s) | page size | Chromium headless open (s) | of which the page's script drew the tree (ms) |")
    print("|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['nodes']} | {r['generate_s']:.3f} | {r['bytes'] / 1024:.0f} kB | {r['chromium_s']:.2f} "
              f"(empty page {r['chromium_empty_page_s']:.2f}) | {r['render_ms'] if r['render_ms'] is not None else '—'} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
