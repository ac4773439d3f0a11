#!/usr/bin/env python3
"""Search efficiency over an exhaustively measured space (docs/search.md, Replays).

Replays each kpilot search policy over a space file (`kpilot sweep`, docs/sweep.md) with many
seeds through `kpilot optimize TASK --space SPACE --json`, and reports, for budgets of 1%..100%
of the space, the fraction of the exhaustive best speedup reached, plus the evaluations needed to
reach 95% of it.

  python3 bench/search_efficiency.py SPACE.json --kpilot build/bin/kpilot --out bench/results/search
  python3 bench/search_efficiency.py SPACE.json --seeds 10 --policies mcts,greedy --out /tmp/se

What is measured:
  - exhaustive best: the highest stored `speedup` (baseline median / candidate median) over the
    passed configs of the file;
  - a run's quality after k evaluations: the stored speedup of its incumbent (the node the
    optimizer would report: promoted only through the paired gate, served from the stored
    samples) over the exhaustive best. `best seen` is the same for the best config evaluated so
    far, gate or not (what Kernel Tuner reports);
  - evaluations: candidate evaluations as kpilot counts them (the starting one included; drafts
    whose binary was evaluated already are skipped and not counted; promotion checks are not
    counted);
  - budgets: one run per (policy, seed) with the largest budget, read as its prefixes. The
    generator's drafts do not depend on the budget, so a run with budget b evaluates the same
    configs as the first b of a longer run, except that the b-th may differ: the optimizer keeps
    two expansions in flight, and a budget trims the one in flight when it runs out.
    `--check-prefix N` re-runs N (policy, seed) pairs at 10% of the space and reports where they
    first differ from the long runs.

Kernel Tuner's strategies are replayed by bench/kernel_tuner_compare.py, which writes results in
this script's format; pass them with --merge to put both in one table.
"""
import argparse
import concurrent.futures as cf
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

FRACTIONS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0]
TARGET = 0.95
WITHIN = 0.10


def params_key(params):
    """The optimizer's event text for params: "A=1 B=2", keys in byte order."""
    return " ".join(f"{k}={params[k]}" for k in sorted(params)) or "(defaults)"


def load_space(path):
    with open(path) as f:
        space = json.load(f)
    speedup = {}
    counts = {}
    for c in space["configs"]:
        counts[c["status"]] = counts.get(c["status"], 0) + 1
        if c["status"] == "passed":
            speedup[params_key(c["params"])] = float(c["speedup"])
    if not speedup:
        sys.exit(f"{path}: no passed config")
    return space, speedup, counts


def distinct_evaluations(space):
    """The most evaluations a kpilot run can make: configs sharing a binary are evaluated once."""
    shas = {c["object_sha"] for c in space["configs"] if c.get("object_sha") and c["status"] != "compile_error"}
    return len(shas) + sum(1 for c in space["configs"] if c["status"] == "compile_error" or not c.get("object_sha"))


def budgets(n_configs, max_fraction):
    out = []
    for f in FRACTIONS:
        if f <= max_fraction + 1e-9:
            out.append((f, max(1, round(f * n_configs))))
    return out


def curve_from_events(lines, speedup):
    """Per evaluation: the incumbent's and the best seen config's stored speedups."""
    incumbent, best_seen, inc_node = [], [], None
    node_key, best = {}, 0.0
    for line in lines:
        try:
            e = json.loads(line)
        except ValueError:
            continue
        kind = e.get("event")
        if kind == "evaluated":
            node_key[e["node"]] = e["params"]
            if e.get("verdict") == "passed":
                best = max(best, speedup.get(e["params"], 0.0))
            best_seen.append(best)
            incumbent.append(speedup.get(node_key.get(inc_node), 0.0))
        elif kind == "promote":
            inc_node = e["node"]
            incumbent[-1] = speedup.get(node_key.get(inc_node), 0.0)
    return incumbent, best_seen


def run_kpilot(args):
    kpilot, task, space, policy, seed, budget, extra = args
    # The store is written at every step; on tmpfs that costs no fsync.
    tmp_root = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    with tempfile.TemporaryDirectory(prefix="kpilot-se-", dir=tmp_root) as tmp:
        cmd = [kpilot, "optimize", task, "--space", space, "--policy", policy, "--seed", str(seed),
               "--budget", str(budget), "--json", "--store", os.path.join(tmp, "store"),
               "--out", os.path.join(tmp, "best")] + extra
        t0 = time.monotonic()
        p = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.monotonic() - t0
    if p.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stderr[-3000:]}")
    result = json.loads(p.stdout) if p.stdout.strip() else {}
    return {"policy": policy, "seed": seed, "budget": budget, "wall_s": wall,
            "stop_reason": result.get("stop_reason"), "promotion_checks": result.get("promotion_checks"),
            "duplicates": result.get("duplicates"), "lines": p.stderr.splitlines()}


