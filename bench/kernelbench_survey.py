#!/usr/bin/env python3
"""Which KernelBench problems the torch worker can describe, and what they weigh.

For every problem of a KernelBench checkout (level1/ … level3/), asks kpilot's torch worker to
describe it (`python -m kpilot_torch.worker describe`, as `kpilot bench` does when it loads a
suite): the inputs, parameters, scalars and outputs with their dtypes and shapes, learned from a
meta-device run where torch allows it, else from a CPU run. Each problem runs in a process of its
own under a memory cap and a time limit. Prints a table by level (described on meta, on the CPU,
failed), the input kinds found (dtypes, scalars, tuples of outputs), the heaviest problems by
bytes per call, and every failure with its reason; --json writes the per-problem records.

  python3 bench/kernelbench_survey.py [KERNELBENCH_DIR] --python .venv-torch/bin/python --jobs 2
"""

import argparse
import collections
import concurrent.futures
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DIR = ROOT.parent / "shared" / "datasets" / "kernelbench" / "KernelBench"


def problems(root, levels):
    for level in sorted(root.glob("level*")):
        if levels and level.name.replace("level", "") not in levels:
            continue
        for p in sorted(level.glob("*.py"), key=lambda p: (int(p.name.split("_")[0]) if p.name[0].isdigit() else 0, p.name)):
            yield level.name, p


def describe(python, problem, timeout_s, mem_gib):
    def cap():
        limit = int(mem_gib * (1 << 30))
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    with tempfile.TemporaryDirectory(prefix="kb-survey-") as tmp:
        req = Path(tmp) / "request.json"
        req.write_text(json.dumps({"version": 1, "mode": "describe", "format": "kernelbench", "problem": str(problem)}))
        env = dict(os.environ, PYTHONPATH=str(ROOT / "python"), CUDA_VISIBLE_DEVICES="")
        try:
            p = subprocess.run([python, "-m", "kpilot_torch.worker", "describe", str(req)], capture_output=True,
                               text=True, timeout=timeout_s, env=env, preexec_fn=cap)
        except subprocess.TimeoutExpired:
            return {"status": "timeout", "message": "no answer in %d s" % timeout_s}
    try:
        return json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"status": "crashed", "message": "exit %d: %s" % (p.returncode, p.stderr.strip()[-300:])}


def weight(reply):
    return int(reply.get("bytes", 0) or 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", nargs="?", default=str(DEFAULT_DIR), help="a KernelBench folder (level1/ …)")
    ap.add_argument("--python", default=str(ROOT / ".venv-torch" / "bin" / "python"), help="interpreter with torch")
    ap.add_argument("--levels", default="", help="e.g. 1,2")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=120, help="seconds per problem")
    ap.add_argument("--mem-gib", type=float, default=8.0, help="address-space cap per problem")
    ap.add_argument("--json", help="write the per-problem records here")
    a = ap.parse_args()
    root = Path(a.root)
    if not root.is_dir():
        sys.exit("kernelbench_survey: %s is not a folder; give a KernelBench checkout's KernelBench/ folder" % root)
    todo = list(problems(root, [x for x in a.levels.split(",") if x]))
    if not todo:
        sys.exit("kernelbench_survey: no level*/N_*.py problems under %s" % root)
    records = []
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        futures = {pool.submit(describe, a.python, p, a.timeout, a.mem_gib): (lvl, p) for lvl, p in todo}
        for n, f in enumerate(concurrent.futures.as_completed(futures), 1):
            lvl, p = futures[f]
            r = f.result()
            records.append({"level": lvl, "problem": p.stem, "reply": r})
            print("[%d/%d] %s/%s %s" % (n, len(todo), lvl, p.stem, r.get("shapes_from") or r.get("status")),
                  file=sys.stderr, flush=True)
    records.sort(key=lambda x: (x["level"], int(x["problem"].split("_")[0])))
    table = collections.defaultdict(collections.Counter)
    kinds = collections.Counter()
    for rec in records:
        r = rec["reply"]
        ok = r.get("status") == "ok"
        table[rec["level"]][r.get("shapes_from", "?") if ok else "failed"] += 1
        if ok:
            for t in r.get("inputs", []):
                kinds["%s %s" % (t.get("role", "input"), t["dtype"])] += 1
            for s in r.get("scalars", []):
                kinds["scalar %s" % s["dtype"]] += 1
            if len(r.get("outputs", [])) > 1:
                kinds["several outputs"] += 1
    print("| level | problems | described on meta | on the CPU | failed |")
    print("|---|---:|---:|---:|---:|")
    for lvl in sorted(table):
        c = table[lvl]
        print("| %s | %d | %d | %d | %d |" % (lvl, sum(c.values()), c["meta"], c["cpu"], c["failed"]))
    print("\ninput kinds (problems with each):", ", ".join("%s %d" % kv for kv in sorted(kinds.items())))
    heavy = sorted((rec for rec in records if rec["reply"].get("status") == "ok"), key=lambda x: -weight(x["reply"]))
    print("\nheaviest per call (inputs + parameters + outputs):")
    for rec in heavy[:10]:
        print("  %s/%s %.2f GB" % (rec["level"], rec["problem"], weight(rec["reply"]) / 1e9))
    failed = [rec for rec in records if rec["reply"].get("status") != "ok"]
    if failed:
        print("\nfailed:")
        for rec in failed:
            print("  %s/%s: %s" % (rec["level"], rec["problem"], str(rec["reply"].get("message", ""))[:300].replace("\n", " | ")))
    if a.json:
        Path(a.json).write_text(json.dumps(records, indent=1))


if __name__ == "__main__":
    main()
