#!/usr/bin/env bash
# Which sandbox variants let CUDA initialize on this machine (run on the GPU machine with .stage).
export LD_LIBRARY_PATH=$PWD/.stage/lib:${LD_LIBRARY_PATH:-}
for sb in "pid,net,init" "pid,init" "net" "pid" "none"; do
  printf '%-14s ' "$sb"
  KPILOT_SANDBOX=$sb .stage/bin/kpilot eval examples/cuda/vector_add examples/cuda/vector_add/reference.cu \
    --no-time --no-store --workload 1000003 2>&1 | grep -E "^verdict|cannot|kpilot:" | grep -v evaluating | head -2 | tr '\n' ' '
  echo
done
