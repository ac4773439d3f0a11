// copies-or-syncs-in-call: memory copies or device synchronizations inside the timed call, from
// the launch trace.
#include <algorithm>

#include "profile/tools/tools.h"

namespace kpilot {
namespace {

class CopiesOrSyncsTool : public BuiltinTool {
 public:
  CopiesOrSyncsTool()
      : BuiltinTool("copies-or-syncs-in-call", "memcpy/memset or synchronization inside the call", AllClasses(), {}) {}

  std::optional<Finding> Run(const ProfileContext& ctx) const override {
    if (ctx.memcpys_per_call <= 0 && ctx.syncs_per_call <= 0) return std::nullopt;
    nlohmann::json evidence = {{"memcpys_per_call", ctx.memcpys_per_call}, {"syncs_per_call", ctx.syncs_per_call}};
    std::vector<std::string> parts;
    if (ctx.memcpys_per_call > 0) {
      parts.push_back(std::to_string(ctx.memcpys_per_call) + " memory cop" + (ctx.memcpys_per_call == 1 ? "y" : "ies"));
    }
    if (ctx.syncs_per_call > 0) {
      parts.push_back(std::to_string(ctx.syncs_per_call) + " synchronization" + (ctx.syncs_per_call == 1 ? "" : "s"));
    }
    std::string what = parts[0] + (parts.size() > 1 ? " and " + parts[1] : "");
    std::string guidance = "Each call performs " + what +
                           ": copies serialize with the kernels and a "
                           "synchronization stalls the host until the GPU drains, so the call pays for both on "
                           "every invocation. Keep data on the device, pass small parameters as kernel arguments "
                           "instead of copying them, replace scratch-buffer clears with in-kernel initialization, "
                           "and drop cudaDeviceSynchronize/cudaStreamSynchronize — stream order already orders "
                           "the kernels.";
    double severity = std::min(1.0, 0.5 + 0.1 * (ctx.memcpys_per_call + ctx.syncs_per_call - 1));
    return MakeFinding(severity, std::move(evidence), std::move(guidance), {"kernel-fusion", "cuda-graphs"});
  }
};

}  // namespace

std::unique_ptr<Tool> MakeCopiesOrSyncsTool() { return std::make_unique<CopiesOrSyncsTool>(); }

}  // namespace kpilot
