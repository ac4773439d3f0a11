// dominant-warp-stall: one stall reason takes more than 40% of the warps' stall cycles
// (KernelPro's WarpStall; critical above 60%), with what that reason means and what fixes it.
#include <algorithm>

#include "profile/tools/tools.h"

namespace kpilot {
namespace {

constexpr double kTrigger = 0.40;
constexpr double kCritical = 0.60;
// DRAM throughput (% of peak) from which warps waiting on loads are DRAM's own latency at its
// roof, not a problem of their own: dram-near-peak's trigger. Tuned on scale-copy-float4, a
// float4 streaming copy at ~90% of DRAM whose top finding was long_scoreboard (0.96) above
// dram-near-peak (0.68), whose advice (fewer bytes) is the only one that helps there.
constexpr double kDramRoofPct = 80;

struct StallAdvice {
  std::string_view reason;
  std::string_view meaning;  // what the warps are waiting for
  std::string_view fix;      // what to change
  std::vector<std::string> skills;
};

const std::vector<StallAdvice>& AdviceTable() {
  static const std::vector<StallAdvice> kTable = {
      {"long_scoreboard",
       "waits on global/local memory loads (L1TEX results)",
       "stage the operand tiles in shared memory with a barrier between the load and compute "
       "phases, start loads for the next tile before computing on this one (cp.async double "
       "buffering), and give each thread more independent loads in flight",
       {"shared-memory-tiling", "cp-async-pipeline", "coalescing"}},
      {"short_scoreboard",
       "waits on shared-memory loads, special functions (MUFU) or shuffles",
       "remove shared-memory bank conflicts, keep values reused from shared memory in registers "
       "(register tiling), and cut special-function calls",
       {"register-tiling", "smem-padding-swizzle", "fast-math-intrinsics"}},
      {"barrier",
       "waits at __syncthreads() for the slowest warp of the block",
       "do more work between barriers (a larger k-step per stage), double-buffer shared memory so "
       "one barrier per stage suffices, balance work across warps, and use warp-level "
       "synchronization (__syncwarp, shuffles) where only a warp shares data",
       {"cp-async-pipeline", "warp-shuffle-reduction"}},
      {"mio_throttle",
       "a full MIO queue (shared memory, shuffles, special math)",
       "issue fewer, wider shared-memory accesses (128-bit LDS, ldmatrix) and fewer shuffles; "
       "reuse values from registers",
       {"vector-loads-128bit", "register-tiling", "smem-padding-swizzle"}},
      {"lg_throttle",
       "a full local/global memory queue: too many small memory instructions",
       "vectorize global accesses to 128 bits, remove local-memory traffic (spills, run-time "
       "indexed arrays), and load through shared memory once instead of repeatedly",
       {"vector-loads-128bit", "coalescing", "register-tiling"}},
      {"math_pipe_throttle",
       "a saturated math pipe",
       "the kernel is bound by one pipe: move matrix math to tensor cores, replace FP64 and "
       "special functions with FP32 arithmetic, or balance instruction types",
       {"mma-sync-tensor-cores", "fast-math-intrinsics", "remove-fp64"}},
      {"wait",
       "fixed-latency dependencies: each instruction waits on the one before",
       "raise instruction-level parallelism: more independent accumulators per thread and "
       "unrolled inner loops so the scheduler has independent work",
       {"loop-unrolling", "register-tiling"}},
      {"membar",
       "memory fences (__threadfence) to complete",
       "remove fences or narrow them to the block (__threadfence_block), and reduce with warp "
       "shuffles before a single atomic instead of fencing per element",
       {"warp-shuffle-reduction"}},
      {"branch_resolving",
       "branch targets to be computed and divergent paths to reconverge",
       "make control flow warp-uniform and unroll loops with known trip counts",
       {"loop-unrolling"}},
      {"dispatch_stall",
       "the dispatcher, blocked by pipeline conflicts",
       "mix instruction types so consecutive instructions use different pipes",
       {"loop-unrolling"}},
      {"drain",
       "stores to drain before the warp exits",
       "coalesce and vectorize the final stores",
       {"coalescing", "vector-loads-128bit"}},
      {"imc_miss",
       "immediate-constant cache misses",
       "keep __constant__ data small and read it with warp-uniform indices",
       {}},
      {"no_instruction",
       "instruction fetch (instruction-cache misses)",
       "shrink the hot loop: less aggressive unrolling and fewer template instantiations per kernel",
       {"loop-unrolling"}},
      {"sleeping",
       "__nanosleep or a spin loop",
       "remove spin-waits; synchronize with barriers or separate kernels",
       {}},
      {"tex_throttle",
       "a full texture-unit queue",
       "use fewer texture/__ldg loads per thread, or wider ones",
       {"vector-loads-128bit"}},
      {"misc", "miscellaneous hardware reasons", "look at the source-level stall sampling in ncu", {}},
  };
  return kTable;
}

class DominantWarpStallTool : public BuiltinTool {
 public:
  DominantWarpStallTool()
      : BuiltinTool("dominant-warp-stall", "one stall reason > 40% of stall cycles (critical > 60%), explained",
                    KernelClasses(), Needs()) {}

