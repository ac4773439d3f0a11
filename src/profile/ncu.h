// Nsight Compute: building the command line and parsing its raw CSV.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "profile/profile.h"
#include "profile/roofline.h"

namespace kpilot {

// Parses `ncu --csv --page raw` output. Robust to what ncu really prints: the profiled
// program's own output and "==PROF==" / "==WARNING==" lines mixed in before and between the
// CSV rows, a units row after the header, thousands separators ("3,177,696"), empty, "n/a" and
// "no data" values (listed as unavailable), and several kernels and several invocations of each.
// Values are converted to base units (ns, bytes, bytes/second, %) from the units row (Nsight
// Compute 2025.3 already prints base units: "ns", "byte", "byte/s", "hz").
//
// `--set full` (its SpeedOfLight section) collects DRAM throughput only as
// gpu__dram_throughput.*, never dram__throughput.*, which kpilot's roofline and tools read: a row
// that has the gpu__ name and not the dram__ one gets the dram__ one too, with the same value (on
// the H200, transpose-naive read 11.8% as gpu__dram_throughput under ncu and 12.2% as
// dram__throughput through CUPTI, in separate runs).
//
// Pure; InvalidInput when no CSV header ("ID","Process ID",…) is found, naming what ncu said
// instead: its error, "No kernels were profiled" with the kernels it saw, or its first warning.
Result<std::vector<KernelMetrics>> ParseNcuRawCsv(const std::string& text);

// Per kernel name, in order of first appearance: the first invocation's fields with each
// metric's mean over the invocations that have it.
std::vector<KernelMetrics> MergeInvocations(const std::vector<KernelMetrics>& rows);

// Sets the measured SM and DRAM throughput (percent of peak) of `in` from `m`'s
// sm__throughput / dram__throughput .avg.pct_of_peak_sustained_elapsed, where present.
void ApplyMeasured(const MetricMap& m, RooflineInput* in);

// "2025.3.1.0" from `ncu --version` output ("Version 2025.3.1.0 (build …)"); "" if absent.
std::string ParseNcuVersion(const std::string& version_output);

struct NcuRequest {
  std::vector<std::string> metrics;   // collected with --metrics (comma-joined)
  std::vector<std::string> sections;  // or --section NAME (e.g. SpeedOfLight); may combine
  std::string set;                    // --set NAME (e.g. "full") instead of metrics/sections
  std::string kernel_regex;           // -k regex:… ("" = every kernel)
  int launch_skip = 0;                // --launch-skip
  int launch_count = 0;               // -c (0 = no limit)
  std::vector<std::string> target;    // the program and its arguments
};

// The ncu argv: always `--clock-control none` (never change clocks), `--csv --page raw`,
// `--target-processes all`, then the request. Pure.
std::vector<std::string> NcuCommand(const std::string& ncu_path, const NcuRequest& request);

}  // namespace kpilot
