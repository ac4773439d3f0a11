// occupancy-limiter: theoretical or achieved occupancy below 50% (KernelPro's OccupancyLimiter):
// which resource limits it, by how much, and what to change to reach 50%.
#include <algorithm>
#include <cmath>

#include "profile/tools/tools.h"

namespace kpilot {
namespace {

constexpr double kTrigger = 50;  // percent of the SM's warp slots
constexpr double kFull = 12.5;   // 8 of 64 warps: severity 1

int CeilDiv(int a, int b) { return b > 0 ? (a + b - 1) / b : 0; }

// The blocks per SM needed for 50% occupancy at `warps_per_block`.
int TargetBlocks(const SmLimits& sm, int warps_per_block) {
  int target = CeilDiv(CeilDiv(sm.max_warps_per_sm, 2), warps_per_block);
  return std::clamp(target, 1, std::max(1, sm.max_blocks_per_sm));
}

// What to change for the limiting resource, with the number that reaches 50%; "" when the
// numbers needed are missing.
std::string LimiterAdvice(const ProfileContext& ctx, const Occupancy& occ, std::vector<std::string>* skills,
                          nlohmann::json* evidence) {
  const std::string& limiter = occ.limiter;
  int threads = occ.block_threads;
  int warps_per_block = CeilDiv(threads, 32);
  if (limiter == "registers") {
    *skills = {"launch-bounds-occupancy", "register-tiling"};
    auto regs = RegistersPerThread(ctx);
    std::string text = "the register file allows only " + std::to_string(occ.blocks_by_registers) + " blocks of " +
                       std::to_string(threads) + " threads";
    if (regs) text += " at " + std::to_string(*regs) + " registers per thread";
    if (ctx.sm && warps_per_block > 0) {
      const SmLimits& sm = *ctx.sm;
      int blocks = TargetBlocks(sm, warps_per_block);
      int unit = std::max(1, sm.register_allocation_unit);
      int per_warp = sm.registers_per_sm / (blocks * warps_per_block) / unit * unit;
      int cap = std::min(sm.max_registers_per_thread, per_warp / 32);
      (*evidence)["registers_for_50pct"] = cap;
      text += "; at most " + std::to_string(cap) + " registers per thread would fit " + std::to_string(blocks) +
              " blocks (50%): cap them with __launch_bounds__(" + std::to_string(threads) + ", " +
              std::to_string(blocks) + ") or keep fewer values live (smaller per-thread tiles, fewer accumulators)";
    } else {
      text +=
          ": cap registers with __launch_bounds__(threads, minBlocks) or keep fewer values "
          "live (smaller per-thread tiles, fewer accumulators)";
    }
    return text;
  }
  if (limiter == "shared_memory") {
    *skills = {"shared-memory-tiling", "cp-async-pipeline"};
    std::string text = "shared memory allows only " + std::to_string(occ.blocks_by_shared) + " blocks per SM";
    if (ctx.static_profile && ctx.static_profile->resources.shared_bytes > 0) {
      text += " (" + std::to_string(ctx.static_profile->resources.shared_bytes) +
              " bytes of static shared memory per block, plus any dynamic)";
    }
    if (ctx.sm && warps_per_block > 0) {
      const SmLimits& sm = *ctx.sm;
      int blocks = TargetBlocks(sm, warps_per_block);
      int64_t unit = std::max(1, sm.shared_allocation_unit);
      int64_t per_block = (sm.shared_per_sm / blocks - sm.shared_reserved_per_block) / unit * unit;
      per_block = std::min(per_block, sm.shared_per_block_optin);
      (*evidence)["shared_bytes_for_50pct"] = per_block;
      text +=
          "; " + std::to_string(blocks) + " blocks (50%) need at most " + Num(per_block / 1024.0) + " KiB per block";
    }
    return text +
           ": use smaller tiles or fewer pipeline stages, or reuse one buffer for phases "
           "that do not overlap";
  }
  if (limiter == "block_size" || limiter == "blocks") {
    *skills = {"launch-bounds-occupancy", "grid-stride-wave-quantization"};
    std::string text = "blocks of " + std::to_string(threads) + " threads hit the limit of " +
                       std::to_string(occ.blocks_by_block_limit) + " resident blocks per SM, so only " +
                       std::to_string(occ.active_warps) + " warps fit";
    if (ctx.sm) {
      int threads_needed = CeilDiv(CeilDiv(ctx.sm->max_warps_per_sm, 2), ctx.sm->max_blocks_per_sm) * 32;
      text += ": use blocks of at least " + std::to_string(std::max(threads_needed, 128)) +
              " threads, giving each thread the same work (grid-stride) so fewer, larger blocks "
              "cover the data";
    } else {
      text += ": use larger blocks (128–256 threads)";
    }
    return text;
  }
  if (limiter == "warps") {
    *skills = {"launch-bounds-occupancy"};
    return "blocks of " + std::to_string(threads) + " threads (" + std::to_string(warps_per_block) +
           " warps) do not divide the SM's warp slots, so only " + std::to_string(occ.blocks_by_warps) +
           " fit: choose a block size whose warp count "
           "divides the SM's (e.g. 256 or 512 threads)";
  }
  *skills = {"launch-bounds-occupancy"};
  return limiter.empty() ? "" : "the limiter is " + limiter;
}

class OccupancyLimiterTool : public BuiltinTool {
 public:
  OccupancyLimiterTool()
      : BuiltinTool("occupancy-limiter", "theoretical or achieved occupancy < 50%: the limiting resource and the fix",
                    MemoryClasses(),
                    {metric::kAchievedOccupancyPct, metric::kTheoreticalOccupancyPct, metric::kRegistersPerThread,
                     metric::kBlockSize}) {}

