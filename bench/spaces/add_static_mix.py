#!/usr/bin/env python3
"""Adds each kernel's SASS instruction mix to a space file measured before `kpilot sweep` stored
one, so that replays get the static findings a live run gets (docs/sweep.md).

  kpilot sweep TASK CANDIDATE --compile-only --arch sm_90a --workload W --out compiled.json
  python3 bench/spaces/add_static_mix.py MEASURED.json.gz compiled.json OUT.json.gz

The compile-only sweep compiles the same candidate over the same params, here. A mix is copied
only where that config's ptxas report (the registers, shared memory, stack and spills of every
kernel) equals the measured one's: the same device code. The object hashes cannot be compared,
because the host compiler differs between machines. The script prints how many configs got
their mix and why the others did not, and exits 1 when none did.
"""
import gzip
import json
import sys

RESOURCE_KEYS = ("registers", "shared_bytes", "stack_bytes", "spill_store_bytes", "spill_load_bytes")


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def key(params):
    return tuple(sorted(params.items()))


def main(argv):
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    measured, compiled = load(argv[1]), load(argv[2])
    if measured.get("task") != compiled.get("task"):
        print("%s is of task %r and %s of %r" % (argv[1], measured.get("task"), argv[2], compiled.get("task")),
              file=sys.stderr)
        return 2
    by_params = {key(c["params"]): c for c in compiled["configs"]}
    added, missing, differs, no_mix = 0, 0, 0, 0
    for c in measured["configs"]:
        other = by_params.get(key(c["params"]))
        if other is None:
            missing += 1
            continue
        mine, theirs = c.get("resources") or [], other.get("resources") or []
        if len(mine) != len(theirs) or any(
                a.get("kernel") != b.get("kernel") or any(a.get(k) != b.get(k) for k in RESOURCE_KEYS)
                for a, b in zip(mine, theirs)):
            differs += 1
            continue
        if not all("mix" in b for b in theirs) or not theirs:
            no_mix += 1
            continue
        for a, b in zip(mine, theirs):
            a["mix"] = b["mix"]
        added += 1
    measured["static_mix"] = {"from": compiled.get("toolchain"), "configs": added}
    with gzip.open(argv[3], "wt") as f:
        json.dump(measured, f, separators=(",", ":"))
    print("%s: mix added to %d of %d configs (%d not in the compiled sweep, %d with other ptxas resources, "
          "%d without SASS)" % (argv[3], added, len(measured["configs"]), missing, differs, no_mix))
    return 0 if added else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
