#!/usr/bin/env python3
"""Where one torch worker run spends its time: runs `kpilot_torch.worker run` in this process
under cProfile for a KernelBench problem (reference as candidate, eager or compile baseline) and
prints the run's own step seconds (details.*_s) and the functions with the most cumulative time.

  python3 bench/worker_profile.py PROBLEM.py [--timing kernelbench|default] [--baseline reference|compile]
                                  [--device cuda:0] [--top 30]
"""

import argparse
import cProfile
import io
import json
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))


def main():
    t_start = time.perf_counter()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("problem")
    ap.add_argument("--timing", default="kernelbench", choices=["default", "kernelbench", "flashinfer"])
    ap.add_argument("--baseline", default="reference", choices=["reference", "compile"])
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--top", type=int, default=30)
    a = ap.parse_args()
    request = {"version": 1, "mode": "run", "format": "kernelbench", "problem": str(Path(a.problem).resolve()),
               "workloads": [{"name": "default"}], "candidate": {"kind": "reference"},
               "baseline": {"kind": a.baseline}, "seeds": [11, 12, 13],
               "check_trials": 5 if a.timing == "kernelbench" else 3, "time": True,
               "timing": {"mode": a.timing, "warmup": 3, "min_reps": 10, "max_reps": 200, "max_seconds": 2,
                          "target_rel_ci": 0.01},
               "device": a.device, "lock_dir": tempfile.gettempdir(), "timeout_s": 600}
    from kpilot_torch import worker
    profile = cProfile.Profile()
    profile.enable()
    channel = worker.ReplyChannel()  # fd 1 goes to its capture file until restored below
    reply = worker.run(request, channel)
    profile.disable()
    sys.stdout.flush()
    os.dup2(channel.real_stdout, 1)
    d = reply.get("details", {})
    print("status %s: %s" % (reply.get("status"), (reply.get("message") or "")[:300]))
    print("wall %.2f s in this process (from the script's start %.2f s)" % (reply.get("wall_s", 0),
                                                                         time.perf_counter() - t_start))
    for k in sorted(d):
        if k.endswith("_s") and isinstance(d[k], (int, float)):
            print("  %-20s %8.3f" % (k, d[k]))
    print("  input_sets", json.dumps(d.get("input_sets")), "reference_flaws", json.dumps(d.get("reference_flaws")))
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(a.top)
    print("\n".join(l for l in out.getvalue().splitlines() if l.strip())[:12000])


if __name__ == "__main__":
    main()
