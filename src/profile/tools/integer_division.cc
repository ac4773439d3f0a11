// integer-division-in-index-math (static): software integer division/modulo sequences in the
// kernel — the GPU has no integer divider, so each `/` or `%` by a run-time value is a
// ~20-instruction subroutine, usually inside index computations.
#include <algorithm>

#include "profile/tools/tools.h"

namespace kpilot {
namespace {

constexpr int kInstructionsPerSequence = 20;  // roughly, for 32-bit div/mod on sm_8x/sm_9x

class IntegerDivisionTool : public BuiltinTool {
 public:
  IntegerDivisionTool()
      : BuiltinTool("integer-division-in-index-math", "software integer division/modulo sequences in the kernel's SASS",
                    // Memory-bound too: a streaming kernel whose every element pays for a few
                    // divisions is paced by issue, not DRAM (nchw-bias-divmod: four 64-bit
                    // div/mod per 8 bytes moved, classed memory-bound).
                    {Bottleneck::kCompute, Bottleneck::kLatency, Bottleneck::kMixed, Bottleneck::kMemory}, {}) {}

  std::optional<Finding> Run(const ProfileContext& ctx) const override {
    if (!ctx.static_profile || !ctx.static_profile->have_sass) return std::nullopt;
    const InstructionMix& m = ctx.static_profile->mix;
    if (m.int_div_sequences <= 0) return std::nullopt;
    double share =
        m.total > 0 ? std::min(1.0, static_cast<double>(m.int_div_sequences) * kInstructionsPerSequence / m.total) : 0;
    nlohmann::json evidence = {
        {"int_div_sequences", m.int_div_sequences}, {"sass_instructions", m.total}, {"estimated_share_of_code", share}};
    std::string guidance = std::to_string(m.int_div_sequences) + " software integer division/modulo sequence" +
                           (m.int_div_sequences == 1 ? "" : "s") + " in the SASS (about " + Pct(share * 100) +
                           " of its " + std::to_string(m.total) + " instructions, at ~" +
                           std::to_string(kInstructionsPerSequence) +
                           " instructions each): `/` and `%` by a run-time value have no hardware instruction. Make "
                           "divisors compile-time constants (template parameters, constexpr shapes) so the compiler "
                           "uses multiply-shift, precompute a fast-divmod magic number on the host, or restructure "
                           "the index math with 2-D/3-D grids and incremental indices so no division is needed in "
                           "the loop.";
    return MakeFinding(SeverityRamp(share, 0, 0.3), std::move(evidence), std::move(guidance),
                       {"strength-reduced-index-math"});
  }
};

}  // namespace

std::unique_ptr<Tool> MakeIntegerDivisionTool() { return std::make_unique<IntegerDivisionTool>(); }

}  // namespace kpilot
