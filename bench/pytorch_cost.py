#!/usr/bin/env python3
"""The cost of one candidate evaluation on a PyTorch-defined task, by path.

For each problem of the team's KernelBench-style suite that has both candidate forms, evaluates
  - the KernelBench form: candidates/<stem>/model_new.py (a ModelNew whose CUDA is built by
    torch.utils.cpp_extension.load_inline inside the worker), and
  - the native form: candidates/<stem>/native.cu (nvcc to a shared object, bound by the worker),
each with `kpilot eval PROBLEM CANDIDATE --json` in a fresh store (so nvcc's object cache is
empty) and reports where the wall time went:
  compile  load_inline's build (the worker's candidate set-up) | nvcc (kpilot's compile step)
  check    the correctness trials with the reference's calls and kpilot's exploit checks
  time     the timing procedure (default: paired with eager until the CIs are tight)
  total    kpilot eval's whole wall time (worker start and torch import included)
load_inline caches its builds under ~/.cache/torch_extensions by module name: only the first run
on a machine is a fresh build, which `fresh` says (a build under 5 s is taken as a cache hit).

  python3 bench/pytorch_cost.py --kpilot .stage/bin/kpilot [--problems 1_ReLU,4_LayerNorm] [--out F.json]
"""

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

SUITE = "examples/kernelbench"


def evaluate(kpilot, problem, candidate, timeout):
    store = tempfile.mkdtemp(prefix="kp-cost-")
    t0 = time.perf_counter()
    p = subprocess.run([kpilot, "eval", problem, candidate, "--json", "--store", store],
                       capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - t0
    try:
        j = json.loads(p.stdout)
    except ValueError:
        return {"error": "exit %d: %s" % (p.returncode, p.stderr[-400:]), "wall_s": wall}
    d = j.get("run_details") or {}
    native = candidate.endswith(".cu")
    compile_s = j["wall_s"]["compile"] if native else d.get("candidate_setup_s", 0.0)
    return {"verdict": j["verdict"]["kind"], "speedup": j.get("speedup_geomean"),
            "compile_s": compile_s, "nvcc_cache_hit": j["compile"]["cache_hit"] if native else None,
            "setup_s": d.get("candidate_setup_s"), "check_s": d.get("check_s"), "time_s": d.get("timing_s"),
            "worker_s": j["wall_s"]["run"], "total_s": j["wall_s"]["total"], "wall_s": wall}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kpilot", default="build/bin/kpilot")
    ap.add_argument("--problems", default="1_ReLU,4_LayerNorm", help="comma-separated stems with a model_new.py")
    ap.add_argument("--timeout", type=float, default=400)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    rows = []
    for stem in a.problems.split(","):
        problem = glob.glob(os.path.join(SUITE, "level*", stem + ".py"))
        cand_dir = os.path.join(SUITE, "candidates", stem)
        if not problem or not os.path.exists(os.path.join(cand_dir, "model_new.py")):
            print("%s: no problem or no model_new.py — skipped" % stem, file=sys.stderr)
            continue
        for form, cand in (("load_inline", "model_new.py"), ("native", "native.cu")):
            r = evaluate(a.kpilot, problem[0], os.path.join(cand_dir, cand), a.timeout)
            r.update({"problem": stem, "path": form})
            if form == "load_inline" and "compile_s" in r:
                r["fresh"] = r["compile_s"] > 5
            rows.append(r)
            print(json.dumps(r), flush=True)
    print("\n| problem | path | verdict | compile s | check s | time s | total s |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print("| %s | %s | error: %s | | | | |" % (r["problem"], r["path"], r["error"][:80]))
            continue
        f = lambda v: "—" if v is None else "%.2f" % v
        print("| %s | %s | %s | %s | %s | %s | %s |" % (r["problem"], r["path"], r["verdict"], f(r["compile_s"]),
                                                       f(r["check_s"]), f(r["time_s"]), f(r["total_s"])))
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
