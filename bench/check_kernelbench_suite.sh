#!/usr/bin/env bash
# Compile check of the team's KernelBench-style suite (examples/kernelbench/): every native
# candidate (candidates/<stem>/*.cu) is built with nvcc the way kpilot builds a cuda candidate,
# for its #ifndef defaults and for the corners of the param space its leading `kpilot-params`
# comment declares; every model_new.py is parsed; every candidates/<stem>/ names a problem.
# Builds run one at a time (the development machine has 2 shared cores).
#
#   bench/check_kernelbench_suite.sh [--quick | --all] [--problems GLOB] [--keep DIR] [--run [--time] [--model-new]]
#
#   (default)  defaults, all-min, all-max, and each param at its min and max with the others
#              at their defaults (a config that breaks a constraint is replaced by the nearest
#              valid one, counted in steps along each param's list)
#   --quick    defaults, all-min, all-max only
#   --all      every valid config (slow: the GEMM spaces have ~200)
#   --problems shell glob on the problem stem (e.g. '1_*' or '*Softmax*')
#   --keep DIR keep the built .so files there (else a temporary folder, removed)
#   --run      (GPU machine) also run every built object through kpilot's worker against the
#              problem's Model (python/kpilot_torch, `run` with candidate kind native, seeds 1 and 2,
#              kpilot's exploit checks): prints the verdict; --quick --run keeps it to ~50 runs
#   --time     with --run: also time it (the worker's default procedure, capped at 2 s) and print
#              the median speedup over eager
#   --model-new with --run: also run each model_new.py (load_inline: about a minute each)
#
# Environment: NVCC (default nvcc), ARCH (default sm_90a), PYTHON (default python3; with --run, one
# with torch and CUDA), DEVICE (default cuda:0, for --run). Run from the
# repository root. Exit status 1 when anything failed; the failed builds' logs are printed.
set -uo pipefail
mode=corners
glob='*'
keep=
run=
timeit=
model_new_run=
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) mode=quick ;;
    --all) mode=all ;;
    --problems) glob="$2"; shift ;;
    --keep) keep="$2"; shift ;;
    --run) run=1 ;;
    --time) timeit=1 ;;
    --model-new) model_new_run=1 ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "check_kernelbench_suite: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
NVCC=${NVCC:-nvcc}
ARCH=${ARCH:-sm_90a}
PYTHON=${PYTHON:-python3}
SUITE=examples/kernelbench
[[ -d $SUITE && -f include/kpilot/kernel.h ]] || { echo "run from the kpilot repository root" >&2; exit 2; }
out=${keep:-$(mktemp -d)}
mkdir -p "$out"
[[ -z $keep ]] && trap 'rm -rf "$out"' EXIT

# Prints one line per config to build: `NAME=VALUE NAME=VALUE ...` (an empty line: the defaults).
configs() {
  "$PYTHON" - "$1" "$mode" <<'PY'
import itertools, json, re, sys
path, mode = sys.argv[1], sys.argv[2]
src = open(path).read()
m = re.match(r'\s*/\*\s*kpilot-params\s*\n(.*?)\*/', src, re.S)
print("")  # the #ifndef defaults
if not m:
    sys.exit(0)
params, constraints = {}, []
for line in m.group(1).splitlines():
    line = line.strip()
    if not line or line.startswith("#"):
        continue
    name, _, value = line.partition("=")
    name, value = name.strip(), json.loads(value.strip())
    if name == "constraints":
        constraints = value
    else:
        params[name] = value
def ok(cfg):
    for c in constraints:
        expr = c.replace("&&", " and ").replace("||", " or ").replace("^", "**")
        if not eval(expr, {"__builtins__": {}, "min": min, "max": max}, dict(cfg)):
            return False
    return True
names = list(params)
valid = [dict(zip(names, vals)) for vals in itertools.product(*(params[n] for n in names))]
valid = [c for c in valid if ok(c)]
if not valid:
    print("ERROR no config satisfies the constraints", file=sys.stderr)
    sys.exit(1)
defaults = {}
for n in names:
    d = re.search(r'#ifndef\s+%s\s*\n\s*#define\s+%s\s+(\S+)' % (n, n), src)
    if not d:
        print("ERROR param %s has no #ifndef default" % n, file=sys.stderr)
        sys.exit(1)
    v = json.loads(d.group(1))
    if v not in params[n]:
        print("ERROR default %s=%s is not in %s" % (n, v, params[n]), file=sys.stderr)
        sys.exit(1)
    defaults[n] = v
if not ok(defaults):
    print("ERROR the defaults break a constraint: %s" % defaults, file=sys.stderr)
    sys.exit(1)
def nearest(target):
    idx = {n: params[n].index(target[n]) for n in names}
    return min(valid, key=lambda c: sum(abs(params[n].index(c[n]) - idx[n]) for n in names))
if mode == "all":
    wanted = valid
else:
    wanted = [{n: params[n][0] for n in names}, {n: params[n][-1] for n in names}]
    if mode == "corners":
        for n in names:
            for v in (params[n][0], params[n][-1]):
                c = dict(defaults)
                c[n] = v
                wanted.append(c)
seen = {tuple(sorted(defaults.items()))}
for c in wanted:
    c = c if ok(c) else nearest(c)
    key = tuple(sorted(c.items()))
    if key in seen:
        continue
    seen.add(key)
    print(" ".join("%s=%s" % (n, c[n]) for n in names))
PY
}


