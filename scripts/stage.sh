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
# KPILOT_STAGE_SLURM=1 leaves them out (see below).
cutlass=$(ls -d .venv/lib/python3*/site-packages/cutlass_library/source 2>/dev/null | head -1)
if [[ -n "$cutlass" && -z "${KPILOT_STAGE_SLURM:-}" ]]; then
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
# KPILOT_STAGE_SLURM=1: Slurm's and munge's Debian packages, with the libraries they need that a
# bare GPU machine may lack, in .stage/debs for bench/gpu_session.sh's slurmgpu step (a one-node
# cluster there); without the CUTLASS headers, to stay within what a call carries.
if [[ -n "${KPILOT_STAGE_SLURM:-}" ]]; then
  mkdir -p .stage/debs
  for p in slurmctld slurmd slurm-client slurm-wlm-basic-plugins libslurm38 munge libmunge2 libhwloc15 libjson-c5 \
           liblua5.1-0 libnuma1 libyaml-0-2 libdbus-1-3; do  # libdbus: the cgroup/v2 plugin slurmd loads
    f=$(ls /var/cache/apt/archives/${p}_*_amd64.deb 2>/dev/null | head -1 || true)
    if [[ -n "$f" ]]; then cp "$f" .stage/debs/; else (cd .stage/debs && apt-get download -q "$p" >/dev/null); fi
  done
fi
du -sh .stage
