#!/usr/bin/env python3
"""Where an optimize run's wall time went, from the progress events bench/optimize_figures.py
saves with their arrival times ("t_s", seconds from the process start).

  bench/busy_timeline.py OUT/events_vector_add_fpon.jsonl OUT/events_vector_add_fpoff.jsonl

Per file: seconds to the "start" event (task load, calibration), from there to the first
"evaluated" (the baseline and the first compiles), the search (first evaluation to "stop"), and
the finish (stop to the process's exit; split, for runs whose progress carries the "final" event,
into the final re-evaluation and what followed it); then the gaps between
consecutive evaluations, longest first, with the events that fell inside each. A long gap with no
counter profile or promotion in it is time the loop spent proposing or compiling.

Events that carry their job's executor times ("times": when it was submitted, compiled and held
the GPU, on the executor's clock) also give, for each run, every stretch during which the
GPU held no job is listed and split into causes, from the job that ended it:
  startup  before the first job reached the GPU (the start candidate's compile);
  loop     until that job was submitted: the loop was selecting, proposing or waiting;
  compile  from then until its compile ended;
  queue    the rest: it was compiled and still did not start (the queue's hand-over).
The shares are of the executor's elapsed time up to the stop event, as the run's busy_share is.
Where the times carry "sass_end_s", it also says how long results waited for the SASS extracted
beside their evaluation: the loop sees a result only then.
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
        return f"{name}: no timed events (bench/optimize_figures.py stamps each event's arrival time)"
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
    # A draft whose compile stage took under 0.2 s was served by the compile cache: compiled
    # ahead by a footprint probe or an anticipated (speculative) compile.
    timed = [e["times"] for e in evals[1:] if "compile_start_s" in e.get("times", {})]
    hits = sum(1 for x in timed if x["compile_end_s"] - x["compile_start_s"] < 0.2)
    lines.append(f"  drafts compiled first (footprints): {compiled_first}; drafts served by the compile cache: "
                 f"{hits} of {len(timed)}; "
                 f"pipeline events: {[(e.get('depth'), round(e['t_s'], 1)) for e in ev if e.get('event') == 'pipeline']}")
    # A draft's SASS may be extracted beside its evaluation, and its result reaches the
    # loop when both have ended ("sass_end_s"); what the SASS added after the evaluation's end.
    held = [max(0.0, x["sass_end_s"] - x["eval_end_s"]) for x in (e.get("times", {}) for e in ev)
            if "sass_end_s" in x and "eval_end_s" in x]
    if held:
        late = [h for h in held if h > 0.005]
        lines.append(f"  results held for their SASS after the evaluation ended: {len(late)} of {len(held)}, "
                     f"{sum(late):.1f} s in all, longest {max(held):.2f} s")
    gaps = []
    for a, b in zip(evals, evals[1:]):
        inside = [e.get("event") for e in ev if a["t_s"] < e["t_s"] <= b["t_s"] and e is not b]
        gaps.append((b["t_s"] - a["t_s"], a.get("evaluations"), b.get("evaluations"), inside))
    gaps.sort(reverse=True)
    for g, i, j, inside in gaps[:6]:
        lines.append(f"  gap {g:5.2f} s between evaluations {i} and {j}" + (f" (with {', '.join(inside)})" if inside else ""))
    lines += idle_report(ev)
    return "\n".join(lines)


def jobs_of(ev):
    """(label, times) of every job the events carry executor times for."""
    out = []
    for e in ev:
        t = e.get("times") or {}
        if "submitted_s" not in t:
            continue
        kind = e.get("event")
        label = {"evaluated": f"evaluation {e.get('evaluations')}", "duplicate": "duplicate",
                 "promote": f"gate of node {e.get('node')}", "reject": f"gate of node {e.get('node')}",
                 "counters": f"counters of node {e.get('node')}", "final": "final re-evaluation"}.get(kind, kind)
        out.append((label, t))
    return out


def idle_report(ev):
    jobs = [(label, t) for label, t in jobs_of(ev) if t.get("eval_end_s", 0) > 0]
    if not jobs:
        return []
    stop = next((e for e in ev if e.get("event") == "stop"), None)
    # The executor's clock at the stop: from the offset between arrival and executor times.
    offsets = [e["t_s"] - e["times"]["now_s"] for e in ev if "now_s" in (e.get("times") or {})]
    offset = sorted(offsets)[len(offsets) // 2]
    end = (stop["t_s"] - offset) if stop else max(t["eval_end_s"] for _, t in jobs)
    jobs.sort(key=lambda j: j[1]["eval_start_s"])
    busy = 0.0
    causes = {"startup": 0.0, "compile": 0.0, "loop": 0.0, "queue": 0.0}
    stretches = []
    free_from = 0.0  # the GPU is free from here (the executor's start, then each job's end)
    for label, t in jobs:
        s, f = t["eval_start_s"], t["eval_end_s"]
        if s >= end:
            break
        if s > free_from + 0.05:
            # Split the stretch: until the job was submitted (the loop), until its compile ended
            # (compile), the rest (queue); before the first job, all of it is start-up.
            if free_from == 0.0:
                parts = {"startup": s}
            else:
                sub = min(s, max(free_from, t["submitted_s"]))
                built = min(s, max(sub, t["compile_end_s"]))
                parts = {"loop": sub - free_from, "compile": built - sub, "queue": s - built}
            for k, v in parts.items():
                causes[k] += v
            cause = max(parts, key=parts.get)
            stretches.append((s - free_from, free_from, cause, label, t, parts))
        busy += max(0.0, min(f, end) - max(s, free_from))
        free_from = max(free_from, f)
    if end > free_from + 0.05:
        causes["loop"] += end - free_from
        stretches.append((end - free_from, free_from, "loop", "the stop", {}, {"loop": end - free_from}))
    # Of the time on the GPU, what the runner spent on checks and timing proper: from its objects
    # being loaded to its last timing (its context and process start-up excluded).
    strict = runners = 0.0
    for _, t in jobs:
        if t["eval_start_s"] >= end:
            continue
        runners += t.get("runner_s", 0.0)
        tl = t.get("runner_timeline_s") or {}
        last = tl.get("timing", tl.get("checks"))
        if last is not None and "objects" in tl:
            strict += last - tl["objects"]
    lines = [f"  executor: busy {busy:.1f} s of {end:.1f} s to the stop ({100 * busy / end:.0f}%); idle " +
             ", ".join(f"{k} {v:.1f} s ({100 * v / end:.0f}%)" for k, v in causes.items()),
             (f"  evaluation runners, start to exit: {runners:.1f} s ({100 * runners / end:.0f}%); " if runners else "  ") +
             f"their checks and timing proper: {strict:.1f} s ({100 * strict / end:.0f}%) (the rest: process "
             f"start-up, CUDA context, loading, counter profiles)"]
    # Counter jobs: each evaluates its node again on one workload, unless it took the evaluation
    # the loop had ("evaluation_reused"), then profiles it ("wall_s" of its counters event); how
    # much of the busy time went to them.
    profiles = [e for e in ev if e.get("event") == "counters" and "eval_end_s" in (e.get("times") or {})]
    if profiles:
        on_gpu = sum(e["times"]["eval_end_s"] - e["times"]["eval_start_s"] for e in profiles)
        again = sum(e["times"].get("runner_s", 0.0) for e in profiles)
        reused = sum(1 for e in profiles if e["times"].get("evaluation_reused"))
        profiling = sum(e.get("wall_s", 0.0) for e in profiles)
        lines.append(f"  counter jobs: {len(profiles)}, {on_gpu:.1f} s on the GPU ({100 * on_gpu / end:.0f}%): "
                     f"their evaluation again {again:.1f} s ({reused} took the evaluation the loop had), "
                     f"the counter profile {profiling:.1f} s")
        # The profiler runner's own steps ("profiler_info"; cumulative stamps since
        # it started): what a profile in the served runner could save (process, context, set-up).
        infos = [e.get("profiler_info") or {} for e in profiles]
        tls = [i.get("runner_timeline_s") or {} for i in infos]
        if all("end" in tl and "counters_setup" in tl and "calls" in tl for tl in tls):
            outside = sum(e.get("wall_s", 0.0) - i.get("runner_wall_s", tl["end"]) for e, i, tl in zip(profiles, infos, tls))
            context = sum(tl.get("context", 0.0) for tl in tls)
            to_setup = sum(tl["counters_setup"] - tl.get("inputs", tl.get("objects", 0.0)) for tl in tls)
            before = sum(tl.get("inputs", tl.get("objects", 0.0)) - tl.get("context", 0.0) for tl in tls)
            calls = sum(tl["calls"] - tl["counters_setup"] for tl in tls)
            rest = sum(tl["end"] - tl["calls"] for tl in tls)
            passes = [i.get("passes_run", 0) for i in infos]
            lines.append(f"    the profiles' runners: outside the runner {outside:.2f} s, context {context:.2f} s, "
                         f"lock/objects/inputs {before:.2f} s, CUPTI set-up {to_setup:.2f} s, passes {calls:.2f} s "
                         f"({'/'.join(str(p) for p in passes)} passes), decode and exit {rest:.2f} s")
    stretches.sort(key=lambda x: -x[0])
    for g, at, cause, label, t, parts in stretches[:8]:
        split = ", ".join(f"{k} {v:.2f} s" for k, v in parts.items() if v >= 0.01)
        detail = (f"; submitted {t['submitted_s']:.2f} s, compiled {t['compile_start_s']:.2f}–"
                  f"{t['compile_end_s']:.2f} s" if t else "")
        lines.append(f"  idle {g:5.2f} s from {at:6.2f} s ({split}): until {label}{detail}")
    return lines


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for p in sys.argv[1:]:
        print(summarize(p))


if __name__ == "__main__":
    main()
