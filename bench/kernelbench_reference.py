#!/usr/bin/env python3
"""Figures of a reference-as-candidate bench (`kpilot bench KB --eval-reference ... --json`) over a
real KernelBench checkout: per level, the problems that passed, how many speedup CIs hold 1, the
spread of |speedup - 1|, the seconds per problem and where they went; the problems that did not
pass, with their verdicts; and, given KernelBench's published eager table
(results/timing/<GPU>/baseline_time_torch.json), the ratio of kpilot's eager times to it.

  python3 bench/kernelbench_reference.py BENCH.json [--published TABLE.json] [--outliers 0.1]
"""

import argparse
import json
import statistics
import sys
from collections import defaultdict


def quantile(xs, q):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def level_of(p):
    """"level1" for a problem of level 1, as KernelBench's folders and published tables name it."""
    level = str(p.get("level") or p["id"].split("/")[0])
    return level if level.startswith("level") else "level" + level


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bench", help="the JSON that kpilot bench --json printed")
    ap.add_argument("--published", help="KernelBench's baseline_time_torch.json of the same GPU model")
    ap.add_argument("--outliers", type=float, default=0.1, help="list eager ratios further than this from 1")
    a = ap.parse_args()
    with open(a.bench) as f:
        bench = json.load(f)
    problems = bench.get("problems") or []
    if not problems:
        sys.exit("%s: no problems in this bench report (was it written by kpilot bench --json?)" % a.bench)

    by_level = defaultdict(list)
    for p in problems:
        by_level[level_of(p)].append(p)
    print("| level | problems | passed | CI holds 1 | median abs(s-1) | p90 | max (problem) | wall s each | compile s"
          " | lock wait s | checks s | timing s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    failed = []
    for level in sorted(by_level):
        ps = by_level[level]
        passed = [p for p in ps if p.get("correct")]
        failed += [p for p in ps if not p.get("correct")]
        dev, holds = [], 0
        worst = (0.0, "")
        for p in passed:
            for w in p.get("workloads") or []:
                s = w.get("speedup") or 0
                if s <= 0:
                    continue
                d = abs(s - 1)
                dev.append(d)
                worst = max(worst, (d, p["id"].split("/")[-1]))
                lo, hi = (w.get("ci") or [0, 0])[:2]
                holds += lo <= 1 <= hi
        sec = [p.get("seconds") or {} for p in ps]
        n = max(1, len(ps))
        print("| %s | %d | %d | %d of %d | %.1f%% | %.1f%% | %.1f%% (%s) | %.1f | %.1f | %.1f | %.1f | %.1f |" % (
            level, len(ps), len(passed), holds, len(dev), 100 * quantile(dev, 0.5), 100 * quantile(dev, 0.9),
            100 * worst[0], worst[1], sum(p.get("wall_s") or 0 for p in ps) / n,
            *(sum(s.get(k, 0) for s in sec) / n for k in ("compile", "lock_wait", "checks", "timing"))))
    # The bench's own wall time (its slices', summed) and where its torch.compile times came from.
    slices = bench.get("slices") or []
    if slices:
        print("\nWall time %.0f s (%.1f min): %s." % (bench.get("wall_s", 0), bench.get("wall_s", 0) / 60, ", ".join(
            "slice %d, %d problems in %.0f s" % (w["slice"], w["problems"], w["wall_s"]) for w in slices)))
    total = bench.get("total") or {}
    measured = (total.get("compile") or {}).get("measured", 0)
    if measured:
        print("torch.compile times: %d of %d read from the baseline cache." % (total.get("compile_cached", 0), measured))
    if failed:
        print("\nNot passed:")
        for p in failed:
            why = p.get("error") or p.get("verdict")
            print("- %s: %s" % (p["id"], " ".join(str(why).split())[:300]))
    flawed = [p for p in problems if p.get("reference_flaws")]
    if flawed:
        print("\nReferences that cannot tell right from wrong:")
        for p in flawed:
            for f in p["reference_flaws"]:
                print("- %s: %s (%s)" % (p["id"], f["flaw"], f["evidence"][:200]))

    if not a.published:
        return
    with open(a.published) as f:
        table = json.load(f)
    ratios = defaultdict(list)
    rows = []
    for p in problems:
        level, stem = level_of(p), p["id"].split("/")[-1]
        pub = (table.get(level) or {}).get(stem + ".py")
        ws = p.get("workloads") or []
        if not pub or not ws or not ws[0].get("eager_ms"):
            continue
        r = ws[0]["eager_ms"] / pub["mean"]
        ratios[level].append(r)
        rows.append((abs(r - 1), p["id"], ws[0]["eager_ms"], pub["mean"], r))
    print("\nEager times against %s (%s):" % (a.published, next(iter(next(iter(table.values())).values()))
                                                            .get("hardware", "?")))
    print("| level | problems | median ratio | within 5% | within 10% |")
    print("|---|---:|---:|---:|---:|")
    for level in sorted(ratios):
        rs = ratios[level]
        print("| %s | %d | %.3f | %d | %d |" % (level, len(rs), statistics.median(rs),
                                                sum(abs(r - 1) <= 0.05 for r in rs), sum(abs(r - 1) <= 0.1 for r in rs)))
    allr = [r for rs in ratios.values() for r in rs]
    if allr:
        print("| all | %d | %.3f | %d | %d |" % (len(allr), statistics.median(allr),
                                                sum(abs(r - 1) <= 0.05 for r in allr), sum(abs(r - 1) <= 0.1 for r in allr)))
    out = sorted((x for x in rows if x[0] > a.outliers), reverse=True)
    if out:
        print("\nFurther than %g from 1:\n| problem | kpilot ms | published ms | ratio |\n|---|---:|---:|---:|" % a.outliers)
        for _, pid, mine, pub, r in out:
            print("| %s | %.3f | %.3f | %.3f |" % (pid, mine, pub, r))


if __name__ == "__main__":
    main()
