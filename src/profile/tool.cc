#include "profile/tool.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "profile/tools/tools.h"

namespace kpilot {

std::optional<double> ProfileContext::Metric(const std::string& name) const {
  auto it = metrics.find(name);
  // ncu's "n/a" may reach here as NaN; it means "not collected" to every tool.
  if (it == metrics.end() || std::isnan(it->second)) return std::nullopt;
  return it->second;
}

namespace {

using ToolFactory = std::unique_ptr<Tool> (*)();

// One row per file in tools/. The order is the listing order of --list-tools.
constexpr ToolFactory kBuiltinTools[] = {
    MakeUncoalescedGlobalAccessTool, MakeLowCacheHitRateTool, MakeDramNearPeakTool,      MakeScalarGlobalLoadsTool,
    MakeSharedBankConflictsTool,     MakeRegisterSpillsTool,  MakeOccupancyLimiterTool,  MakeHighRegisterCountTool,
    MakeDominantWarpStallTool,       MakeBarrierStallTool,    MakeTensorCoresUnusedTool, MakeFp64InFp32Tool,
    MakeIntegerDivisionTool,         MakeWarpDivergenceTool,  MakeTailEffectTool,        MakeLaunchOverheadTool,
    MakeCopiesOrSyncsTool,
};

}  // namespace

std::vector<std::unique_ptr<Tool>> BuiltinTools() {
  std::vector<std::unique_ptr<Tool>> tools;
  for (ToolFactory make : kBuiltinTools) tools.push_back(make());
  return tools;
}

// An unknown class selects every tool: with nothing to filter by (a static-only profile, no
// roofline inputs), running all of them is the only way not to miss the relevant one.
std::vector<const Tool*> SelectTools(const std::vector<std::unique_ptr<Tool>>& tools, Bottleneck cls, bool all) {
  std::vector<const Tool*> out;
  for (const auto& tool : tools) {
    if (!tool) continue;
    bool serves = all || cls == Bottleneck::kUnknown;
    if (!serves) {
      auto classes = tool->classes();
      serves = std::find(classes.begin(), classes.end(), cls) != classes.end();
    }
    if (serves) out.push_back(tool.get());
  }
  return out;
}

std::vector<std::string> MetricsNeeded(const std::vector<const Tool*>& tools) {
  std::set<std::string> names;
  for (const Tool* tool : tools) {
    for (auto& m : tool->metrics()) names.insert(std::move(m));
  }
  return {names.begin(), names.end()};
}

std::vector<Finding> RunTools(const std::vector<const Tool*>& tools, const ProfileContext& ctx) {
  std::vector<Finding> findings;
  for (const Tool* tool : tools) {
    // Tools promise not to throw; a broken one loses its finding rather than the whole report.
    try {
      if (auto f = tool->Run(ctx)) findings.push_back(std::move(*f));
    } catch (...) {
    }
  }
  std::sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    if (a.severity != b.severity) return a.severity > b.severity;
    return a.id < b.id;
  });
  return findings;
}

}  // namespace kpilot
