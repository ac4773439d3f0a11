#!/usr/bin/env bash
# The in-process unit tests (CTest label `unit`) built and run again under AddressSanitizer and
# UndefinedBehaviorSanitizer (KPILOT_SANITIZE), in build-asan/. Needs the Debian packages and venv
# scripts/setup.sh installs; builds only the test programs that hold unit tests.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKPILOT_SANITIZE=ON ${KPILOT_CMAKE_ARGS:-} >/dev/null
# The programs that hold unit tests, from the test list of build/ (scripts/setup.sh's build).
mapfile -t targets < <(ctest --test-dir build -L unit --show-only=json-v1 | python3 -c '
import json, os, sys
tests = json.load(sys.stdin)["tests"]
print("\n".join(sorted({os.path.basename(t["command"][0]) for t in tests if t.get("command")})))')
if [[ ${#targets[@]} -eq 0 ]]; then
  echo "scripts/sanitize.sh: no unit tests in build/; run scripts/setup.sh first" >&2
  exit 1
fi
cmake --build build-asan -j"$(nproc)" --target "${targets[@]}"
# Leaks are reported as errors; UBSan stops at the first finding (-fno-sanitize-recover).
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan -L unit --output-on-failure -j2
