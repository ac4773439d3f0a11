// Putting the two stages together for one kernel: classify (stage 1), select and run the tools
// (stage 2), and render the result for people (text) and programs (JSON). Pure: the caller
// gathers the numbers (compile, eval, ncu) and passes them in the context.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "profile/tool.h"

namespace kpilot {

struct KernelReport {
  std::string kernel;
  RooflineVerdict roofline;
  std::vector<std::string> tools_run;  // ids, in the order they ran
  std::vector<Finding> findings;       // ranked, highest severity first
  ProfileContext context;              // what the tools saw (metrics, static profile, …)
};

// Runs the tools serving `ctx.roofline.result` (every tool when `all_tools`, or when the class is
// unknown) on `ctx`, and those serving `collected_for` — the stage-1 class the counters were
// chosen for, when the measured counters moved the kernel to another class.
KernelReport AnalyzeKernel(const ProfileContext& ctx, const std::vector<std::unique_ptr<Tool>>& tools, bool all_tools,
                           std::optional<Bottleneck> collected_for = std::nullopt);

// The reports for an ncu CSV taken elsewhere (`kpilot profile --import-ncu`): per kernel (its
// invocations merged), the measured roofline from ncu's SM and DRAM throughput, the device's SM
// count from `launch__sm_count` when the CSV has it, and the tools for that class (or all). No
// task context: tools that need the task, the static profile or a trace stay silent.
std::vector<KernelReport> AnalyzeImported(const std::vector<KernelMetrics>& rows,
                                          const std::vector<std::unique_ptr<Tool>>& tools, bool all_tools);

nlohmann::json ToJson(const KernelReport& r, bool raw_metrics);

// The plain-language report: the class, the ceiling and the achieved fraction, then findings by
// severity with their guidance; `raw` appends the counters.
std::string RenderReport(const KernelReport& r, bool raw);

}  // namespace kpilot
