#!/usr/bin/env bash
# Creates the project's Python venv (<repo>/.venv) and installs the CUDA binary tools kpilot
# takes from PyPI: cuobjdump (SASS listings) and nvdisasm, which cuobjdump runs for -sass.
# The CUDA toolkit on the machines is 13.0 without them; PyPI's oldest 13.x release is 13.2,
# which reads nvcc 13.0's sm_90a objects. The binaries land in
#   .venv/lib/python3.X/site-packages/nvidia/cu13/bin/{cuobjdump,nvdisasm}
# where kpilot's toolchain looks for them (FindCuobjdump).
# It also installs CUPTI (nvidia-cuda-cupti 13.0, matching the toolkit): the build takes the
# headers from .venv/lib/python3.X/site-packages/nvidia/cu13/include/cupti*.h (not every toolkit
# install has them), and the runner may dlopen .../nvidia/cu13/lib/libcupti.so.13 when the
# machine has no libcupti of its own.
#
# It also installs the nvidia-cutlass wheel without its dependencies, for the CUTLASS/CuTe headers
# and examples under .../site-packages/cutlass_library/source/{include,examples}.
#
# Idempotent: the venv is created only when missing, and pip skips what is installed.
# Usage: scripts/setup-venv.sh [venv-dir]   (default: <repo>/.venv)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${1:-$repo/.venv}"
python="${PYTHON:-python3}"

if [[ ! -x "$venv/bin/python" ]]; then
  "$python" -m venv "$venv"
fi

"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  nvidia-cuda-cuobjdump==13.2.86 \
  nvidia-cuda-nvdisasm==13.2.86 \
  nvidia-cuda-cupti==13.0.85
# CUTLASS/CuTe headers and examples (6 MB), what the LLM generator's search_code and read_file
# read by default (FindCutlassTrees); --no-deps: only the sources are wanted, not its Python stack.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps nvidia-cutlass==4.2.0.0

cuobjdump="$(find "$venv"/lib/python3*/site-packages/nvidia -path '*/bin/cuobjdump' -type f 2>/dev/null | head -n 1)"
if [[ -z "$cuobjdump" ]]; then
  echo "setup-venv: cuobjdump was not installed under $venv" >&2
  exit 1
fi
"$cuobjdump" --version >/dev/null
echo "setup-venv: cuobjdump at $cuobjdump"

cupti_h="$(find "$venv"/lib/python3*/site-packages/nvidia -path '*/include/cupti_activity.h' -type f 2>/dev/null | head -n 1)"
if [[ -z "$cupti_h" ]]; then
  echo "setup-venv: cupti_activity.h was not installed under $venv" >&2
  exit 1
fi
echo "setup-venv: CUPTI headers in $(dirname "$cupti_h")"
