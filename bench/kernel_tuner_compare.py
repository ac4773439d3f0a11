#!/usr/bin/env python3
"""Kernel Tuner's search strategies replayed over the same space file as
bench/search_efficiency.py, in Kernel Tuner's simulation mode.

Needs Kernel Tuner (PyPI `kernel-tuner`; no GPU, pycuda or cupy in simulation mode):

  python3 -m venv /tmp/kt && /tmp/kt/bin/pip install kernel_tuner
  /tmp/kt/bin/python bench/kernel_tuner_compare.py SPACE.json --out /tmp/kt-out
  python3 bench/search_efficiency.py SPACE.json --out /tmp/se --merge /tmp/kt-out/results.json

What it does:
  1. writes the space as a Kernel Tuner cache file (`cache.json` in --out): the header
     (device_name, kernel_name, problem_size, tune_params_keys, tune_params, objective "time") and
     one entry per config, keyed by its param values joined with commas in tune_params_keys order,
     holding the params, "time", "times" (every stored sample, on the same scale as "time"),
     compile_time / benchmark_time (ms), verification_time, strategy_time, framework_time and
     timestamp. A config that did not pass has "time" set to Kernel Tuner's error marker
     ("CompilationFailedConfig" for compile_error, "RuntimeFailedConfig" otherwise: Kernel Tuner
     has no "incorrect"), so it costs an evaluation and never counts as a result.
     "time" is, by default, what kpilot ranks by put in milliseconds: B / speedup, where speedup is
     the stored baseline median / candidate median and B the median of all configs' baseline
     medians; each sample i is scaled by B / baseline_ms[i]. A sweep timed each config in its own
     run, paired with the baseline, so when the machine drifts between runs (a loaded host) the raw
     medians and the speedups rank configs differently, and Kernel Tuner would be optimizing
     another objective. `--time raw` writes the raw candidate medians and samples instead;
  2. checks the file by loading it with Kernel Tuner's own reader and a brute-force simulation that
     must visit every config and find the stored best;
  3. runs each strategy in simulation mode for seeds 1..N (Python's and NumPy's global generators
     seeded; Kernel Tuner's strategies draw from them), the search space restricted to the configs
     in the file (as Kernel Tuner's tune_cache does, but keeping the failed configs, which a real
     tuning run would pay for). Several strategies plan by max_fevals (simulated_annealing's
     schedule, bayes_opt, dual_annealing, random_sample), so a run with a large budget is not a
     run with a small one read early: every budget up to --own-runs-up-to (default 10% of the
     space) gets runs of its own with max_fevals = that budget, and larger budgets are read from
     the prefix of one run with the largest budget;
  4. reads each run's results in evaluation order, counting unique configs as Kernel Tuner's
     budget does, and reports the stored speedup of the fastest config seen so far against the
     exhaustive best: the same table and JSON rows as search_efficiency.py. "reach 95% within
     10%" comes from the runs whose budget is 10% of the space; the median evaluations to 95%
     from the largest-budget runs.

Two behaviours of Kernel Tuner 1.5.0 that shape its rows:
  - bayes_opt fits a failed config as an observation: its cost function returns
    sys.float_info.max for a failure, its validity check looks for 1e20, and the overflowing value
    turns every prediction into NaN. From the first failure on, the argmax of its acquisition is
    the first unvisited config in Kernel Tuner's own enumeration order, so on a space with
    failures bayes_opt is its initial sample followed by that ordered walk. A note says so when
    the space has failed configs;
  - diff_evo evaluates its Latin-hypercube population in the order of a Python set of
    search-space indices, that is mostly low indices first; Kernel Tuner's enumeration starts at
    the largest value of every param, so its first evaluations lean toward large values.
"""
import argparse
import io
import contextlib
import importlib.metadata
import json
import os
import random
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import search_efficiency as se  # noqa: E402

STRATEGIES = ["random_sample", "greedy_ils", "greedy_mls", "mls", "genetic_algorithm", "simulated_annealing",
              "basinhopping", "dual_annealing", "pso", "firefly_algorithm", "diff_evo", "bayes_opt"]


def typed(v):
    """Param values as Kernel Tuner's numeric strategies need them: numbers where they are."""
    for t in (int, float):
        try:
            return t(v)
        except ValueError:
            pass
    return v


def param_order(space):
    """The task's declaration order when its task.toml is at hand, else the file's."""
    try:
        import tomllib
        with open(os.path.join(space["task_dir"], "task.toml"), "rb") as f:
            names = list(tomllib.load(f)["params"].keys())
        if set(names) == set(space["configs"][0]["params"]):
            return names
    except (KeyError, OSError, ValueError):
        pass
    return list(space["configs"][0]["params"].keys())


