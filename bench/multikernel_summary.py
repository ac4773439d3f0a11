#!/usr/bin/env python3
"""One line on a `kpilot profile --json` run through CUPTI: profiler, passes, ranges, or the error.

Usage: multikernel_summary.py PROFILE.json PROFILE.err
"""
import json
import sys


def main():
    out, err = sys.argv[1], sys.argv[2]
    try:
        j = json.load(open(out))
    except (OSError, ValueError):
        lines = [l.strip() for l in open(err) if l.strip()]
        print("error:", lines[-1] if lines else "(nothing on stderr)")
        return
    info = j.get("profiler_info", {})
    keys = ("passes", "passes_run", "max_ranges", "dropped_ranges", "replay", "calls_s", "range_names")
    got = {k: info[k] for k in keys if k in info}
    kernels = [(k.get("kernel", "?"), k.get("roofline", {}).get("class", "?")) for k in j.get("kernels", [])]
    note = f", note: {j['profiler_note']}" if j.get("profiler_note") else ""
    print(f"profiler {j.get('profiler')}, wall {j.get('profiler_wall_s', 0):.2f} s, {got}, kernels and classes {kernels}{note}")


main()
