// launch-overhead: the call spends more than 20% of its span between kernels, or launches many
// kernels (KernelPro's LaunchOverhead, from the launch trace).
#include <algorithm>

#include "profile/tools/tools.h"

namespace kpilot {
namespace {

constexpr double kGapTrigger = 0.20;  // share of the timed call with no kernel running (LaunchGapShare)
constexpr double kGapFull = 0.60;
constexpr int kManyKernels = 8;  // kernels per call
constexpr int kManyKernelsFull = 32;

class LaunchOverheadTool : public BuiltinTool {
 public:
  LaunchOverheadTool()
      : BuiltinTool("launch-overhead",
                    "> 20% of the call between kernels, or >= 8 kernels per call: fuse or use a CUDA graph",
                    AllClasses(), {}) {}

  std::optional<Finding> Run(const ProfileContext& ctx) const override {
    bool gaps = ctx.launch_gap_share > kGapTrigger;
    bool many = ctx.kernels_per_call >= kManyKernels;
    if (!gaps && !many) return std::nullopt;
    nlohmann::json evidence = {{"launch_gap_share", ctx.launch_gap_share}, {"kernels_per_call", ctx.kernels_per_call}};
    double severity = 0;
    std::string what;
    if (gaps) {
      severity = SeverityRamp(ctx.launch_gap_share, kGapTrigger, kGapFull);
      what = Pct(ctx.launch_gap_share * 100) + " of the call's time has no kernel running";
      if (ctx.kernels_per_call > 0) {
        what += " across " + std::to_string(ctx.kernels_per_call) + " kernel launches";
      }
    } else {
      what = "Each call launches " + std::to_string(ctx.kernels_per_call) + " kernels";
    }
    if (many) {
      severity = std::max(severity, SeverityRamp(ctx.kernels_per_call, kManyKernels, kManyKernelsFull));
    }
    std::string guidance = what +
                           ": launch latency (a few microseconds per kernel) and the gaps between kernels "
                           "take a large share of the call. Fuse consecutive kernels into one (elementwise "
                           "epilogues into the producer, small reductions into their consumer), and capture the "
                           "remaining sequence in a CUDA graph so it launches once.";
    return MakeFinding(severity, std::move(evidence), std::move(guidance), {"kernel-fusion", "cuda-graphs"});
  }
};

}  // namespace

std::unique_ptr<Tool> MakeLaunchOverheadTool() { return std::make_unique<LaunchOverheadTool>(); }

}  // namespace kpilot