def to_cache(space, keys, raw_time=False, descending=False):
    """The space as a Kernel Tuner cache (a dict ready for json.dump). Each param's values are
    listed in ascending order, as tasks declare them, or in descending order (a control for the
    strategies whose early evaluations follow Kernel Tuner's enumeration order)."""
    passed = sorted(float(c["baseline_median_ms"]) for c in space["configs"] if c["status"] == "passed")
    scale = passed[len(passed) // 2]
    values = {k: [] for k in keys}
    for c in space["configs"]:
        for k in keys:
            v = typed(c["params"][k])
            if v not in values[k]:
                values[k].append(v)
    for k in keys:
        values[k].sort(key=lambda v: (isinstance(v, str), v), reverse=descending)
    cache = {}
    for c in space["configs"]:
        p = {k: typed(c["params"][k]) for k in keys}
        key = ",".join(str(p[k]) for k in keys)
        entry = dict(p)
        samples = c.get("candidate_ms") or []
        if c["status"] == "passed" and raw_time:
            entry["time"] = float(c["median_ms"])
            entry["times"] = [float(x) for x in samples]
        elif c["status"] == "passed":
            entry["time"] = scale / float(c["speedup"])
            entry["times"] = [scale * x / b for x, b in zip(samples, c["baseline_ms"]) if b > 0]
        else:
            entry["time"] = "CompilationFailedConfig" if c["status"] == "compile_error" else "RuntimeFailedConfig"
        entry["compile_time"] = 1000.0 * float(c.get("compile_s") or 0)
        entry["verification_time"] = 0.0
        entry["benchmark_time"] = float(sum(samples))
        entry["strategy_time"] = 0.0
        entry["framework_time"] = 0.0
        entry["timestamp"] = space.get("created", "")
        cache[key] = entry
    name = (space.get("gpu") or {}).get("name") or "kpilot-space"
    return {"device_name": name, "kernel_name": space["task"], "problem_size": [1], "tune_params_keys": keys,
            "tune_params": values, "objective": "time", "cache": cache}


def tune(cache_file, cache, strategy, seed, max_fevals, strategy_options=None):
    """One simulated tuning run; the results in evaluation order."""
    import numpy as np
    from constraint import FunctionConstraint
    from kernel_tuner import tune_kernel

    keys = cache["tune_params_keys"]
    present = {tuple(e[k] for k in keys) for e in cache["cache"].values()}

    def in_space(*values):
        return values in present

    random.seed(seed)
    np.random.seed(seed)
    opts = dict(strategy_options or {})
    if strategy != "brute_force":  # which takes no options
        opts["max_fevals"] = max_fevals
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        results, _ = tune_kernel(cache["kernel_name"], "", tuple(cache["problem_size"]), [], cache["tune_params"],
                                 restrictions=[FunctionConstraint(in_space)], strategy=strategy,
                                 strategy_options=opts, cache=cache_file, simulation_mode=True, quiet=True,
                                 verbose=False, objective="time")
    return results


def curve(results, keys, speedup):
    """Per unique evaluation: the stored speedup of the fastest passed config seen so far."""
    seen, out, best_time, best_key = set(), [], float("inf"), None
    for r in results:
        if r is None:
            continue
        key = se.params_key({k: str(r[k]) for k in keys})
        if key in seen:
            continue
        seen.add(key)
        t = r.get("time")
        if "__error__" not in r and isinstance(t, float) and t < best_time:
            best_time, best_key = t, key
        out.append(speedup.get(best_key, 0.0))
    return out


def run_one(job):
    cache_file, strategy, seed, max_fevals = job
    with open(cache_file) as f:
        cache = json.load(f)
    t0 = time.monotonic()
    try:
        results = tune(cache_file, cache, strategy, seed, max_fevals)
    except Exception as e:  # a strategy that does not run here is reported, not fatal
        return {"strategy": strategy, "seed": seed, "error": f"{type(e).__name__}: {e}"}
    keys = cache["tune_params_keys"]
    return {"strategy": strategy, "seed": seed, "wall_s": time.monotonic() - t0,
            "configs": [{k: str(r[k]) for k in keys} for r in results if r is not None]}


def verify(cache_file, cache, speedup, best):
    """Kernel Tuner reads the file back, and brute force over it sees every config."""
    from kernel_tuner import util
    data = util.read_cache(cache_file, open_cache=False)
    assert data["tune_params_keys"] == cache["tune_params_keys"], "tune_params_keys differ after reading"
    assert len(data["cache"]) == len(cache["cache"]), "entries lost in reading"
    results = tune(cache_file, cache, "brute_force", 1, len(cache["cache"]))
    c = curve(results, cache["tune_params_keys"], speedup)
    if len(c) != len(cache["cache"]):
        raise SystemExit(f"brute force over the cache saw {len(c)} of {len(cache['cache'])} configs")
    return c[-1] / best


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("space")
    ap.add_argument("--out", required=True, help="folder for cache.json, results.json and results.md")
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--seeds", type=int, default=50, help="seeds 1..N per strategy (default 50)")
    ap.add_argument("--max-fraction", type=float, default=1.0, help="largest budget, as a share of the space")
    ap.add_argument("--own-runs-up-to", type=float, default=se.WITHIN,
                    help="budgets up to this share of the space get runs of their own (default 0.1)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--time", choices=["normalized", "raw"], default="normalized",
                    help="the cache's \"time\": baseline-normalized (kpilot's objective) or the raw medians")
    ap.add_argument("--value-order", choices=["ascending", "descending"], default="ascending",
                    help="each param's values in the cache (default ascending, as declared); descending "
                         "reverses Kernel Tuner's enumeration, a control for order-following strategies")
    a = ap.parse_args()

    space, speedup, counts = se.load_space(a.space)
    n = len(space["configs"])
    best = max(speedup.values())
    keys = param_order(space)
    cache = to_cache(space, keys, raw_time=a.time == "raw", descending=a.value_order == "descending")
    os.makedirs(a.out, exist_ok=True)
    cache_file = os.path.abspath(os.path.join(a.out, "cache.json"))
    with open(cache_file, "w") as f:
        json.dump(cache, f)
    brute = verify(cache_file, cache, speedup, best)
    notes = [f"Kernel Tuner cache written to {cache_file} (\"time\": {a.time}; values {a.value_order}) and read "
             f"back by Kernel Tuner; "
             f"brute force over it visited all {n} configs and reached {brute:.3f} of the exhaustive best (below 1 "
             f"with raw times when the fastest median is not the highest speedup over the paired baseline)."]

    failed = n - counts.get("passed", 0)
    if failed and "bayes_opt" in a.strategies.split(","):
        notes.append(f"{failed} of the {n} configs failed. Kernel Tuner's bayes_opt fits a failure as an observation "
                     f"of sys.float_info.max, after which its model predicts NaN and it walks the search space in "
                     f"Kernel Tuner's enumeration order: its row here is not Bayesian optimization.")
    max_fevals = max(1, round(a.max_fraction * n))
    budget_list = se.budgets(n, a.max_fraction)
    strategies = [s for s in a.strategies.split(",") if s]
    own = sorted({b for f, b in budget_list if f <= a.own_runs_up_to + 1e-9 and b < max_fevals})
    within = max(1, int(se.WITHIN * n))
    if within < max_fevals and within not in own:
        own.append(within)
    jobs = [(cache_file, s, seed, b) for s in strategies for seed in range(1, a.seeds + 1) for b in own + [max_fevals]]
    t0 = time.monotonic()
    runs = se.run_all(run_one, jobs, a.jobs, every=25)
    for j, r in zip(jobs, runs):
        r["budget"] = j[3]
    rows, detail = [], []
    for s in strategies:
        mine = [r for r in runs if r["strategy"] == s]
        errors = [r["error"] for r in mine if "error" in r]
        if errors:
            notes.append(f"{s}: {len(errors)}/{len(mine)} runs failed ({errors[0][:200]}); left out.")
        curves, by_budget = [], {}
        for r in mine:
            if "error" in r:
                continue
            # The results' times come from the cache (run_one returns params only, to keep IPC small).
            res = []
            for p in r["configs"]:
                e = cache["cache"][",".join(str(typed(p[k])) for k in keys)]
                res.append(dict(p, time=e["time"]) if isinstance(e["time"], float) else dict(p, __error__=True))
            c = curve(res, keys, speedup)
            if r["budget"] == max_fevals:
                curves.append(c)
                detail.append({"strategy": s, "seed": r["seed"], "wall_s": r["wall_s"], "evaluations": len(c)} |
                              se.compact(c, best, budget_list))
            else:
                by_budget.setdefault(r["budget"], []).append(c)
        if curves:
            row = se.summarize(f"Kernel Tuner {s}", curves, best, n, budget_list)
            for f, b in budget_list:
                if b in by_budget:  # the runs of its own replace the prefix reading
                    row["at"][f"{f:g}"] = se.summarize("", by_budget[b], best, n, [(f, b)])["at"][f"{f:g}"]
            if within in by_budget:
                e = se.summarize("", by_budget[within], best, n, [])["evals_to_95"]
                for k in ("within_10pct", "within_10pct_share"):
                    row["evals_to_95"][k] = e[k]
            row["own_runs_at"] = sorted(by_budget)
            row["mean_wall_s"] = sum(r.get("wall_s", 0) for r in mine if r.get("budget") == max_fevals) / len(curves)
            rows.append(row)
    notes.append(f"{len(runs)} Kernel Tuner runs in {time.monotonic() - t0:.0f} s with {a.jobs} processes: "
                 f"max_fevals {', '.join(map(str, own))} (runs of their own) and {max_fevals} (read as prefixes for "
                 f"the larger budgets). A run that ended before its budget keeps its last value. Kernel Tuner "
                 f"rows are the best config seen (it has no promotion gate); each config counts once, failed "
                 f"ones and configs that share a binary included.")
    result = {"space": os.path.abspath(a.space), "configs": n, "counts": counts, "exhaustive_best": best,
              "budgets": budget_list, "rows": rows, "runs": detail, "notes": notes,
              "kernel_tuner": importlib.metadata.version("kernel_tuner")}
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(result, f, indent=1)
    md = se.markdown(a.space, n, best, counts, rows, budget_list, notes)
    with open(os.path.join(a.out, "results.md"), "w") as f:
        f.write(md)
    print(md)


if __name__ == "__main__":
    main()
