// warp-divergence: fewer than 24 of a warp's 32 threads active per executed instruction.
#include <cmath>

#include "profile/tools/tools.h"

namespace kpilot {
namespace {

constexpr double kTrigger = 24;  // active threads per executed warp instruction
constexpr double kFull = 8;

class WarpDivergenceTool : public BuiltinTool {
 public:
  WarpDivergenceTool()
      : BuiltinTool("warp-divergence", "fewer than 24 of 32 threads active per warp instruction",
                    {Bottleneck::kCompute, Bottleneck::kLatency, Bottleneck::kMixed},
                    {metric::kThreadsPerInst, metric::kBlockSize}) {}

  std::optional<Finding> Run(const ProfileContext& ctx) const override {
    auto threads = ctx.Metric(metric::kThreadsPerInst);
    if (!threads || *threads <= 0 || *threads >= kTrigger) return std::nullopt;
    nlohmann::json evidence = {{metric::kThreadsPerInst, *threads}};
    std::string block_text;
    if (auto block = ctx.Metric(metric::kBlockSize)) {
      evidence[metric::kBlockSize] = *block;
      long b = std::lround(*block);
      if (b % 32 != 0) {
        block_text = " The block size " + std::to_string(b) +
                     " is not a multiple of 32, so the last warp of every block runs partly "
                     "empty: round it up to a multiple of 32.";
      }
    }
    std::string guidance = "On average only " + Num(*threads) +
                           " of 32 threads are active per executed warp "
                           "instruction (" +
                           Pct(*threads / 32 * 100) + " SIMD efficiency)" +
                           ": branches split warps, so both sides run with lanes masked off. Make branch conditions "
                           "uniform across a warp (decide on warp-aligned indices), move bounds checks out of inner "
                           "loops (pad the data or handle the tail separately), use arithmetic selects instead of "
                           "short divergent branches, and in reductions keep the active lanes contiguous "
                           "(warp shuffles instead of `if (tid < s)` trees)." +
                           block_text;
    return MakeFinding(SeverityRamp(*threads, kTrigger, kFull), std::move(evidence), std::move(guidance),
                       {"warp-shuffle-reduction", "loop-unrolling"});
  }
};

}  // namespace

std::unique_ptr<Tool> MakeWarpDivergenceTool() { return std::make_unique<WarpDivergenceTool>(); }

}  // namespace kpilot