  static std::vector<std::string> Needs() {
    std::vector<std::string> m = StallMetrics();
    m.push_back(metric::kDramThroughputPct);
    return m;
  }

  std::optional<Finding> Run(const ProfileContext& ctx) const override {
    auto shares = StallShares(ctx);
    if (!shares) return std::nullopt;
    const StallShare& top = shares->front();
    // Eligible warps waiting for their turn mean the scheduler issues every cycle: not a stall
    // to fix.
    if (top.share <= kTrigger || top.reason == "not_selected") return std::nullopt;
    auto it = std::find_if(AdviceTable().begin(), AdviceTable().end(),
                           [&](const StallAdvice& a) { return a.reason == top.reason; });
    if (it == AdviceTable().end()) return std::nullopt;
    if (top.reason == "long_scoreboard") {
      auto dram = ctx.Metric(metric::kDramThroughputPct);
      if (dram && *dram >= kDramRoofPct) return std::nullopt;
    }

    nlohmann::json breakdown = nlohmann::json::object();
    std::string others;
    for (size_t i = 0; i < shares->size() && i < 4; ++i) {
      breakdown[(*shares)[i].reason] = (*shares)[i].share;
      if (i > 0 && (*shares)[i].share > 0.05) {
        others += (others.empty() ? "" : ", ") + (*shares)[i].reason + " " + Pct((*shares)[i].share * 100);
      }
    }
    bool critical = top.share > kCritical;
    nlohmann::json evidence = {{"dominant_reason", top.reason},
                               {"dominant_share", top.share},
                               {"cycles_per_issue", top.cycles_per_issue},
                               {"critical", critical},
                               {"top_shares", breakdown}};
    std::string guidance = std::string(critical ? "Critical: " : "") + Pct(top.share * 100) + " of stall cycles are " +
                           top.reason + " (" + Num(top.cycles_per_issue) + " cycles per issued instruction) — " +
                           std::string(it->meaning);
    if (!others.empty()) guidance += "; next: " + others;
    guidance += ". Fix: " + std::string(it->fix) + ".";
    // 0.4 at the trigger, 0.7 at critical, 1.0 when a single reason is every stall.
    double severity =
        top.share <= kCritical ? 0.4 + 1.5 * (top.share - kTrigger) : 0.7 + 0.75 * (top.share - kCritical);
    return MakeFinding(severity, std::move(evidence), std::move(guidance), it->skills);
  }
};

}  // namespace

std::unique_ptr<Tool> MakeDominantWarpStallTool() { return std::make_unique<DominantWarpStallTool>(); }

}  // namespace kpilot
