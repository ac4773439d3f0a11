#!/usr/bin/env bash
# The Python environment for PyTorch-defined tasks on a machine without a GPU (CI, developers):
# Debian's CPU build of torch (python3-torch, 1.13) seen through a venv of Debian's python3
# (<repo>/.venv-torch, --system-site-packages), plus flashinfer-bench 0.1.2 for its schema classes.
# flashinfer-bench declares torch>=2.8 and flashinfer-python, which PyPI serves only as multi-GB
# CUDA wheels; its data classes need neither, so it is installed --no-deps with what they import.
# The GPU machine has its own python3 with torch and CUDA; this venv is for tests of the worker's
# protocol, checks and formats on the CPU.
#
# Idempotent. Usage: scripts/setup-torch-venv.sh [venv-dir]   (default: <repo>/.venv-torch)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${1:-$repo/.venv-torch}"

if [[ "${KPILOT_SKIP_APT:-0}" != 1 ]] && ! dpkg -s python3-torch >/dev/null 2>&1; then
  echo "setup-torch-venv: installing python3-torch python3-venv" >&2
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-torch python3-venv >/dev/null
fi

if [[ ! -x "$venv/bin/python" ]]; then
  /usr/bin/python3 -m venv --system-site-packages "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  "pydantic>=2" "safetensors>=0.5" "docstring-parser>=0.16" filelock
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps flashinfer-bench==0.1.2
# The official MCP Python SDK: its client drives `kpilot mcp` in tests/mcp/test_mcp.py.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "mcp==2.3.0"
"$venv/bin/python" -c 'import torch, flashinfer_bench.data, mcp.client.client' 
echo "setup-torch-venv: $venv (torch $("$venv/bin/python" -c 'import torch; print(torch.__version__)'))"
