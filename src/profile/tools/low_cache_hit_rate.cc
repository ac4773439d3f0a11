// low-cache-hit-rate: L1 hits few sectors while warps wait on global memory (KernelPro's
// MemoryCoalescing trigger: L1 hit rate < 30% and long-scoreboard stalls > 40%), when the loads
// request the data more than once (a streaming kernel's misses are compulsory).
#include "profile/tools/tools.h"

namespace kpilot {
namespace {

constexpr double kL1HitTrigger = 30;    // percent
constexpr double kStallTrigger = 0.40;  // share of stall cycles
constexpr double kReuseTrigger = 2.0;   // global load bytes requested / the task's minimum bytes

class LowCacheHitRateTool : public BuiltinTool {
 public:
  LowCacheHitRateTool()
      : BuiltinTool("low-cache-hit-rate", "L1 hit rate < 30% with > 40% of stalls waiting on global memory",
                    MemoryClasses(), Metrics()) {}

  std::optional<Finding> Run(const ProfileContext& ctx) const override {
    auto l1 = ctx.Metric(metric::kL1HitPct);
    auto waiting = StallShareOf(ctx, "long_scoreboard");
    if (!l1 || !waiting) return std::nullopt;
    if (*l1 >= kL1HitTrigger || *waiting <= kStallTrigger) return std::nullopt;
    // A streaming kernel reads each byte once: its L1 misses are compulsory and no cache or
    // shared-memory staging can help (tuned on vadd-one-block, which fired at severity 1.0).
    // Speak only when the loads ask for the data again: requested bytes at least twice the
    // task's minimum traffic.
    double reuse = 0;
    if (auto sectors = ctx.Metric(metric::kGlobalLoadSectors); sectors && ctx.min_bytes > 0) {
      reuse = *sectors * 32 / ctx.min_bytes;
      if (reuse < kReuseTrigger) return std::nullopt;
    }

    nlohmann::json evidence = {{metric::kL1HitPct, *l1}, {"long_scoreboard_stall_share", *waiting}};
    if (reuse > 0) evidence["requested_over_minimum_bytes"] = reuse;
    std::string l2_text;
    if (auto l2 = ctx.Metric(metric::kL2HitPct)) {
      evidence[metric::kL2HitPct] = *l2;
      l2_text = " (L2 hits " + Pct(*l2) + ")";
    }
    double severity = 0.5 * (SeverityRamp(*l1, kL1HitTrigger, 0) + SeverityRamp(*waiting, kStallTrigger, 0.8));
    std::string guidance = "L1 hits only " + Pct(*l1) + " of sectors" + l2_text + " and " + Pct(*waiting * 100) +
                           " of stalls are long-scoreboard waits on global memory: data is fetched from DRAM/L2 "
                           "again and again instead of being reused on chip. Stage the tiles each block reuses in "
                           "shared memory (load once, __syncthreads(), compute from shared memory), keep values a "
                           "thread reuses in registers, and make the loads coalesced so every fetched sector is "
                           "used; overlap the next tile's loads with compute (cp.async double buffering) to hide "
                           "what latency remains.";
    return MakeFinding(severity, std::move(evidence), std::move(guidance),
                       {"shared-memory-tiling", "register-tiling", "coalescing", "cp-async-pipeline"});
  }

 private:
  static std::vector<std::string> Metrics() {
    std::vector<std::string> m = {metric::kL1HitPct, metric::kL2HitPct, metric::kGlobalLoadSectors};
    for (auto& s : StallMetrics()) m.push_back(std::move(s));
    return m;
  }
};

}  // namespace

std::unique_ptr<Tool> MakeLowCacheHitRateTool() { return std::make_unique<LowCacheHitRateTool>(); }

}  // namespace kpilot