def run_all(fn, jobs, workers, every=10):
    """fn over jobs in `workers` processes, in order, with progress on stderr."""
    t0, out = time.monotonic(), []
    with cf.ProcessPoolExecutor(max_workers=workers) as pool:
        for i, r in enumerate(pool.map(fn, jobs)):
            out.append(r)
            if (i + 1) % every == 0 or i + 1 == len(jobs):
                print(f"{i + 1}/{len(jobs)} runs, {time.monotonic() - t0:.0f} s", file=sys.stderr)
    return out


def compact(c, best, budget_list):
    """A run's curve at the budgets, and when it first reached the target (to keep JSON small)."""
    return {"at": [round((c[min(b, len(c)) - 1] if c else 0.0) / best, 4) for _, b in budget_list],
            "evals_to_95": next((i + 1 for i, s in enumerate(c) if s >= TARGET * best), None)}


def summarize(name, curves, best, n_configs, budget_list):
    """curves: list of per-evaluation speedup lists (one per seed)."""
    row = {"name": name, "seeds": len(curves), "at": {}}
    for f, b in budget_list:
        q = [(c[min(b, len(c)) - 1] if c else 0.0) / best for c in curves]
        row["at"][f"{f:g}"] = {"budget": b, "mean": statistics.fmean(q), "median": statistics.median(q)}
    need = []
    for c in curves:
        k = next((i + 1 for i, s in enumerate(c) if s >= TARGET * best), None)
        need.append(k)
    reached = [k for k in need if k is not None]
    within = max(1, math.floor(WITHIN * n_configs))
    ordered = sorted(k if k is not None else math.inf for k in need)
    med = statistics.median(ordered) if ordered else math.inf
    row["evals_to_95"] = {"median": None if math.isinf(med) else med,
                          "reached": len(reached),
                          "within_10pct": sum(1 for k in reached if k <= within),
                          "within_10pct_share": sum(1 for k in reached if k <= within) / max(1, len(curves)),
                          "within_budget": within}
    return row


