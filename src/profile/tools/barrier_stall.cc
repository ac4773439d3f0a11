// barrier-stall: more than 30% of stall cycles wait at block barriers (KernelPro's BarrierStall).
#include "profile/tools/tools.h"

namespace kpilot {
namespace {

constexpr double kTrigger = 0.30;
constexpr double kFull = 0.70;

class BarrierStallTool : public BuiltinTool {
 public:
  BarrierStallTool()
      : BuiltinTool("barrier-stall", "more than 30% of stall cycles wait at __syncthreads()", KernelClasses(),
                    StallMetrics()) {}

  std::optional<Finding> Run(const ProfileContext& ctx) const override {
    auto share = StallShareOf(ctx, "barrier");
    if (!share || *share <= kTrigger) return std::nullopt;
    nlohmann::json evidence = {{"barrier_stall_share", *share},
                               {StallMetric("barrier"), *ctx.Metric(StallMetric("barrier"))}};
    std::string where;
    if (ctx.static_profile && ctx.static_profile->have_sass && ctx.static_profile->mix.barriers > 0) {
      evidence["barriers_in_sass"] = ctx.static_profile->mix.barriers;
      where = " (" + std::to_string(ctx.static_profile->mix.barriers) + " barrier instructions in the SASS)";
    }
    std::string guidance =
        Pct(*share * 100) + " of stall cycles wait at block barriers" + where +
        ": warps reach __syncthreads() at different times, or there is too little work between "
        "barriers. Do more work per barrier (a larger k-step per stage), double-buffer shared "
        "memory so loading the next tile overlaps computing this one with one barrier per stage, "
        "balance the work across the block's warps, use warp-level sync (__syncwarp, shuffles) "
        "where only one warp shares data, and prefer smaller blocks so fewer warps wait on each other.";
    return MakeFinding(SeverityRamp(*share, kTrigger, kFull), std::move(evidence), std::move(guidance),
                       {"cp-async-pipeline", "warp-shuffle-reduction"});
  }
};

}  // namespace

std::unique_ptr<Tool> MakeBarrierStallTool() { return std::make_unique<BarrierStallTool>(); }

}  // namespace kpilot
