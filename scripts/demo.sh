#!/usr/bin/env bash
# The main job on bundled examples: kpilot optimize searches a host SGEMM's tunable params from
# their naive end (no LLM, no key needed), then reports and exports the best candidate. With a
# GPU it also optimizes the cuda SGEMM; without one it shows the cuda candidate's static profile.
# It ends by writing the last run as one HTML page (kpilot report) and printing its path.
set -euo pipefail
cd "$(dirname "$0")/.."
kpilot=build/bin/kpilot
"$kpilot" optimize examples/host/sgemm --budget 10 --workload 256x384x320
if "$kpilot" doctor --json | python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["gpus"] else 1)'; then
  "$kpilot" optimize examples/cuda/sgemm --budget 16 --workload 2048
else
  echo "demo: no GPU here — the static profile of a cuda candidate instead (kpilot profile --static)"
  "$kpilot" profile examples/cuda/sgemm examples/cuda/sgemm/candidates/register_tiled.cu --static
fi
# The last run's page (the search tree, progress, roofline and timeline); open it in a browser.
run=$("$kpilot" runs --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])')
"$kpilot" report "$run"
