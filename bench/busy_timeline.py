#!/usr/bin/env python3
"""Where an optimize run's wall time went, from the progress events bench/optimize_figures.py
saves with their arrival times ("t_s", seconds from the process start).

  bench/busy_timeline.py OUT/events_vector_add_fpon.jsonl OUT/events_vector_add_fpoff.jsonl

Per file: seconds to the "start" event (task load, calibration), from there to the first
"evaluated" (the baseline and the first compiles), the search (first evaluation to "stop"), and
the finish (stop to the process's exit; split, for runs whose progress carries the "final" event
(session 19 on), into the final re-evaluation and what followed it); then the gaps between
consecutive evaluations, longest first, with the events that fell inside each. A long gap with no
counter profile or promotion in it is time the loop spent proposing or compiling.
Standard library only.
"""
import json
import os
import sys


def load(path):
    events = []
    for line in open(path):
        try:
            e = json.loads(line)
        except json.JSONDecodeError:
            continue
        if "t_s" in e:
            events.append(e)
    return events


def summarize(path):
    ev = load(path)
    name = os.path.basename(path)
    if not ev:
        return f"{name}: no timed events (run bench/optimize_figures.py of session 18 or later)"
    t = lambda kind: next((e["t_s"] for e in ev if e.get("event") == kind), None)
    start, stop, final, end = t("start"), t("stop"), t("final"), ev[-1]["t_s"]
    evals = [e for e in ev if e.get("event") == "evaluated"]
    first = evals[0]["t_s"] if evals else None
    lines = [f"{name}: {len(evals)} evaluations, {'exit' if ev[-1].get('event') == 'process_exit' else 'last event'} at {end:.1f} s"]
    if start is not None and first is not None and stop is not None:
        lines.append(f"  to start {start:.1f} s | start to first evaluation {first - start:.1f} s | "
                     f"search {stop - first:.1f} s ({(stop - first) / max(1, len(evals) - 1):.2f} s per evaluation) | "
                     f"finish {end - stop:.1f} s" +
                     (f" (final re-evaluation {final - stop:.1f} s, then {end - final:.1f} s to exit)"
                      if final is not None else ""))
    compiled_first = sum(1 for e in evals if "compiled first" in e.get("summary", ""))
    lines.append(f"  drafts compiled first (footprints): {compiled_first}; "
                 f"pipeline events: {[(e.get('depth'), round(e['t_s'], 1)) for e in ev if e.get('event') == 'pipeline']}")
    gaps = []
    for a, b in zip(evals, evals[1:]):
        inside = [e.get("event") for e in ev if a["t_s"] < e["t_s"] <= b["t_s"] and e is not b]
        gaps.append((b["t_s"] - a["t_s"], a.get("evaluations"), b.get("evaluations"), inside))
    gaps.sort(reverse=True)
    for g, i, j, inside in gaps[:6]:
        lines.append(f"  gap {g:5.2f} s between evaluations {i} and {j}" + (f" (with {', '.join(inside)})" if inside else ""))
    return "\n".join(lines)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for p in sys.argv[1:]:
        print(summarize(p))


if __name__ == "__main__":
    main()
