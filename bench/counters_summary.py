#!/usr/bin/env python3
"""One line per counter profile of a `kpilot optimize --json` run, then the run's totals.

usage: counters_summary.py RESULT.json EVENTS   (EVENTS: the run's stderr, one JSON event per line)
"""
import json
import sys


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        res = json.load(open(sys.argv[1]))
    except (OSError, ValueError) as e:
        print(f"{sys.argv[1]}: no result ({e})")
        return 1
    events = []
    for line in open(sys.argv[2], errors="replace"):
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if isinstance(e, dict):
            events.append(e)
    for e in events:
        if e.get("event") != "counters":
            continue
        if "error" in e:
            print(f"  node {e.get('node')}: no profile: {e['error'][:200]}")
            continue
        ids = ", ".join(f.get("id", "") for f in e.get("findings", []))
        print(f"  node {e.get('node')}: {e.get('profiler')} {e.get('wall_s', 0):.2f} s, "
              f"{e.get('stage1')} -> {e.get('bottleneck')}; findings: {ids or 'none'}")
    drafts = [e for e in events if e.get("event") == "evaluated"]
    # Drafts whose summaries name a finding of a counter profile that was never an evaluated
    # node's top (static) finding. A rough filter: a static finding that was never on top (e.g.
    # scalar-global-loads) passes it too, so read the summaries.
    counter_ids = {f.get("id") for e in events if e.get("event") == "counters" for f in e.get("findings", [])}
    static_ids = {d.get("finding") for d in drafts}
    for d in drafts:
        named = [i for i in counter_ids - static_ids if i and i in d.get("summary", "")]
        if named:
            print(f"  node {d.get('node')} <- {d.get('parent')}: {d.get('summary', '')[:160]}  "
                  f"-> {d.get('speedup', 0):.3f}x")
    print(f"  evaluations {res.get('evaluations')}, counter profiles {res.get('counter_profiles')} "
          f"({res.get('counters_s', 0):.2f} s), busy share {res.get('busy_share', 0):.3f}, "
          f"final {res['final'].get('speedup_geomean', 0):.3f}x, best {res.get('best_params')}, "
          f"top findings of evaluated nodes: {sorted({d.get('finding') for d in drafts if d.get('finding')})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
