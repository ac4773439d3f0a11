// dram-near-peak: DRAM throughput above 80% of peak (KernelPro's HighDRAMThroughput). The kernel
// sits on the bandwidth roof; only moving fewer bytes makes it faster.
#include "profile/tools/tools.h"

namespace kpilot {
namespace {

constexpr double kTrigger = 80;  // percent of peak
constexpr double kFull = 95;

class DramNearPeakTool : public BuiltinTool {
 public:
  DramNearPeakTool()
      : BuiltinTool("dram-near-peak", "DRAM throughput > 80% of peak: move fewer bytes",
                    {Bottleneck::kMemory, Bottleneck::kMixed},
                    {metric::kDramThroughputPct, metric::kDramBytesRead, metric::kDramBytesWrite}) {}

  std::optional<Finding> Run(const ProfileContext& ctx) const override {
    auto pct = ctx.Metric(metric::kDramThroughputPct);
    if (!pct || *pct <= kTrigger) return std::nullopt;
    nlohmann::json evidence = {{metric::kDramThroughputPct, *pct}};
    std::string detail;
    auto read = ctx.Metric(metric::kDramBytesRead);
    auto written = ctx.Metric(metric::kDramBytesWrite);
    if (read && written) {
      evidence[metric::kDramBytesRead] = *read;
      evidence[metric::kDramBytesWrite] = *written;
      detail = Num(*read / 1e6) + " MB read, " + Num(*written / 1e6) + " MB written";
    }
    if (ctx.roofline.achieved_fraction > 0) {
      evidence["roofline_achieved_fraction"] = ctx.roofline.achieved_fraction;
      if (!detail.empty()) detail += "; ";
      detail += Pct(ctx.roofline.achieved_fraction * 100) + " of the analytic roofline reached";
    }
    std::string bytes_text = detail.empty() ? "" : " (" + detail + ")";
    std::string guidance = "DRAM runs at " + Pct(*pct) + " of peak" + bytes_text +
                           ": the kernel is at the bandwidth roof, so the only way forward is moving fewer bytes. "
                           "Fuse it with the operations before and after it so "
                           "intermediates stay in registers or shared memory instead of a DRAM round trip, read and "
                           "write in a lower precision (bf16/fp8) where the tolerance allows, and reuse loaded data "
                           "from shared memory instead of reading it again.";
    return MakeFinding(SeverityRamp(*pct, kTrigger, kFull), std::move(evidence), std::move(guidance),
                       {"kernel-fusion", "shared-memory-tiling", "register-tiling"});
  }
};

}  // namespace

std::unique_ptr<Tool> MakeDramNearPeakTool() { return std::make_unique<DramNearPeakTool>(); }

}  // namespace kpilot
