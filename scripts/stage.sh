#!/usr/bin/env bash
# Packs what the GPU machine needs into .stage/ (ignored; small enough to carry): stripped
# kpilot, kpilot-runner and the gpu-labelled test binaries, the ABI header, the torch worker
# (share/kpilot/python, by cmake --install), and the shared libraries that machine lacks
# (muparser), the CUTLASS headers. Run after a build:  scripts/stage.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
rm -rf .stage
cmake --install "$build" --prefix .stage >/dev/null
for t in cuda_eval_test adversarial_test harness_test cli_test cli_gpu_test sweep_gpu_test fake_llm_server pytorch_gpu_test; do
  [[ -x "$build/bin/$t" ]] && cp "$build/bin/$t" .stage/bin/
done
strip .stage/bin/*
mkdir -p .stage/lib
cp -L /usr/lib/x86_64-linux-gnu/libmuparser.so.2 .stage/lib/
# The scripted LLM server of the generator tests links Debian's compiled cpp-httplib.
if [[ -x .stage/bin/fake_llm_server ]]; then
  lib=$(ldd .stage/bin/fake_llm_server | awk '/libcpp-httplib/ {print $3}')
  [[ -n "$lib" ]] && cp -L "$lib" .stage/lib/
fi
# The CUTLASS/CuTe headers CUDA candidates compile against (the nvidia-cutlass wheel of .venv),
# where an installed kpilot looks for them: share/kpilot/cutlass (FindCutlass).
cutlass=$(ls -d .venv/lib/python3*/site-packages/cutlass_library/source 2>/dev/null | head -1)
if [[ -n "$cutlass" ]]; then
  mkdir -p .stage/share/kpilot/cutlass/tools/util
  cp -r "$cutlass/include" .stage/share/kpilot/cutlass/
  cp -r "$cutlass/tools/util/include" .stage/share/kpilot/cutlass/tools/util/
fi
# A real KernelBench checkout, when one sits beside the project (../shared/datasets/kernelbench):
# its problems and published timings travel with the binaries, for bench/gpu_session.sh's kb* steps.
# Only staged, never committed.
kb=../shared/datasets/kernelbench
if [[ -d $kb/KernelBench ]]; then
  mkdir -p .stage/data/kernelbench
  cp -r $kb/KernelBench $kb/results .stage/data/kernelbench/
fi
du -sh .stage
