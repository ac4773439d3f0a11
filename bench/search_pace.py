#!/usr/bin/env python3
"""The pace of one `kpilot optimize` run from its progress events (`--json`'s stderr, JSON lines,
gzipped or not): compile seconds per candidate (compiles the cache answered at once counted apart),
evaluations per minute of wall time, and the seconds the evaluation queue was busy (the GPU's, for a
cuda task). A compile that took under --cached-below seconds was answered by the compile cache (a
draft compiled ahead, a duplicate) and is counted apart.

  python3 bench/search_pace.py opt_gemm_tc.events.gz [--cached-below 0.5] [--json OUT]

For CuTe/CUTLASS candidates the compile is the long pole: this gives the compile time per candidate
and evaluations per minute that a search over such a family reaches. Standard library only.
"""
import argparse
import gzip
import json
import statistics


def read_events(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                try:
                    yield json.loads(line)
                except json.JSONDecodeError:
                    continue


def pace(events, cached_below):
    compiles, cached, evaluated, busy, last = [], 0, 0, 0.0, 0.0
    for e in events:
        if e.get("event") != "evaluated":
            continue
        t = e.get("times") or {}
        if "compile_start_s" not in t:
            continue
        evaluated += 1
        c = t["compile_end_s"] - t["compile_start_s"]
        if c < cached_below:
            cached += 1
        else:
            compiles.append(c)
        busy += max(0.0, t.get("eval_end_s", 0) - t.get("eval_start_s", 0))
        last = max(last, t.get("now_s", 0), t.get("eval_end_s", 0))
    out = {"evaluated": evaluated, "compiled": len(compiles), "cache_answered": cached,
           "wall_s": last, "evaluations_per_minute": 60 * evaluated / last if last else 0,
           "gpu_busy_s": busy}
    if compiles:
        s = sorted(compiles)
        out.update({"compile_median_s": statistics.median(s), "compile_p90_s": s[int(0.9 * (len(s) - 1))],
                    "compile_max_s": s[-1]})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("events")
    ap.add_argument("--cached-below", type=float, default=0.5,
                    help="a compile shorter than this (seconds) was answered by the cache")
    ap.add_argument("--json")
    a = ap.parse_args()
    p = pace(read_events(a.events), a.cached_below)
    line = (f"{p['evaluated']} evaluations in {p['wall_s']:.0f} s: {p['evaluations_per_minute']:.1f} per minute; "
            f"{p['compiled']} compiled")
    if p["compiled"]:
        line += (f", compile per candidate median {p['compile_median_s']:.1f} s, p90 {p['compile_p90_s']:.1f} s, "
                 f"max {p['compile_max_s']:.1f} s")
    line += (f"; {p['cache_answered']} under {a.cached_below:g} s (from the cache, or compiled ahead); "
             f"the evaluation queue busy {p['gpu_busy_s']:.0f} s")
    print(line)
    if a.json:
        json.dump(p, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
