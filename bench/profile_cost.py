#!/usr/bin/env python3
"""The profile's cost: the wall time of kpilot's whole profile of a candidate (both stages,
fresh: no stored profile) against one fresh `ncu --set full` run of the same candidate, with
where kpilot's time goes (its own steps, the runner's timeline, CUPTI's set-up steps).

"Fresh" means a new kpilot process with no stored profile (--fresh). The candidate's compiled
binary may come from the compile cache (ncu also profiles an already-built binary); a first
warm-up run per candidate fills that cache and is reported separately as `first_s`.

  python3 bench/profile_cost.py --kpilot .stage/bin/kpilot --repeats 3 --out $OUT/cost \
      TASK:CANDIDATE [TASK:CANDIDATE ...]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def run_profile(kpilot, task, cand, store, extra, timeout):
    argv = [kpilot, "profile", task, cand, "--json", "--fresh", "--store", store] + extra
    t0 = time.monotonic()
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    wall = time.monotonic() - t0
    try:
        j = json.loads(p.stdout)
    except json.JSONDecodeError:
        j = {"error": p.stderr[-1500:], "rc": p.returncode}
    return wall, j


def top_of(j):
    for k in j.get("kernels", []):
        f = k.get("findings", [])
        if f:
            return f[0].get("id")
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pairs", nargs="+", help="TASK:CANDIDATE")
    ap.add_argument("--kpilot", default="build/bin/kpilot")
    ap.add_argument("--store", default="/tmp/kp-cost-store")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-full", action="store_true", help="skip the ncu --set full runs")
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--out", default="profile_cost")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    records = []
    for pair in a.pairs:
        task, cand = pair.split(":", 1)
        if not os.path.isabs(cand) and not os.path.exists(cand):
            cand = os.path.join(task, cand)
        rec = {"task": task, "candidate": cand, "runs": []}
        first, j = run_profile(a.kpilot, task, cand, a.store, [], a.timeout)
        rec["first_s"] = first
        for i in range(a.repeats):
            wall, j = run_profile(a.kpilot, task, cand, a.store, [], a.timeout)
            rec["runs"].append({"wall_s": wall, "class": next((k.get("class") for k in j.get("kernels", [])), None),
                                "top": top_of(j), "steps_s": j.get("steps_s"), "eval_timeline_s": j.get("eval_timeline_s"),
                                "profiler": j.get("profiler"), "profiler_wall_s": j.get("profiler_wall_s"),
                                "profiler_info": j.get("profiler_info"), "error": j.get("error")})
        if not a.no_full:
            wall, j = run_profile(a.kpilot, task, cand, a.store, ["--profiler", "ncu", "--ncu-set", "full", "--all-tools"],
                                  a.timeout)
            rec["full"] = {"kpilot_wall_s": wall, "ncu_wall_s": j.get("profiler_wall_s"), "top": top_of(j),
                           "error": j.get("error")}
        records.append(rec)
        walls = [r["wall_s"] for r in rec["runs"]]
        med = statistics.median(walls) if walls else float("nan")
        full = rec.get("full", {}).get("ncu_wall_s")
        ratio = f"{med / full:.2f}" if full else "-"
        print(f"{os.path.basename(cand):32} profile median {med:6.2f} s (first {first:5.2f} s)  "
              f"ncu --set full {full if full is not None else float('nan'):6.2f} s  ratio {ratio}", flush=True)
        last = rec["runs"][-1] if rec["runs"] else {}
        print("   steps", json.dumps(last.get("steps_s")), flush=True)
        print("   eval runner", json.dumps(last.get("eval_timeline_s")), flush=True)
        info = last.get("profiler_info") or {}
        print("   counters runner", json.dumps(info.get("runner_timeline_s")), "setup", json.dumps(info.get("setup_steps_s")),
              flush=True)
    with open(os.path.join(a.out, "profile_cost.json"), "w") as f:
        json.dump({"records": records}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
