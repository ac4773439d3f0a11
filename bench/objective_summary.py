#!/usr/bin/env python3
"""Summarises one `kpilot optimize --objective ... --json` run (bench/gpu_session.sh objectives):
the result on stdout, the progress events on stderr and the exported report.json.

    objective_summary.py RESULT.json EVENTS.jsonl REPORT.json
"""
import json
import math
import sys


def main(result_path, events_path, report_path):
    res = json.load(open(result_path))
    events = [json.loads(l) for l in open(events_path) if l.startswith("{")]
    final = res["final"]
    timings = final.get("timings", [])
    energy = [t.get("energy", {}) for t in timings]
    ratios = [e["baseline_joules_per_call"] / e["joules_per_call"]
              for e in energy if e.get("joules_per_call", 0) > 0 and e.get("baseline_joules_per_call", 0) > 0]
    ratio = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else 0
    ci = final.get("speedup_geomean_ci", [0, 0])
    print(f"  objective {res.get('objective')}: {res['evaluations']} evaluations, stop {res['stop_reason']}, "
          f"best node {res['best_node']} {res['best_params']}")
    print(f"  final speedup {final['speedup_geomean']:.3f}x [{ci[0]:.3f}, {ci[1]:.3f}], "
          f"baseline/best joules per call {ratio:.3f}x")
    for e in events:
        if e.get("event") == "energy_choice":
            print(f"  energy_choice: fastest node {e['fastest']} {e['fastest_speedup']:.3f}x {e['fastest_joules']:.4g} J, "
                  f"chosen node {e['chosen']} {e['chosen_speedup']:.3f}x {e['chosen_joules']:.4g} J "
                  f"({100 * (1 - e['chosen_joules'] / e['fastest_joules']):.1f}% fewer joules)")
        if e.get("event") == "promote" and "joules_ratio" in e:
            print(f"  promote node {e['node']}: paired {e['paired_speedup']:.3f}x, joules ratio {e['joules_ratio']:.3f}, "
                  f"score at the CI's lower end {e['score_lo']:.3f}")
        if e.get("event") == "warning":
            print(f"  warning: {e.get('message')}")
    joules = [(e["node"], e.get("speedup", 0)) for e in events if e.get("event") == "evaluated"]
    print(f"  nodes evaluated: {len(joules)}")
    try:
        v = json.load(open(report_path))["verified_on"]
        gpu = v.get("gpu") or {}
        print(f"  verified on: {gpu.get('name')} driver {v.get('driver')} (CUDA {v.get('cuda_driver')}), "
              f"toolkit {v.get('toolkit')}, dtypes {json.dumps(v.get('dtypes'))}")
    except (OSError, KeyError, ValueError) as err:
        print(f"  no report: {err}")


if __name__ == "__main__":
    main(*sys.argv[1:4])
