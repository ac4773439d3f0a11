#!/usr/bin/env bash
# Runs on the GPU machine from the repo root with .stage/ carried (scripts/stage.sh): doctor, one
# eval, the gpu-labelled tests, and figures a (stability), b (ncu agreement), c (eval cost).
# Writes logs under $OUT. Steps: all (default) or a list, e.g. `bench/gpu_session.sh eval tests`.
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.stage/lib:${LD_LIBRARY_PATH:-}
export KPILOT_TEST_SOURCE_DIR=$PWD KPILOT_TEST_BINARY_DIR=$PWD/.stage
K=$PWD/.stage/bin/kpilot
OUT=${OUT:-/tmp/kpilot-out}
mkdir -p "$OUT"
steps=${*:-doctor eval tests adversarial stability ncu cost}
SM=examples/cuda/row_softmax
for step in $steps; do
  echo "===== $step"
  case $step in
    doctor) $K doctor 2>&1 | tee "$OUT/doctor.txt" ;;
    eval) $K eval $SM $SM/candidates/block_online.cu --store /tmp/kp-store 2>&1 | tee "$OUT/eval.txt"
          $K eval $SM $SM/reference.cu --store /tmp/kp-store --timing kernelbench --workload 8192x4096 2>&1 | tail -8 ;;
    energy) $K eval $SM $SM/candidates/block_online.cu --store /tmp/kp-store --workload 8192x4096 --energy 2>&1 \
              | tee "$OUT/energy.txt" | grep -E "verdict|8192x4096|energy|warning" ;;
    modes) for m in kernelbench flashinfer; do
             $K eval $SM $SM/candidates/block_online.cu --store /tmp/kp-store --workload 8192x4096 --timing $m 2>&1 \
               | grep -E "verdict|8192x4096|workload"; done 2>&1 | tee "$OUT/modes.txt" ;;
    memo) $K eval tests/adversarial/tasks/vadd tests/adversarial/candidates/memoize_by_pointer.cu --timing kernelbench \
            --json --no-store > "$OUT/memo.json" 2>&1
          python3 -c "import json,sys; j=json.load(open(sys.argv[1])); d=j['run_details']; print(j['verdict']); print(json.dumps({k: d.get(k) for k in ('floor_ms','clocks')})); print(j['calibration']); print([(t['workload'], t['candidate']['median_ms'], t['statistic']) for t in j['timings']])" "$OUT/memo.json" ;;
    tests) timeout 420 .stage/bin/cuda_eval_test 2>&1 | tee "$OUT/cuda_eval_test.txt" | grep -vE '^\[ +(RUN|OK) +\]' | tail -45 ;;
    adversarial) [[ -x .stage/bin/adversarial_test ]] && KPILOT_ADVERSARIAL_REPORT=$OUT/adversarial.json \
                 timeout 300 .stage/bin/adversarial_test 2>&1 | tee "$OUT/adversarial.txt" | tail -45 ;;
    stability) python3 bench/stability.py --kpilot $K --runs 10 $SM $SM/candidates/block_online.cu -- --workload 8192x4096 \
                 2>&1 | tee "$OUT/stability.txt" ;;
    ncu) python3 bench/ncu_agreement.py $SM $SM/candidates/block_online.cu 8192x4096 '^SoftmaxRows$' --kpilot $K \
           2>&1 | tee "$OUT/ncu.txt" ;;
    cost) python3 bench/eval_wall.py --task examples/cuda/vector_add \
            --candidate examples/cuda/vector_add/candidates/vector_grid_stride.cu --kpilot $K --repeats 3 \
            2>&1 | tee "$OUT/cost.txt" ;;
  esac
done