# Runs one candidate through the worker: worker_run PROBLEM KIND FILE [OBJECT]; prints one line.
worker_run() {
  "$PYTHON" - "$@" "${timeit:-0}" <<'PY'
import json, os, subprocess, sys, tempfile
problem, kind, path = [os.path.abspath(a) if i != 1 else a for i, a in enumerate(sys.argv[1:4])]
obj = os.path.abspath(sys.argv[4]) if len(sys.argv) > 5 else None
timeit = sys.argv[-1] == "1"
cand = {"kind": kind, "path": path}
if obj:
    cand["object"] = obj
req = {"version": 1, "mode": "run", "format": "kernelbench", "problem": problem,
       "workloads": [{"name": "default"}], "candidate": cand, "baseline": {"kind": "reference"},
       "seeds": [1, 2], "time": timeit, "device": os.environ.get("DEVICE", "cuda:0"), "timeout_s": 600,
       "timing": {"mode": "default", "warmup": 3, "min_reps": 10, "max_reps": 200, "max_seconds": 2.0,
                  "target_rel_ci": 0.02}}
with tempfile.TemporaryDirectory() as tmp:
    rp = os.path.join(tmp, "request.json")
    json.dump(req, open(rp, "w"))
    env = dict(os.environ, PYTHONPATH=os.path.abspath("python"))
    p = subprocess.run([sys.executable, "-m", "kpilot_torch.worker", "run", rp], cwd=tmp, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
lines = [l for l in p.stdout.splitlines() if l.strip()]
try:
    r = json.loads(lines[-1])
except Exception:
    print("FAIL worker printed no result (rc %d): %s" % (p.returncode, p.stderr[-600:].replace("\n", " | ")))
    sys.exit(1)
status = r.get("status")
extra = ""
for t in r.get("timings") or []:
    c, b = sorted(t.get("candidate_ms") or []), sorted(t.get("baseline_ms") or [])
    if c and b:
        cm, bm = c[len(c) // 2], b[len(b) // 2]
        extra = " %.4f ms vs eager %.4f ms: %.2fx" % (cm, bm, bm / cm)
worst = max((ch.get("max_abs_error") or 0 for ch in r.get("checks") or []), default=0)
print("%s %s%s (max abs error %.3g)%s" % ("ok  " if status == "passed" else "FAIL", status, extra, worst,
      "" if status == "passed" else ": " + str(r.get("message", ""))[:400]))
sys.exit(0 if status == "passed" else 1)
PY
}

fail=0
builds=0
start=$(date +%s)
for dir in "$SUITE"/candidates/*/; do
  stem=$(basename "$dir")
  # shellcheck disable=SC2053
  [[ $stem == $glob ]] || continue
  problem=$(ls "$SUITE"/level*/"$stem".py 2> /dev/null | head -n 1)
  if [[ -z $problem ]]; then
    echo "FAIL $stem: no problem file $SUITE/level*/$stem.py"; fail=1
  fi
  for model_new in "$dir"model_new*.py; do
    [[ -f $model_new ]] || continue
    if "$PYTHON" -c 'import ast, sys; t = ast.parse(open(sys.argv[1]).read());
assert any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in t.body), "no class ModelNew"' "$model_new"; then
      echo "ok   $model_new parses, defines ModelNew"
      if [[ -n $run && -n $model_new_run ]]; then
        line=$(worker_run "$problem" model_new "$model_new")
        echo "     run: $line"
        [[ $line == FAIL* ]] && fail=1
      fi
    else
      echo "FAIL $model_new"; fail=1
    fi
  done
  for cu in "$dir"*.cu "$dir"better/*.cu; do
    [[ -f $cu ]] || continue
    if ! list=$(configs "$cu"); then
      echo "FAIL $cu: its kpilot-params block"; fail=1; continue
    fi
    n=0
    while IFS= read -r cfg; do
      defs=()
      for kv in $cfg; do defs+=("-D$kv"); done
      so="$out/$stem-$(basename "$cu" .cu)-$n.so"
      log="$so.log"
      if "$NVCC" -std=c++17 -arch="$ARCH" -O3 -shared -Xcompiler -fPIC -I include "${defs[@]}" "$cu" -o "$so" > "$log" 2>&1 \
         && nm -D "$so" | grep ' T kpilot_launch$' > /dev/null; then
        echo "ok   $cu ${cfg:-(defaults)}"
        if [[ -n $run && -n $problem ]]; then
          line=$(worker_run "$problem" native "$cu" "$so")
          echo "     run: $line"
          [[ $line == FAIL* ]] && fail=1
        fi
      else
        echo "FAIL $cu ${cfg:-(defaults)}"; cat "$log"; fail=1
      fi
      if grep -q -i 'warning' "$log"; then echo "     (warnings)"; grep -i -A2 'warning' "$log" | head -6; fi
      n=$((n + 1)); builds=$((builds + 1))
    done <<< "$list"
  done
done
echo "check_kernelbench_suite: $builds builds in $(( $(date +%s) - start )) s, mode $mode: $([[ $fail == 0 ]] && echo all passed || echo FAILURES)"
exit $fail
