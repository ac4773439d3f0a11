#!/usr/bin/env python3
"""Best passing speedup an optimize run had reached at given wall-clock times, from its
`--json` event streams (the `evaluated` events' `t_s` and `speedup`). Groups runs by the tag in
their file name (events_TASK_TAG.jsonl, e.g. _d3_s2 -> d3) and prints, per task and group, the
mean best at each time and the evaluations done by then. Used for the pipeline-depth comparison
at a wall-clock budget (gpu_session.sh depthtime; docs/search.md).

  bench/best_at_time.py --at 5 10 15 20 --group-re '_(d\\d+)_s\\d+' DIR/events_*.jsonl
"""
import argparse, collections, json, os, re, statistics, sys


def read_run(path):
    points = []  # (t_s, speedup or None)
    for line in open(path):
        try:
            e = json.loads(line)
        except json.JSONDecodeError:
            continue
        if e.get("event") != "evaluated" or "t_s" not in e:
            continue
        s = e.get("speedup") if e.get("verdict") == "passed" else None
        points.append((float(e["t_s"]), s))
    return sorted(points, key=lambda p: p[0])


def at(points, t):
    best, n = 0.0, 0
    for ts, s in points:
        if ts > t:
            break
        n += 1
        if s is not None:
            best = max(best, s)
    return best, n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("events", nargs="+")
    ap.add_argument("--at", type=float, nargs="+", default=[5, 10, 15, 20], help="wall-clock seconds")
    ap.add_argument("--group-re", default=r"_(d\d+)_s\d+", help="regex whose group 1 names a run's group")
    a = ap.parse_args()
    groups = collections.defaultdict(list)  # (task, group) -> [points]
    for path in a.events:
        base = os.path.basename(path)
        m = re.search(a.group_re, base)
        if not m:
            print(f"{path}: no group in its name (--group-re {a.group_re})", file=sys.stderr)
            return 2
        task = base[len("events_"):m.start()] if base.startswith("events_") else base[:m.start()]
        groups[(task, m.group(1))].append(read_run(path))
    head = "task           group  runs  " + "  ".join(f"best@{t:g}s (evals)" for t in a.at)
    print(head)
    for (task, g), runs in sorted(groups.items()):
        cells = []
        for t in a.at:
            vals = [at(r, t) for r in runs]
            cells.append(f"{statistics.mean(v[0] for v in vals):8.2f}x ({statistics.mean(v[1] for v in vals):4.1f})")
        print(f"{task:14s} {g:6s} {len(runs):4d}  " + "  ".join(f"{c:>18s}" for c in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
