#!/usr/bin/env bash
# A GPU check of `kpilot lineage`: walk examples/cuda/row_softmax's lineage_expert.cu
# (one block per row, float4 loads, online softmax, two-level block reduction) back to the task's
# reference through the local scripted server (no live endpoint is reachable from the GPU
# machine). The server answers with bench/lineage/row_softmax/script.json: for each of the four
# steps a simplification written by hand, its confirmation citing the changed lines, and the
# rebuild (the pre-removal kernel). The harness gates each step for real: the simplification must
# pass, and the rebuild must reach >= 0.99 of the pre-removal speed, paired, in each of 3 trials.
# The mined cards land in OUT_DIR/cards; they carry the measured effects.
#
#   bench/lineage_h200_check.sh [OUT_DIR]        (from the repo root, .stage/ carried)
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.stage/lib:${LD_LIBRARY_PATH:-}
K=$PWD/.stage/bin/kpilot
SERVER=$PWD/.stage/bin/fake_llm_server
OUT=${1:-${OUT:-/tmp/kpilot-out}}
mkdir -p "$OUT"
TASK=examples/cuda/row_softmax
port_file=$(mktemp)
"$SERVER" --once --port-file "$port_file" --script bench/lineage/row_softmax/script.json > "$OUT/lineage_server.log" 2>&1 &
server=$!
for _ in $(seq 50); do [[ -s $port_file ]] && break; sleep 0.1; done
base=$(cat "$port_file")
echo "===== kpilot lineage ($base)"
timeout 570 "$K" lineage "$TASK" "$TASK/candidates/lineage_expert.cu" --generator "llm:openai-compatible:scripted@$base" \
  --out "$OUT/cards" --store /tmp/kp-lineage --trials 3 --json > "$OUT/lineage.json" 2> "$OUT/lineage.log"
echo "exit $?"
cat "$OUT/lineage.log"
python3 - "$OUT/lineage.json" <<'PY'
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except Exception as e:
    print("no JSON:", e); sys.exit(0)
print("stop:", j["stop_reason"], "-", j["stop_detail"])
print("expert speedup over the reference: %.3f" % j["expert_speedup"])
for s in j["steps"]:
    print("step %d: %-18s effect %.3fx [%.3f, %.3f]  round trip %s" % (s["step"], s["feature"], s["effect"], s["ci"][0], s["ci"][1], s["round_trip"]))
for r in j["rejected"]:
    print("rejected attempt %d at %s: %s" % (r["attempt"], r["stage"], r["reason"]))
print("cards:", *j["cards"], sep="\n  ")
PY
kill $server 2>/dev/null; wait $server 2>/dev/null
for f in "$OUT"/cards/*/SKILL.md; do echo "----- $f"; sed -n '/^effect:/,/^risks:/p' "$f"; done
