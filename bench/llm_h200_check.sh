#!/usr/bin/env bash
# A GPU check of `kpilot optimize` on a cuda example with the LLM generator, through the
# local scripted server (no live endpoint is reachable from the GPU machine), for both wire
# formats. The server answers each request with the next kernel file, written by hand: the 16x16
# shared-memory tiled SGEMM, then the register-tiled one with float4 loads; the naive reference
# is the start (--from; the default start would be the templated register-tiled candidate). The
# loop must evaluate, profile and promote them with real speedups.
#
#   bench/llm_h200_check.sh [OUT_DIR]        (from the repo root, .stage/ carried)
#
# LLM_TASK and LLM_KERNELS (space-separated files) check another task the same way, e.g. a CUTLASS
# GEMM written as the model's answer: LLM_TASK=examples/cuda/gemm_tc
# LLM_KERNELS=examples/cuda/gemm_tc/candidates/cutlass_sm90.cu (compiled with CUTLASS on the include
# path, as any draft is). LLM_BUDGET: evaluations per run (default 3, the start included).
# LLM_GENERATORS: which to check (default "openai-compatible anthropic command").
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.stage/lib:${LD_LIBRARY_PATH:-}
K=$PWD/.stage/bin/kpilot
SERVER=$PWD/.stage/bin/fake_llm_server
OUT=${1:-${OUT:-/tmp/kpilot-out}}
mkdir -p "$OUT"
TASK=${LLM_TASK:-examples/cuda/sgemm}
read -r -a KERNELS <<< "${LLM_KERNELS:-bench/spaces/sgemm_space/baseline.cu examples/cuda/sgemm/candidates/register_tiled.cu}"
BUDGET=${LLM_BUDGET:-3}
GENERATORS=" ${LLM_GENERATORS:-openai-compatible anthropic command} "
for provider in openai-compatible anthropic; do
  [[ $GENERATORS == *" $provider "* ]] || continue
  port_file=$(mktemp)
  "$SERVER" --port-file "$port_file" "${KERNELS[@]}" > "$OUT/server_$provider.log" 2>&1 &
  server=$!
  for _ in $(seq 50); do [[ -s $port_file ]] && break; sleep 0.1; done
  base=$(cat "$port_file")  # the server writes its base URL, http://127.0.0.1:PORT/v1
  if [[ $provider == anthropic ]]; then
    spec="llm:anthropic:scripted@$base"
    export ANTHROPIC_API_KEY=test-key-not-secret
  else
    spec="llm:openai-compatible:scripted@$base"
  fi
  echo "===== $provider ($spec)"
  timeout 300 "$K" optimize "$TASK" --from "$TASK/reference.cu" --generator "$spec" --budget $BUDGET --drafts 1 --in-flight 1 --store "/tmp/kp-llm-$provider" --json \
    > "$OUT/optimize_$provider.json" 2> "$OUT/optimize_$provider.log"
  echo "exit $?"
  tail -6 "$OUT/optimize_$provider.log"
  python3 - "$OUT/optimize_$provider.json" <<'EOF'
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except Exception as e:
    print("no JSON:", e); sys.exit(0)
print({k: v for k, v in j.items() if not isinstance(v, (dict, list))})
print("generator:", j.get("generator"))
EOF
  kill $server 2>/dev/null; wait $server 2>/dev/null
done

# The command: generator, with a scripted agent writing the same kernels. Its sandbox hides the
# task folder (where a task's own candidates are) and gives it a /tmp of its own: the kernels go
# to a folder of the checkout, which it reads.
[[ $GENERATORS == *" command "* ]] || exit 0
echo "===== command"
kdir=$(mktemp -d "$PWD/.scripted-kernels.XXXXXX")
agent_kernels=()
for i in "${!KERNELS[@]}"; do
  copy="$kdir/$i-$(basename "${KERNELS[$i]}")"; cp "${KERNELS[$i]}" "$copy"; agent_kernels+=("$copy")
done
timeout 300 "$K" optimize "$TASK" --from "$TASK/reference.cu" --budget $BUDGET --drafts 1 --in-flight 1 \
  --generator "command:sh $PWD/bench/scripted_agent.sh ${agent_kernels[*]}" \
  --store /tmp/kp-llm-command --json > "$OUT/optimize_command.json" 2> "$OUT/optimize_command.log"
echo "exit $?"
grep -E '"event":"(evaluated|promote|stop)"' "$OUT/optimize_command.log" | cut -c1-300
rm -rf "$kdir"
