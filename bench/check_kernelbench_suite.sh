#!/usr/bin/env bash
# Compile check of the team's KernelBench-style suite (examples/kernelbench/): every native
# candidate (candidates/<stem>/*.cu) is built with nvcc the way kpilot builds a cuda candidate,
# for its #ifndef defaults and for the corners of the param space its leading `kpilot-params`
# comment declares; every model_new.py is parsed; every candidates/<stem>/ names a problem.
# Builds run one at a time (the development machine has 2 shared cores).
#
#   bench/check_kernelbench_suite.sh [--quick | --all] [--problems GLOB] [--keep DIR]
#
#   (default)  defaults, all-min, all-max, and each param at its min and max with the others
#              at their defaults (a config that breaks a constraint is replaced by the nearest
#              valid one, counted in steps along each param's list)
#   --quick    defaults, all-min, all-max only
#   --all      every valid config (slow: the GEMM spaces have ~200)
#   --problems shell glob on the problem stem (e.g. '1_*' or '*Softmax*')
#   --keep DIR keep the built .so files there (else a temporary folder, removed)
#
# Environment: NVCC (default nvcc), ARCH (default sm_90a), PYTHON (default python3). Run from the
# repository root. Exit status 1 when anything failed; the failed builds' logs are printed.
set -uo pipefail
mode=corners
glob='*'
keep=
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) mode=quick ;;
    --all) mode=all ;;
    --problems) glob="$2"; shift ;;
    --keep) keep="$2"; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
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

fail=0
builds=0
start=$(date +%s)
for dir in "$SUITE"/candidates/*/; do
  stem=$(basename "$dir")
  # shellcheck disable=SC2053
  [[ $stem == $glob ]] || continue
  if ! ls "$SUITE"/level*/"$stem".py > /dev/null 2>&1; then
    echo "FAIL $stem: no problem file $SUITE/level*/$stem.py"; fail=1
  fi
  for model_new in "$dir"model_new*.py; do
    [[ -f $model_new ]] || continue
    if "$PYTHON" -c 'import ast, sys; t = ast.parse(open(sys.argv[1]).read());
assert any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in t.body), "no class ModelNew"' "$model_new"; then
      echo "ok   $model_new parses, defines ModelNew"
    else
      echo "FAIL $model_new"; fail=1
    fi
  done
  for cu in "$dir"*.cu; do
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