def markdown(space_path, n_configs, best, counts, rows, budget_list, notes):
    out = [f"# Search efficiency on `{os.path.basename(space_path)}`", "",
           f"{n_configs} configs ({', '.join(f'{k} {v}' for k, v in sorted(counts.items()))}); "
           f"exhaustive best {best:.3f}x. Each cell: mean (median) fraction of the exhaustive best reached "
           f"after that many evaluations, over seeds.", ""]
    head = "| strategy | seeds | " + " | ".join(f"{f:g} ({b})" for f, b in budget_list) + \
           f" | evals to {TARGET:.0%}: median | reach {TARGET:.0%} within {WITHIN:.0%} |"
    out += [head, "|" + "---|" * (4 + len(budget_list))]
    for r in rows:
        cells = []
        for f, _ in budget_list:
            a = r["at"].get(f"{f:g}")
            cells.append("—" if a is None else f"{a['mean']:.3f} ({a['median']:.3f})")
        e = r["evals_to_95"]
        med = "never (median)" if e["median"] is None else f"{e['median']:g}"
        out.append(f"| {r['name']} | {r['seeds']} | " + " | ".join(cells) +
                   f" | {med} | {100 * e['within_10pct_share']:.0f}% (≤{e['within_budget']}) |")
    out += [""] + [f"- {n}" for n in notes]
    return "\n".join(out) + "\n"


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("space")
    ap.add_argument("--kpilot", default=os.path.join(here, "..", "build", "bin", "kpilot"))
    ap.add_argument("--task", help="task folder (default: the space file's task_dir)")
    ap.add_argument("--policies", default="mcts,greedy,beam,random")
    ap.add_argument("--seeds", type=int, default=50, help="seeds 1..N per policy (default 50)")
    ap.add_argument("--max-fraction", type=float, default=1.0, help="largest budget, as a share of the space")
    ap.add_argument("--jobs", type=int, default=2, help="parallel kpilot processes")
    ap.add_argument("--out", required=True, help="folder for results.json and results.md")
    ap.add_argument("--merge", action="append", default=[], help="another results.json (kernel_tuner_compare.py)")
    ap.add_argument("--check-prefix", type=int, default=0,
                    help="re-run this many (policy, seed) pairs at a small budget and check the prefix reading")
    ap.add_argument("--optimize-arg", action="append", default=[], help="extra argument for kpilot optimize")
    a = ap.parse_args()

    space, speedup, counts = load_space(a.space)
    n = len(space["configs"])
    best = max(speedup.values())
    task = a.task or space.get("task_dir")
    if not task or not os.path.isdir(task):
        sys.exit(f"the task folder {task!r} does not exist; pass --task")
    # Past the last distinct binary a run can only close nodes (slowly: each asks the generator
    # again), so the budget stops there; larger budgets read the last value.
    max_evals = distinct_evaluations(space)
    max_budget = min(max_evals, max(1, round(a.max_fraction * n)))
    budget_list = budgets(n, a.max_fraction)
    policies = [p for p in a.policies.split(",") if p]
    jobs = [(os.path.abspath(a.kpilot), os.path.abspath(task), os.path.abspath(a.space), p, s, max_budget,
             a.optimize_arg) for p in policies for s in range(1, a.seeds + 1)]
    t0 = time.monotonic()
    runs = run_all(run_kpilot, jobs, a.jobs)
    notes = [f"{n - max_evals} configs share a binary with another (kpilot evaluates each binary once, so at most "
             f"{max_evals} evaluations; budgets above that read a run's last value)."]
    if counts.get("not_run"):
        notes.append(f"{counts['not_run']} configs were never run by the sweep; the replay serves them as failures.")
    if a.check_prefix:
        diverged = []
        small = max(1, round(0.1 * n))
        checks = [(j[0], j[1], j[2], j[3], j[4], small, j[6]) for j in jobs[::max(1, len(jobs) // a.check_prefix)]]
        for c in run_all(run_kpilot, checks[:a.check_prefix], a.jobs):
            full = next(r for r in runs if r["policy"] == c["policy"] and r["seed"] == c["seed"])
            order = lambda r: [json.loads(l).get("params") for l in r["lines"]
                               if l.startswith("{") and '"event":"evaluated"' in l]
            short, long = order(c), order(full)
            at = next((i + 1 for i, (x, y) in enumerate(zip(short, long)) if x != y), None)
            if at is not None:
                diverged.append(at)
        notes.append(f"prefix check: {a.check_prefix - len(diverged)}/{a.check_prefix} runs at budget {small} "
                     f"evaluated the same configs as the first {small} of the full-budget run"
                     + (f"; the others first differ at evaluation {', '.join(map(str, diverged))}." if diverged
                        else "."))
    rows, detail = [], []
    for p in policies:
        inc, seen = [], []
        for r in runs:
            if r["policy"] != p:
                continue
            i, s = curve_from_events(r["lines"], speedup)
            inc.append(i)
            seen.append(s)
            detail.append({k: r[k] for k in ("policy", "seed", "stop_reason", "promotion_checks", "duplicates",
                                              "wall_s")} | {"evaluations": len(i)} | compact(i, best, budget_list))
        rows.append(summarize(f"kpilot {p}", inc, best, n, budget_list))
        rows.append(summarize(f"kpilot {p} (best seen)", seen, best, n, budget_list))
    for m in a.merge:
        with open(m) as f:
            merged = json.load(f)
        rows += merged["rows"]
        notes += [f"{os.path.basename(os.path.dirname(os.path.abspath(m)))}: {n}" for n in merged.get("notes", [])]
    stops = {}
    for r in runs:
        stops[r["stop_reason"]] = stops.get(r["stop_reason"], 0) + 1
    notes.append(f"{len(runs)} kpilot runs in {time.monotonic() - t0:.0f} s with {a.jobs} processes; stop reasons "
                 f"{stops}. A run that stopped before the budget (exhausted) keeps its last value.")
    notes.append("kpilot rows: the incumbent (promoted through the replayed paired gate); '(best seen)': the best "
                 "config evaluated so far, as Kernel Tuner reports it.")
    os.makedirs(a.out, exist_ok=True)
    result = {"space": os.path.abspath(a.space), "configs": n, "counts": counts, "exhaustive_best": best,
              "budgets": budget_list, "rows": rows, "runs": detail, "notes": notes}
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(result, f, indent=1)
    md = markdown(a.space, n, best, counts, rows, budget_list, notes)
    with open(os.path.join(a.out, "results.md"), "w") as f:
        f.write(md)
    print(md)


if __name__ == "__main__":
    main()
