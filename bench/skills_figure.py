#!/usr/bin/env python3
"""The skills figure: the parametric generator with and without skill cards, replayed over the
cuda examples' spaces measured on the H200 (bench/spaces/real) — evaluations needed to reach 95%
of each space's exhaustive best, and the fraction of it reached after 8 evaluations.

  python3 bench/skills_figure.py --kpilot build/bin/kpilot --seeds 10 --out bench/results/skills

Each (space, seed) runs `kpilot optimize TASK --space SPACE --workload W` twice: with the
built-in cards (the default: the params generator takes its finding-steered moves from the
matched cards) and with `--skills off` (no finding-steered move; exploration only). Findings in a
replay come from the stored ptxas resources, the stored SASS instruction mixes (scalar loads, fp64,
integer division) and the roofline class, the latter from the H200's calibration (--calibration,
default bench/spaces/real/h200_calibration.json; these spaces predate sweeps recording it). No
counters are replayed, so findings from ncu (warp stalls, cache hit rates) never fire here, though
they do in a live run. Uses bench/search_efficiency.py's replay and curve code.
"""
import argparse
import gzip
import json
import os
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from search_efficiency import curve_from_events, distinct_evaluations, load_space, run_all, run_kpilot  # noqa: E402

TARGET = 0.95
EARLY = 8


def first_reaching(curve, goal):
    for i, v in enumerate(curve):
        if v >= goal:
            return i + 1
    return None


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kpilot", default=os.path.join(here, "..", "build", "bin", "kpilot"))
    ap.add_argument("--spaces", default=os.path.join(here, "spaces", "real"))
    ap.add_argument("--calibration", default=os.path.join(here, "spaces", "real", "h200_calibration.json"),
                    help="kpilot calibrate --json output for the replays' roofline class ('' = none)")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--max-budget", type=int, default=80)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="kpilot-skills-fig-")
    rows = []
    try:
        for name in sorted(os.listdir(a.spaces)):
            if not name.endswith(".json.gz"):
                continue
            path = os.path.join(tmp, name[:-3])
            with gzip.open(os.path.join(a.spaces, name)) as src, open(path, "wb") as dst:
                shutil.copyfileobj(src, dst)
            space, speedup, _ = load_space(path)
            task = os.path.join(here, "..", "examples", "cuda", space["task"])
            best = max(speedup.values())
            budget = min(distinct_evaluations(space), a.max_budget)
            extra = ["--workload", space["workload"]]
            if a.calibration:
                extra += ["--calibration", os.path.abspath(a.calibration)]
            row = {"space": name, "task": space["task"], "configs": len(space["configs"]), "best": best, "budget": budget}
            for label, more in (("skills", []), ("off", ["--skills", "off"])):
                jobs = [(os.path.abspath(a.kpilot), os.path.abspath(task), path, "mcts", s, budget, extra + more)
                        for s in range(1, a.seeds + 1)]
                try:
                    runs = run_all(run_kpilot, jobs, a.jobs, every=a.seeds)
                except RuntimeError as e:
                    row["error"] = str(e).splitlines()[-1][:300]
                    break
                reach, early, applied = [], [], 0
                for r in runs:
                    _, seen = curve_from_events(r["lines"], speedup)
                    n = first_reaching(seen, TARGET * best)
                    reach.append(n if n is not None else budget + 1)
                    early.append((seen[min(EARLY, len(seen)) - 1] if seen else 0) / best)
                    applied += sum(1 for line in r["lines"] if '"skills_applied":["' in line)
                row[label] = {"evals_to_95_median": statistics.median(reach), "evals_to_95_mean": statistics.mean(reach),
                              "reached": sum(1 for x in reach if x <= budget), "seeds": len(runs),
                              f"fraction_at_{EARLY}": round(statistics.mean(early), 4), "card_drafts": applied}
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    with open(os.path.join(a.out, "skills_figure.json"), "w") as f:
        json.dump(rows, f, indent=1)
    lines = ["| space | configs | budget | evals to 95%: with cards (median / mean, reached) | without (`--skills off`) "
             f"| fraction of best at {EARLY} evals: with / without | drafts made by a card's move |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['space']} | {r['configs']} | {r['budget']} | not replayable: {r['error']} | | | |")
            continue
        s, o = r["skills"], r["off"]
        lines.append(f"| {r['space']} | {r['configs']} | {r['budget']} | {s['evals_to_95_median']} / "
                     f"{s['evals_to_95_mean']:.1f}, {s['reached']}/{s['seeds']} | {o['evals_to_95_median']} / "
                     f"{o['evals_to_95_mean']:.1f}, {o['reached']}/{o['seeds']} | {s[f'fraction_at_{EARLY}']:.3f} / "
                     f"{o[f'fraction_at_{EARLY}']:.3f} | {s['card_drafts']} |")
    text = "\n".join(lines) + "\n\nA run that never reached 95% counts as budget + 1.\n"
    with open(os.path.join(a.out, "skills_figure.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
