#!/usr/bin/env bash
# Installs what kpilot needs on Debian/Ubuntu, then configures and builds it into build/.
#   scripts/setup.sh            build (Release-ish) with tests
#   KPILOT_SKIP_APT=1 ...       skip apt-get (dependencies already installed)
# The CUDA toolkit (nvcc) is expected to be installed already (it is not in Debian's main).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake g++ pkg-config python3 python3-venv nlohmann-json3-dev libcli11-dev libfmt-dev libsqlite3-dev
          libtomlplusplus-dev libmuparser-dev libssl-dev libgtest-dev libcurl4-openssl-dev libcpp-httplib-dev libyaml-cpp-dev libseccomp-dev zlib1g-dev
          chromium slurmctld slurmd slurm-client munge)
# chromium: the report tests open kpilot report's pages headless; slurm*, munge: the Slurm executor's
# tests start a cluster on this machine (tests/slurm/local_cluster.sh).
if [[ "${KPILOT_SKIP_APT:-0}" != 1 ]]; then
  missing=()
  for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}" >&2
    SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
fi

# Candidates run as a user of their own (docs/threat-model.md).
if ! getent passwd kpilot-sandbox >/dev/null 2>&1; then
  if [[ $(id -u) -eq 0 ]]; then
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin kpilot-sandbox
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin kpilot-sandbox
  else
    echo "setup: cannot create the kpilot-sandbox user without root; candidates will keep kpilot's uid" >&2
  fi
fi

if ! command -v nvcc >/dev/null 2>&1; then
  for d in "${CUDA_HOME:-}" /usr/local/cuda; do
    if [[ -n "$d" && -x "$d/bin/nvcc" ]]; then export PATH="$d/bin:$PATH"; break; fi
  done
fi
command -v nvcc >/dev/null 2>&1 || {
  echo "setup: nvcc not found — install the CUDA toolkit (13.x) and put its bin/ on PATH or set CUDA_HOME" >&2
  exit 3
}

# PyPI tools (cuobjdump, nvdisasm) go into the project's own virtual environment.
scripts/setup-venv.sh
# Debian's CPU torch and flashinfer-bench's schema classes, for the PyTorch-task tests.
scripts/setup-torch-venv.sh

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo ${KPILOT_CMAKE_ARGS:-} >/dev/null
cmake --build build -j"$(nproc)"
echo "setup: built build/bin/kpilot and build/bin/kpilot-runner" >&2
