#!/usr/bin/env bash
# Which sandbox parts let CUDA initialize on this machine (run on the GPU machine with .stage):
# the cuda default (all but the PID namespace), each part alone, the PID namespace, and none.
export LD_LIBRARY_PATH=$PWD/.stage/lib:${LD_LIBRARY_PATH:-}
getent passwd kpilot-sandbox >/dev/null || useradd --system --no-create-home --shell /usr/sbin/nologin kpilot-sandbox
for sb in "all" "net" "mount" "user" "seccomp" "pid" "pid,net,mount,user,seccomp" "none"; do
  printf '%-14s ' "$sb"
  KPILOT_SANDBOX=$sb .stage/bin/kpilot eval examples/cuda/vector_add examples/cuda/vector_add/reference.cu \
    --no-time --no-store --workload 1000003 2>&1 | grep -E "^verdict|cannot|kpilot:" | grep -v evaluating | head -2 | tr '\n' ' '
  echo
done
