// What the built-in tools share (see tools.h).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "profile/tools/tools.h"

namespace kpilot {

Finding BuiltinTool::MakeFinding(double severity, nlohmann::json evidence, std::string guidance,
                                 std::vector<std::string> skills) const {
  Finding f;
  f.id = id_;
  f.tool = id_;
  f.severity = std::isnan(severity) ? 0 : std::clamp(severity, 0.0, 1.0);
  f.evidence = std::move(evidence);
  f.guidance = std::move(guidance);
  f.skills = std::move(skills);
  return f;
}

std::vector<Bottleneck> MemoryClasses() { return {Bottleneck::kMemory, Bottleneck::kLatency, Bottleneck::kMixed}; }
std::vector<Bottleneck> ComputeClasses() { return {Bottleneck::kCompute, Bottleneck::kMixed}; }
std::vector<Bottleneck> KernelClasses() {
  return {Bottleneck::kCompute, Bottleneck::kMemory, Bottleneck::kLatency, Bottleneck::kMixed};
}
std::vector<Bottleneck> AllClasses() {
  return {Bottleneck::kCompute, Bottleneck::kMemory, Bottleneck::kLatency, Bottleneck::kLaunch, Bottleneck::kMixed};
}

std::string Num(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  // Large values read better as integers than as "1.23e+04"; the guidance quotes counts.
  if (std::fabs(v) >= 100 && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
  return fmt::format("{:.3g}", v);
}

std::string Pct(double percent) { return Num(percent) + "%"; }

double SeverityRamp(double value, double trigger, double full, double floor) {
  if (full == trigger || std::isnan(value)) return floor;
  double t = (value - trigger) / (full - trigger);
  return std::clamp(floor + (1.0 - floor) * t, floor, 1.0);
}

const std::vector<std::string_view>& StallReasons() {
  static const std::vector<std::string_view> kReasons = {"long_scoreboard",
                                                         "short_scoreboard",
                                                         "barrier",
                                                         "mio_throttle",
                                                         "lg_throttle",
                                                         "math_pipe_throttle",
                                                         "wait",
                                                         "not_selected",
                                                         "membar",
                                                         "branch_resolving",
                                                         "dispatch_stall",
                                                         "drain",
                                                         "imc_miss",
                                                         "no_instruction",
                                                         "sleeping",
                                                         "tex_throttle",
                                                         "misc"};
  return kReasons;
}

std::string StallMetric(std::string_view reason) {
  return "smsp__average_warps_issue_stalled_" + std::string(reason) + "_per_issue_active.ratio";
}

std::vector<std::string> StallMetrics() {
  std::vector<std::string> out;
  for (auto reason : StallReasons()) out.push_back(StallMetric(reason));
  return out;
}

std::optional<std::vector<StallShare>> StallShares(const ProfileContext& ctx) {
  std::vector<StallShare> shares;
  double total = 0;
  for (auto reason : StallReasons()) {
    auto v = ctx.Metric(StallMetric(reason));
    if (!v || *v < 0) continue;
    shares.push_back({std::string(reason), *v, 0});
    total += *v;
  }
  if (shares.empty() || total <= 0) return std::nullopt;
  for (auto& s : shares) s.share = s.cycles_per_issue / total;
  std::stable_sort(shares.begin(), shares.end(),
                   [](const StallShare& a, const StallShare& b) { return a.share > b.share; });
  return shares;
}

std::optional<double> StallShareOf(const ProfileContext& ctx, std::string_view reason) {
  auto shares = StallShares(ctx);
  if (!shares) return std::nullopt;
  for (const auto& s : *shares) {
    if (s.reason == reason) return s.share;
  }
  return std::nullopt;
}

std::optional<int> RegistersPerThread(const ProfileContext& ctx) {
  if (auto r = ctx.Metric(metric::kRegistersPerThread); r && *r > 0) {
    return static_cast<int>(std::lround(*r));
  }
  if (ctx.static_profile && ctx.static_profile->resources.registers > 0) {
    return ctx.static_profile->resources.registers;
  }
  return std::nullopt;
}

bool IssuesWarpgroupMma(const ProfileContext& ctx) {
  return ctx.static_profile && ctx.static_profile->have_sass && ctx.static_profile->mix.hgmma > 0;
}

}  // namespace kpilot
