#!/bin/bash
# usage: tune.sh TAG SEEDS [POLICIES]  (env passes through)
cd /work/main
tag=$1; seeds=${2:-20}; pol=${3:-mcts}
out=/tmp/tune/$tag; mkdir -p $out
for s in 1 2 3 4 5 6; do
  python3 bench/search_efficiency.py /tmp/synth/s$s.json --policies $pol --seeds $seeds --max-fraction 0.1 --jobs 2 --out $out/s$s > /dev/null 2>&1
done
python3 bench/search_efficiency.py /tmp/gemm_bf16.json --task examples/cuda/gemm_bf16 --policies $pol --seeds $((seeds*2)) --max-fraction 0.1 --jobs 2 --out $out/gemm_bf16 --optimize-arg=--workload --optimize-arg=4096 --optimize-arg=--calibration --optimize-arg=bench/spaces/real/h200_calibration.json > /dev/null 2>&1
python3 bench/search_efficiency.py /tmp/row_softmax.json --task examples/cuda/row_softmax --policies $pol --seeds $((seeds*2)) --max-fraction 0.1 --jobs 2 --out $out/row_softmax --optimize-arg=--workload --optimize-arg=8192x4096 --optimize-arg=--calibration --optimize-arg=bench/spaces/real/h200_calibration.json > /dev/null 2>&1
for d in $out/*/; do echo "$(basename $d): $(grep -E '^\| kpilot [a-z]+ \|' $d/results.md | sed 's/|/ /g' | awk '{print $2, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15}' | tr '\n' ';')"; done
