#!/usr/bin/env bash
# The main job on bundled examples: evaluate a hand-optimized host candidate against its naive
# reference, and, when this machine has a GPU, a cuda candidate too.
set -euo pipefail
cd "$(dirname "$0")/.."
kpilot=build/bin/kpilot
"$kpilot" eval examples/host/sgemm examples/host/sgemm/candidates/blocked_omp.cpp
if "$kpilot" doctor --json | python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["gpus"] else 1)'; then
  "$kpilot" eval examples/cuda/sgemm examples/cuda/sgemm/candidates/register_tiled.cu
else
  echo "demo: no GPU here — compiling a cuda example instead (kpilot eval --compile-only)"
  "$kpilot" eval examples/cuda/sgemm examples/cuda/sgemm/candidates/register_tiled.cu --compile-only
fi
