// high-register-count: more than 96 registers per thread (KernelPro's HighRegisterUsage).
#include <algorithm>

#include "profile/tools/tools.h"

namespace kpilot {
namespace {

constexpr int kTrigger = 96;  // registers per thread
constexpr int kFull = 255;    // the architectural maximum

class HighRegisterCountTool : public BuiltinTool {
 public:
  HighRegisterCountTool()
      : BuiltinTool("high-register-count", "more than 96 registers per thread", MemoryClasses(),
                    {metric::kRegistersPerThread}) {}

  std::optional<Finding> Run(const ProfileContext& ctx) const override {
    auto regs = RegistersPerThread(ctx);
    if (!regs || *regs <= kTrigger || IssuesWarpgroupMma(ctx)) return std::nullopt;
    nlohmann::json evidence = {{"registers_per_thread", *regs}};
    std::string guidance = std::to_string(*regs) + " registers per thread (above " + std::to_string(kTrigger) + ")";
    if (ctx.sm && ctx.sm->max_warps_per_sm > 0) {
      // Registers are allocated per warp in units; the file bounds the resident warps.
      const SmLimits& sm = *ctx.sm;
      int unit = std::max(1, sm.register_allocation_unit);
      int per_warp = (*regs * 32 + unit - 1) / unit * unit;
      int warps = std::min(sm.max_warps_per_sm, sm.registers_per_sm / per_warp);
      double pct = 100.0 * warps / sm.max_warps_per_sm;
      evidence["max_warps_by_registers"] = warps;
      evidence["max_occupancy_by_registers_pct"] = pct;
      guidance += " let the register file hold at most " + std::to_string(warps) + " of " +
                  std::to_string(sm.max_warps_per_sm) + " warps per SM (" + Pct(pct) + " occupancy)";
    }
    guidance +=
        ": few resident warps leave little to switch to while loads are in flight. Keep fewer "
        "values live — smaller per-thread tiles, fewer accumulators, less unrolling, recompute "
        "cheap index values — or set __launch_bounds__(threads, minBlocks) so ptxas targets "
        "more resident blocks; check for spills after capping.";
    return MakeFinding(SeverityRamp(*regs, kTrigger, kFull), std::move(evidence), std::move(guidance),
                       {"launch-bounds-occupancy", "register-tiling"});
  }
};

}  // namespace

std::unique_ptr<Tool> MakeHighRegisterCountTool() { return std::make_unique<HighRegisterCountTool>(); }

}  // namespace kpilot
