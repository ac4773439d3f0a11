// tail-effect: the grid leaves SMs idle — fewer blocks than SMs, blocks spread unevenly over the
// SMs within one wave (some SMs get two, most one), or a last wave that runs only partly full and
// costs nearly a whole wave of time.
#include <cmath>

#include "profile/tools/tools.h"

namespace kpilot {
namespace {

constexpr double kTrigger = 0.10;  // share of the kernel's time (or SMs) lost to the tail
constexpr double kFull = 0.60;

class TailEffectTool : public BuiltinTool {
 public:
  TailEffectTool()
      : BuiltinTool("tail-effect", "grid smaller than the SM count, or a partial last wave", KernelClasses(),
                    {metric::kWavesPerSm, metric::kGridSize}) {}

  std::optional<Finding> Run(const ProfileContext& ctx) const override {
    auto grid = ctx.Metric(metric::kGridSize);
    auto waves = ctx.Metric(metric::kWavesPerSm);
    std::vector<std::string> skills = {"grid-stride-wave-quantization", "persistent-kernel", "split-k"};
    if (grid && *grid > 0 && ctx.sm_count > 0 && *grid < ctx.sm_count) {
      double idle = 1.0 - *grid / ctx.sm_count;
      if (idle < kTrigger) return std::nullopt;
      nlohmann::json evidence = {{metric::kGridSize, *grid}, {"sm_count", ctx.sm_count}, {"idle_sm_share", idle}};
      std::string guidance = "The grid has " + Num(*grid) + " blocks for " + std::to_string(ctx.sm_count) +
                             " SMs: " + Num(ctx.sm_count - *grid) + " SMs (" + Pct(idle * 100) +
                             ") get no work at all. Create "
                             "at least one block per SM — smaller tiles per block, split-K (partial results reduced "
                             "afterwards) for reductions over a long dimension, or several blocks per row.";
      return MakeFinding(SeverityRamp(idle, kTrigger, kFull), std::move(evidence), std::move(guidance),
                         std::move(skills));
    }
    if (!waves) return std::nullopt;
    if (*waves < 1) {
      // One wave, but more blocks than SMs: the scheduler gives some SMs ceil(grid/SMs) blocks and
      // the rest fewer, and when a block keeps its SM busy the loaded SMs set the time
      // (chebyshev-rows-140-blocks: 140 FMA-bound blocks on 132 SMs, 8 SMs run two).
      if (!grid || *grid <= 0 || ctx.sm_count <= 0 || *grid <= ctx.sm_count) return std::nullopt;
      double most = std::ceil(*grid / ctx.sm_count);
      double mean = *grid / ctx.sm_count;
      double lost = 1.0 - mean / most;
      if (lost < kTrigger) return std::nullopt;
      double loaded = *grid - (most - 1) * ctx.sm_count;  // SMs that get `most` blocks
      nlohmann::json evidence = {{metric::kGridSize, *grid},
                                 {"sm_count", ctx.sm_count},
                                 {metric::kWavesPerSm, *waves},
                                 {"max_blocks_per_sm", most},
                                 {"time_lost_share", lost}};
      std::string guidance =
          "The grid has " + Num(*grid) + " blocks for " + std::to_string(ctx.sm_count) + " SMs, all in one wave (" +
          Num(*waves) + " waves): " + Num(loaded) + " SMs run " + Num(most) + " blocks while the others run " +
          Num(most - 1) + ", so when a block keeps its SM busy the call lasts as long as the loaded SMs and about " +
          Pct(lost * 100) + " of the GPU's time is idle. Launch a multiple of " + std::to_string(ctx.sm_count) +
          " blocks (smaller or larger tiles, a grid-stride loop over exactly one block per SM), or split the work "
          "so every SM gets the same share.";
      return MakeFinding(SeverityRamp(lost, kTrigger, kFull), std::move(evidence), std::move(guidance),
                         std::move(skills));
    }
    double whole = std::floor(*waves);
    double partial = *waves - whole;
    if (partial < 0.01) return std::nullopt;  // a whole number of waves has no tail
    double rounds = whole + 1;
    // The last wave takes about as long as a full one but does only `partial` of its work.
    double lost = (1.0 - partial) / rounds;
    if (lost < kTrigger) return std::nullopt;
    nlohmann::json evidence = {{metric::kWavesPerSm, *waves}, {"partial_wave", partial}, {"time_lost_share", lost}};
    std::string blocks_text, target_text;
    if (grid && *grid > 0) {
      double blocks_per_wave = *grid / *waves;
      evidence[metric::kGridSize] = *grid;
      evidence["blocks_per_wave"] = blocks_per_wave;
      blocks_text = " (" + Num(*grid - whole * blocks_per_wave) + " of " + Num(blocks_per_wave) + " blocks)";
      target_text = " Size the grid to a multiple of " + Num(blocks_per_wave) + " blocks";
      if (ctx.sm_count > 0) {
        evidence["sm_count"] = ctx.sm_count;
        target_text +=
            " (" + std::to_string(ctx.sm_count) + " SMs × " + Num(blocks_per_wave / ctx.sm_count) + " blocks per SM)";
      }
      target_text += ".";
    }
    std::string guidance = Num(*waves) + " waves per SM: the last wave is only " + Pct(partial * 100) + " full" +
                           blocks_text + ", so about " + Pct(lost * 100) +
                           " of the kernel's time runs with most "
                           "SMs idle." +
                           target_text +
                           " Change the tile size so the block count fills whole waves, "
                           "use a persistent grid-stride kernel with exactly one wave of blocks, or split the work "
                           "finer (split-K) so the tail is small.";
    return MakeFinding(SeverityRamp(lost, kTrigger, kFull), std::move(evidence), std::move(guidance),
                       std::move(skills));
  }
};

}  // namespace

std::unique_ptr<Tool> MakeTailEffectTool() { return std::make_unique<TailEffectTool>(); }

}  // namespace kpilot
