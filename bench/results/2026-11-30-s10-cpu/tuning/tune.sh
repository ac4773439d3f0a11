#!/bin/bash
# usage: [EXTRA="--optimize-arg=..."] [POLICY=random] tune.sh TAG SEEDS [SPACES...]  (env passes through)  — all at 10% of the space, mcts unless POLICY says otherwise
# EXTRA (added in session 11) passes kpilot optimize flags, e.g. --footprints off.
# POLICY (session 12) picks the policy replayed (default mcts); the binary is copied to /tmp/tune/TAG/kpilot first,
# so a rebuild during the run does not change it.
# Inputs, made once:
#   for s in 1 2 3 4 5 6; do python3 bench/spaces/synthetic/make_space.py --seed $s --out /tmp/synth/s$s.json; done
#   zcat bench/spaces/real/gemm_bf16_space.json.gz > /tmp/gemm_bf16.json   (row_softmax likewise)
#   zcat bench/spaces/real/conv2d_space.json.gz > /tmp/new/conv2d.json     (gauss_sum likewise)
# Summary of tags: python3 summ.py TAG...
cd "$(dirname "$0")" && cd "$(git rev-parse --show-toplevel)"
tag=$1; seeds=$2; shift 2
policy=${POLICY:-mcts}
mkdir -p /tmp/tune/$tag && cp build/bin/kpilot /tmp/tune/$tag/kpilot
kp="--kpilot /tmp/tune/$tag/kpilot"
spaces=${*:-s1 s2 s3 s4 s5 s6 gemm_bf16 row_softmax conv2d gauss_sum}
cal="--optimize-arg=--calibration --optimize-arg=bench/spaces/real/h200_calibration.json"
for s in $spaces; do
  out=/tmp/tune/$tag/$s
  case $s in
    s?) python3 bench/search_efficiency.py /tmp/synth/$s.json --policies $policy $kp --seeds $seeds --max-fraction 0.1 --jobs 2 --out $out $EXTRA ;;
    gemm_bf16) python3 bench/search_efficiency.py /tmp/gemm_bf16.json --task examples/cuda/gemm_bf16 --policies $policy $kp --seeds $seeds --max-fraction 0.1 --jobs 2 --out $out $EXTRA --optimize-arg=--workload --optimize-arg=4096 $cal ;;
    row_softmax) python3 bench/search_efficiency.py /tmp/row_softmax.json --task examples/cuda/row_softmax --policies $policy $kp --seeds $seeds --max-fraction 0.1 --jobs 2 --out $out $EXTRA --optimize-arg=--workload --optimize-arg=8192x4096 $cal ;;
    *) python3 bench/search_efficiency.py /tmp/new/$s.json --task bench/spaces/tuning/$s --policies $policy $kp --seeds $seeds --max-fraction 0.1 --jobs 2 --out $out $EXTRA $cal ;;
  esac > /dev/null 2>&1
  echo "$s: $(grep -E "^\| kpilot $policy \|" $out/results.md | sed 's/|/ /g' | awk '{print $6, $7, $8, $9, $10, $11, $12, $13, $14, $15}')"
done
