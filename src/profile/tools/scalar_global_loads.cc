// scalar-global-loads (static): a memory-bound kernel whose global loads are mostly 32-bit
// (LDG.E) with no 128-bit ones (KernelPro's Vectorization).
#include "profile/tools/tools.h"

namespace kpilot {
namespace {

constexpr double kDominantShare = 0.75;  // of global load instructions

bool MemoryBound(const RooflineVerdict& r) {
  auto memoryish = [](Bottleneck b) {
    return b == Bottleneck::kMemory || b == Bottleneck::kMixed || b == Bottleneck::kLatency;
  };
  if (r.result != Bottleneck::kUnknown) return memoryish(r.result);
  return r.analytic == Bottleneck::kMemory;
}

class ScalarGlobalLoadsTool : public BuiltinTool {
 public:
  ScalarGlobalLoadsTool()
      : BuiltinTool("scalar-global-loads",
                    "memory-bound kernel loading global memory 32 bits at a time, no 128-bit loads", MemoryClasses(),
                    {}) {}

  std::optional<Finding> Run(const ProfileContext& ctx) const override {
    if (!ctx.static_profile || !ctx.static_profile->have_sass) return std::nullopt;
    if (!MemoryBound(ctx.roofline)) return std::nullopt;
    const InstructionMix& m = ctx.static_profile->mix;
    int loads = m.global_loads_32 + m.global_loads_64 + m.global_loads_128;
    // cp.async/TMA copies move 16 bytes or more per instruction: the kernel already stages wide.
    if (loads == 0 || m.global_loads_128 > 0 || m.async_copies > 0) return std::nullopt;
    double share = static_cast<double>(m.global_loads_32) / loads;
    if (share < kDominantShare) return std::nullopt;

    nlohmann::json evidence = {{"global_loads_32", m.global_loads_32},
                               {"global_loads_64", m.global_loads_64},
                               {"global_loads_128", m.global_loads_128},
                               {"scalar_load_share", share},
                               {"class", std::string(BottleneckName(ctx.roofline.result))}};
    std::string guidance =
        std::to_string(m.global_loads_32) + " of the " + std::to_string(loads) +
        " global load instructions in the SASS are 32-bit (LDG.E) and none is 128-bit, in a " +
        std::string(
            BottleneckName(ctx.roofline.result == Bottleneck::kUnknown ? ctx.roofline.analytic : ctx.roofline.result)) +
        " kernel: each thread moves 4 bytes per instruction, so the load/store unit and the "
        "number of requests in flight limit bandwidth. Load float4/int4 (or __nv_bfloat162 "
        "pairs ×4) from 16-byte-aligned addresses so one instruction moves 16 bytes — a quarter "
        "of the load instructions — and handle the remainder elements separately.";
    // A hint rather than a wall: 0.35 at the trigger, 0.6 when every load is scalar.
    return MakeFinding(0.35 + (share - kDominantShare), std::move(evidence), std::move(guidance),
                       {"vector-loads-128bit", "coalescing"});
  }
};

}  // namespace

std::unique_ptr<Tool> MakeScalarGlobalLoadsTool() { return std::make_unique<ScalarGlobalLoadsTool>(); }

}  // namespace kpilot
