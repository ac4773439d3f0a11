cd /work/main
tag=$1; shift
out=/tmp/tune/$tag; mkdir -p $out
python3 bench/search_efficiency.py /tmp/gemm_bf16.json --task examples/cuda/gemm_bf16 --policies mcts --seeds 100 --max-fraction 0.1 --jobs 2 --out $out/gemm_bf16 --optimize-arg=--workload --optimize-arg=4096 --optimize-arg=--calibration --optimize-arg=bench/spaces/real/h200_calibration.json "$@" > /dev/null 2>&1
python3 bench/search_efficiency.py /tmp/row_softmax.json --task examples/cuda/row_softmax --policies mcts --seeds 100 --max-fraction 0.1 --jobs 2 --out $out/row_softmax --optimize-arg=--workload --optimize-arg=8192x4096 --optimize-arg=--calibration --optimize-arg=bench/spaces/real/h200_calibration.json "$@" > /dev/null 2>&1
