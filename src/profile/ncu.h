// Nsight Compute: building the command line and parsing its raw CSV.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "profile/profile.h"

namespace kpilot {

// Parses `ncu --csv --page raw` output. Robust to what ncu really prints: the profiled
// program's own output and "==PROF==" / "==WARNING==" lines mixed in before and between the
// CSV rows, a units row after the header, thousands separators ("3,177,696"), "n/a" values,
// and several kernels and several invocations of each. Values are converted to base units
// (ns, bytes, bytes/second, %) from the units row. Pure; InvalidInput when no CSV header
// ("ID","Process ID",…) is found, naming what was found instead.
Result<std::vector<KernelMetrics>> ParseNcuRawCsv(const std::string& text);

// "2025.3.1.0" from `ncu --version` output ("Version 2025.3.1.0 (build …)"); "" if absent.
std::string ParseNcuVersion(const std::string& version_output);

struct NcuRequest {
  std::vector<std::string> metrics;        // collected with --metrics (comma-joined)
  std::vector<std::string> sections;       // or --section NAME (e.g. SpeedOfLight); may combine
  std::string set;                         // --set NAME (e.g. "full") instead of metrics/sections
  std::string kernel_regex;                // -k regex:… ("" = every kernel)
  int launch_skip = 0;                     // --launch-skip
  int launch_count = 0;                    // -c (0 = no limit)
  std::vector<std::string> target;         // the program and its arguments
};

// The ncu argv: always `--clock-control none` (never change clocks), `--csv --page raw`,
// `--target-processes all`, then the request. Pure.
std::vector<std::string> NcuCommand(const std::string& ncu_path, const NcuRequest& request);

}  // namespace kpilot