  std::optional<Finding> Run(const ProfileContext& ctx) const override {
    if (IssuesWarpgroupMma(ctx)) return std::nullopt;
    std::optional<double> theoretical;
    if (ctx.occupancy && ctx.occupancy->max_warps > 0) {
      theoretical = ctx.occupancy->fraction * 100;
    } else {
      theoretical = ctx.Metric(metric::kTheoreticalOccupancyPct);
    }
    auto achieved = ctx.Metric(metric::kAchievedOccupancyPct);
    if (!theoretical && !achieved) return std::nullopt;
    bool theoretical_low = theoretical && *theoretical < kTrigger;
    bool achieved_low = achieved && *achieved < kTrigger;
    if (!theoretical_low && !achieved_low) return std::nullopt;

    nlohmann::json evidence = nlohmann::json::object();
    if (theoretical) evidence["theoretical_occupancy_pct"] = *theoretical;
    if (achieved) evidence[metric::kAchievedOccupancyPct] = *achieved;
    std::vector<std::string> skills;
    std::string guidance;
    if (theoretical_low) {
      guidance = "Theoretical occupancy is " + Pct(*theoretical);
      if (ctx.occupancy && ctx.occupancy->max_warps > 0) {
        const Occupancy& occ = *ctx.occupancy;
        evidence["limiter"] = occ.limiter;
        evidence["active_warps"] = occ.active_warps;
        evidence["max_warps"] = occ.max_warps;
        evidence["blocks_per_sm"] = occ.blocks_per_sm;
        evidence["block_threads"] = occ.block_threads;
        guidance += " (" + std::to_string(occ.active_warps) + " of " + std::to_string(occ.max_warps) +
                    " warps per SM, " + std::to_string(occ.blocks_per_sm) + " blocks of " +
                    std::to_string(occ.block_threads) + " threads)";
        std::string advice = LimiterAdvice(ctx, occ, &skills, &evidence);
        if (!advice.empty()) guidance += ", limited by " + occ.limiter + ": " + advice;
      }
      guidance += ". Too few warps are resident to hide memory and pipeline latency";
      if (achieved) guidance += " (achieved: " + Pct(*achieved) + ")";
      guidance += ".";
    } else {
      skills = {"grid-stride-wave-quantization", "persistent-kernel"};
      guidance = "Achieved occupancy is " + Pct(*achieved);
      if (theoretical) guidance += " against a theoretical " + Pct(*theoretical);
      guidance +=
          ": the SMs are not kept full — the grid has too few blocks, blocks finish "
          "unevenly, or a partial last wave leaves SMs idle. Launch enough blocks for "
          "several full waves or use a persistent grid-stride loop with a grid sized to "
          "the SM count, and balance the work per block.";
    }
    double worst = std::min(theoretical_low ? *theoretical : 100.0, achieved_low ? *achieved : 100.0);
    return MakeFinding(SeverityRamp(worst, kTrigger, kFull), std::move(evidence), std::move(guidance),
                       std::move(skills));
  }
};

}  // namespace

std::unique_ptr<Tool> MakeOccupancyLimiterTool() { return std::make_unique<OccupancyLimiterTool>(); }

}  // namespace kpilot
