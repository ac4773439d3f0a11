// register-spills (static, sharpened by stalls): ptxas spills registers to local memory, or the
// SASS reads and writes local memory (LDL/STL). KernelPro's RegisterSpill — the tool whose
// advice most often led to a > 1.5× step — weighs it by long-scoreboard stalls, which include
// waiting on local-memory loads.
#include <algorithm>

#include "profile/tools/tools.h"

namespace kpilot {
namespace {

constexpr double kStallTrigger = 0.15;  // long-scoreboard share that makes spills hurt
constexpr double kSpillBytesFull = 256;

class RegisterSpillsTool : public BuiltinTool {
 public:
  RegisterSpillsTool()
      : BuiltinTool("register-spills", "registers spilled to local memory (ptxas spill bytes or SASS LDL/STL)",
                    KernelClasses(), Metrics()) {}

  std::optional<Finding> Run(const ProfileContext& ctx) const override {
    if (!ctx.static_profile) return std::nullopt;
    const KernelResources& r = ctx.static_profile->resources;
    const InstructionMix& m = ctx.static_profile->mix;
    int64_t spill_bytes = r.spill_stores + r.spill_loads;
    int local_ops = ctx.static_profile->have_sass ? m.local_loads + m.local_stores : 0;
    if (spill_bytes <= 0 && local_ops <= 0) return std::nullopt;

    nlohmann::json evidence = {{"spill_store_bytes", r.spill_stores},
                               {"spill_load_bytes", r.spill_loads},
                               {"registers", r.registers},
                               {"stack_bytes", r.stack_bytes}};
    if (ctx.static_profile->have_sass) {
      evidence["local_loads"] = m.local_loads;
      evidence["local_stores"] = m.local_stores;
    }
    std::string what;
    if (spill_bytes > 0) {
      what = "ptxas spills " + std::to_string(r.spill_stores) + " bytes (stores) / " + std::to_string(r.spill_loads) +
             " bytes (loads) per thread at " + std::to_string(r.registers) + " registers";
      if (local_ops > 0) {
        what += " (" + std::to_string(m.local_loads) + " LDL, " + std::to_string(m.local_stores) + " STL in the SASS)";
      }
    } else {
      what = "the SASS has " + std::to_string(m.local_loads) + " LDL and " + std::to_string(m.local_stores) +
             " STL (local memory; ptxas reports no spill, so a "
             "per-thread array indexed at run time lives in a " +
             std::to_string(r.stack_bytes) + "-byte stack frame)";
    }
    double severity = 0.4 + 0.2 * std::min(1.0, spill_bytes / kSpillBytesFull);
    std::string stall_text;
    if (auto waiting = StallShareOf(ctx, "long_scoreboard")) {
      evidence["long_scoreboard_stall_share"] = *waiting;
      if (*waiting > kStallTrigger) {
        severity += 0.4 * std::min(1.0, (*waiting - kStallTrigger) / 0.45);
        stall_text = ", and " + Pct(*waiting * 100) +
                     " of stalls are long-scoreboard waits, which include these local-memory loads";
        auto sm = ctx.Metric(metric::kSmThroughputPct);
        auto dram = ctx.Metric(metric::kDramThroughputPct);
        if (sm && dram && *sm < 50 && *dram < 50) {
          evidence[metric::kSmThroughputPct] = *sm;
          evidence[metric::kDramThroughputPct] = *dram;
          stall_text += ", while neither compute (" + Pct(*sm) + ") nor DRAM (" + Pct(*dram) + ") is busy";
        }
      }
    }
    std::string guidance = what + stall_text +
                           ": local memory goes through L1/L2 like global memory, so every spilled value costs a "
                           "memory round trip. Cut the live registers — smaller per-thread tiles or fewer "
                           "accumulators, less unrolling of the outer loops, recomputing cheap values instead of "
                           "keeping them — or give ptxas a larger budget with __launch_bounds__(threads, minBlocks) "
                           "using a lower minBlocks; index per-thread arrays only with compile-time constants "
                           "(fully unrolled loops) so they stay in registers.";
    return MakeFinding(severity, std::move(evidence), std::move(guidance),
                       {"register-tiling", "launch-bounds-occupancy", "loop-unrolling"});
  }

 private:
  static std::vector<std::string> Metrics() {
    std::vector<std::string> m = StallMetrics();
    m.push_back(metric::kSmThroughputPct);
    m.push_back(metric::kDramThroughputPct);
    return m;
  }
};

}  // namespace

std::unique_ptr<Tool> MakeRegisterSpillsTool() { return std::make_unique<RegisterSpillsTool>(); }

}  // namespace kpilot
