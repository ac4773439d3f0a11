#!/usr/bin/env bash
# A GPU check that cards mined by `kpilot lineage` apply to a different task: the four
# cards bench/lineage_h200_check.sh mines from the row_softmax expert (CARDS_DIR) are loaded into
# `kpilot optimize examples/cuda/layernorm` with the llm: generator, through the local scripted
# server (no live endpoint is reachable from the GPU machine). The server answers with
# bench/applycards/layernorm/script.json: a layernorm kernel applying row-per-block-coalesced and
# two-level-block-reduce to the naive reference, then one adding row-softmax-float4 — each reply
# naming them on its "Applied skills:" line. The harness evaluates and gates them for real (paired
# promotion on the 8192x4096 workload); the run records which cards were offered to each
# expansion and which each candidate applied, and `kpilot skills stats` shows their usage rows.
#
#   bench/applycards_h200_check.sh CARDS_DIR [OUT_DIR]     (from the repo root, .stage/ carried)
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.stage/lib:${LD_LIBRARY_PATH:-}
K=$PWD/.stage/bin/kpilot
SERVER=$PWD/.stage/bin/fake_llm_server
CARDS=${1:?usage: bench/applycards_h200_check.sh CARDS_DIR [OUT_DIR]}
OUT=${2:-${OUT:-/tmp/kpilot-out}}
mkdir -p "$OUT"
TASK=examples/cuda/layernorm
STORE=/tmp/kp-applycards
rm -rf "$STORE"
port_file=$(mktemp)
"$SERVER" --once --port-file "$port_file" --script bench/applycards/layernorm/script.json > "$OUT/applycards_server.log" 2>&1 &
server=$!
for _ in $(seq 50); do [[ -s $port_file ]] && break; sleep 0.1; done
base=$(cat "$port_file")
echo "===== kpilot optimize $TASK with the mined cards ($CARDS: $(ls "$CARDS" | tr '\n' ' '))"
timeout 300 "$K" optimize "$TASK" --from "$TASK/reference.cu" --skills "$CARDS" --workload 8192x4096 \
  --generator "llm:openai-compatible:scripted@$base" --budget 3 --drafts 1 --in-flight 1 --store "$STORE" --json \
  > "$OUT/applycards.json" 2> "$OUT/applycards.log"
echo "exit $?"
kill $server 2>/dev/null; wait $server 2>/dev/null
grep -E '"event":"(evaluated|promote|stop)"' "$OUT/applycards.log" | cut -c1-400
python3 - "$STORE/kpilot.db" "$OUT/applycards.json" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for kind, p in db.execute("select kind, payload_json from run_events where kind in ('proposal','evaluated') order by rowid"):
    j = json.loads(p)
    print(kind, "|", (j.get("summary") or "")[:90], "| offered:", j.get("skills_offered"), "| applied:", j.get("skills_applied"),
          "| speedup:", j.get("speedup"))
try:
    r = json.load(open(sys.argv[2]))
    final = r.get("final") or {}
    print("best: node %s, %s× the naive reference (final re-evaluation, %s; stop: %s)"
          % (r.get("best_node"), final.get("speedup_geomean"), (final.get("verdict") or {}).get("kind"), r.get("stop_reason")))
except Exception as e:
    print("no JSON result:", e)
PY
"$K" skills stats --store "$STORE" 2>&1 | head -40
