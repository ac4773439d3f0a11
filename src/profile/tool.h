// Stage 2 of profiling: micro-profiling tools that turn numbers into findings.
//
// A tool declares the bottleneck classes it serves and the ncu metrics it needs; the profiler
// selects the tools for a kernel's class (or all, with --all-tools), unions their metrics into
// one ncu collection, and runs them on the result. Built-in tools live one per file under
// tools/; user tools are rule files (TOML) loaded without recompiling (rule_tool.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "profile/profile.h"
#include "profile/roofline.h"

namespace kpilot {

// Everything a tool may look at. Any part may be missing (static-only profiles have no
// metrics; an imported ncu CSV has no task).
struct ProfileContext {
  std::string kernel;  // the kernel being judged
  MetricMap metrics;   // ncu metrics of that kernel (empty: not profiled)
  std::optional<KernelStaticProfile> static_profile;
  std::optional<Occupancy> occupancy;  // theoretical, at the launch's block size
  std::optional<SmLimits> sm;
  int sm_count = 0;  // from the device (0 = unknown)
  RooflineVerdict roofline;
  // From the launch trace of one call (A2's CUPTI trace), when present:
  int kernels_per_call = 0;
  double launch_gap_share = 0;  // share of the timed call with no kernel running (LaunchGapShare)
  int memcpys_per_call = 0;
  int syncs_per_call = 0;
  // Task facts:
  std::string compute_precision;  // "f32", "bf16", …
  bool matmul_shaped = false;     // the task's flops grow as m·n·k (GEMM-like)
  double min_bytes = 0;           // the workload's minimum DRAM bytes (0 = unknown)

  // The metric's value, or nullopt when it was not collected.
  std::optional<double> Metric(const std::string& name) const;
};

class Tool {
 public:
  virtual ~Tool() = default;
  virtual std::string id() const = 0;
  virtual std::string description() const = 0;           // one line, for --list-tools
  virtual std::vector<Bottleneck> classes() const = 0;   // the classes it serves
  virtual std::vector<std::string> metrics() const = 0;  // ncu metrics it needs ({} = none)
  // A finding when the tool's condition holds, else nullopt. Never throws.
  virtual std::optional<Finding> Run(const ProfileContext& ctx) const = 0;
};

// Every built-in tool, in a stable order.
std::vector<std::unique_ptr<Tool>> BuiltinTools();

// The tools serving `cls` (all of them when `all`).
std::vector<const Tool*> SelectTools(const std::vector<std::unique_ptr<Tool>>& tools, Bottleneck cls, bool all);

// The union of the metrics `tools` need, sorted and without duplicates.
std::vector<std::string> MetricsNeeded(const std::vector<const Tool*>& tools);

// Runs the tools and returns their findings ranked by severity (highest first).
std::vector<Finding> RunTools(const std::vector<const Tool*>& tools, const ProfileContext& ctx);

}  // namespace kpilot
