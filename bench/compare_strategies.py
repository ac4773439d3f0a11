#!/usr/bin/env python3
"""Is one strategy ahead of every other at equal evaluations? (search efficiency, docs/search.md)

Reads the results.json files of bench/search_efficiency.py (kpilot policies) and
bench/kernel_tuner_compare.py (Kernel Tuner strategies) for one space, and compares a reference
strategy (default: kpilot mcts) with every other at each budget: the difference of the mean
fraction of the exhaustive best, with a seeded bootstrap 95% interval (runs resampled within each
strategy; the runs of two strategies are independent, so the interval is unpaired).

A cell reads "ahead" when the whole interval is above 0, "behind" when it is below 0, and "level"
otherwise: a difference the seeds cannot tell from noise.

  python3 bench/compare_strategies.py /tmp/se/results.json /tmp/kt/results.json
  python3 bench/compare_strategies.py A.json B.json --reference "kpilot random" --json

Exit status: 0 when the comparison was made (whatever it says), 2 for unusable input.
"""
import argparse
import json
import random
import sys


def load(paths):
    """{strategy name: [per-run list of fractions at the budgets]}, and the common budget list."""
    groups, budgets, budgets_from = {}, None, None
    for path in paths:
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            raise SystemExit(f"{path}: cannot read it as JSON ({e})")
        if "budgets" not in data or "runs" not in data:
            raise SystemExit(f"{path}: no 'budgets' or 'runs'; pass a results.json of search_efficiency.py "
                             "or kernel_tuner_compare.py")
        b = [tuple(x) for x in data["budgets"]]
        if budgets is None:
            budgets, budgets_from = b, path
        elif b != budgets:
            raise SystemExit(f"{path}: its budgets {b} differ from {budgets} in {budgets_from}; compare "
                             "results of one space with the same --max-fraction")
        for run in data["runs"]:
            if "error" in run:
                continue
            if "policy" in run:
                name = f"kpilot {run['policy']}"
            elif "strategy" in run:
                name = f"Kernel Tuner {run['strategy']}"
            else:
                raise SystemExit(f"{path}: a run has neither 'policy' nor 'strategy'")
            at = run.get("at")
            if not isinstance(at, list) or len(at) != len(budgets):
                raise SystemExit(f"{path}: run {name} seed {run.get('seed')} has {at!r} where {len(budgets)} "
                                 "fractions (one per budget) were expected")
            groups.setdefault(name, []).append([float(x) for x in at])
    return groups, budgets


def mean(xs):
    return sum(xs) / len(xs)


def bootstrap_diff(a, b, rng, rounds):
    """Mean(a) − mean(b) and its 2.5% and 97.5% bootstrap quantiles."""
    diffs = []
    for _ in range(rounds):
        ra = [a[rng.randrange(len(a))] for _ in a]
        rb = [b[rng.randrange(len(b))] for _ in b]
        diffs.append(mean(ra) - mean(rb))
    diffs.sort()
    return mean(a) - mean(b), diffs[int(0.025 * rounds)], diffs[min(rounds - 1, int(0.975 * rounds))]


def compare(groups, budgets, reference, rounds=4000, seed=1):
    if reference not in groups:
        raise SystemExit(f"no runs of {reference!r}; the files hold {', '.join(sorted(groups))}")
    rng = random.Random(seed)
    ref = groups[reference]
    rows = []
    for name in sorted(groups):
        if name == reference:
            continue
        cells = []
        for i, (fraction, evals) in enumerate(budgets):
            d, lo, hi = bootstrap_diff([r[i] for r in ref], [r[i] for r in groups[name]], rng, rounds)
            verdict = "ahead" if lo > 0 else "behind" if hi < 0 else "level"
            cells.append({"fraction": fraction, "evaluations": evals, "difference": round(d, 4),
                          "ci95": [round(lo, 4), round(hi, 4)], "verdict": verdict})
        rows.append({"strategy": name, "runs": len(groups[name]), "cells": cells})
    ahead_of_all = [all(r["cells"][i]["verdict"] == "ahead" for r in rows) for i in range(len(budgets))]
    behind = sorted({(r["strategy"], c["fraction"]) for r in rows for c in r["cells"] if c["verdict"] == "behind"},
                    key=lambda x: (x[1], x[0]))
    return {"reference": reference, "runs": len(ref), "budgets": budgets, "rows": rows,
            "ahead_of_all": ahead_of_all, "behind": [{"strategy": s, "fraction": f} for s, f in behind]}


def markdown(result):
    budgets = result["budgets"]
    out = [f"{result['reference']} ({result['runs']} runs) against each strategy: mean difference in the fraction "
           "of the exhaustive best, bootstrap 95% interval, and ahead / behind / level (interval across 0).", "",
           "| strategy | runs | " + " | ".join(f"{f:g} ({n})" for f, n in budgets) + " |",
           "|" + "---|" * (2 + len(budgets))]
    for r in result["rows"]:
        cells = [f"{c['difference']:+.3f} [{c['ci95'][0]:+.3f}, {c['ci95'][1]:+.3f}] {c['verdict']}"
                 for c in r["cells"]]
        out.append(f"| {r['strategy']} | {r['runs']} | " + " | ".join(cells) + " |")
    out.append("")
    for (f, n), ok in zip(budgets, result["ahead_of_all"]):
        if ok:
            out.append(f"- {f:g} ({n} evaluations): ahead of every strategy.")
        else:
            level = [r["strategy"] for r in result["rows"]
                     if next(c for c in r["cells"] if c["fraction"] == f)["verdict"] == "level"]
            lost = [b["strategy"] for b in result["behind"] if b["fraction"] == f]
            parts = []
            if lost:
                parts.append("behind " + ", ".join(lost))
            if level:
                parts.append("level with " + ", ".join(level))
            out.append(f"- {f:g} ({n} evaluations): not ahead of every strategy: " + "; ".join(parts) + ".")
    return "\n".join(out) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="+", help="results.json files of one space")
    ap.add_argument("--reference", default="kpilot mcts")
    ap.add_argument("--rounds", type=int, default=4000, help="bootstrap resamples (default 4000)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="print JSON instead of markdown")
    a = ap.parse_args(argv)
    if a.rounds < 100:
        ap.error("--rounds must be at least 100")
    try:
        groups, budgets = load(a.results)
        result = compare(groups, budgets, a.reference, a.rounds, a.seed)
    except SystemExit as e:
        print(f"compare_strategies: {e}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=1) if a.json else markdown(result), end="" if not a.json else "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
