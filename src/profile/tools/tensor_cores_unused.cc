// tensor-cores-unused: a GEMM-shaped task in a tensor-core precision whose kernel issues no
// HMMA/HGMMA (KernelPro's TensorCore/cuBLAS).
#include <algorithm>

#include "profile/tools/tools.h"

namespace kpilot {
namespace {

bool TensorCorePrecision(const std::string& p) {
  return p == "bf16" || p == "f16" || p == "fp16" || p == "tf32" || p.rfind("fp8", 0) == 0;
}

std::string ArchOf(const ProfileContext& ctx) {
  if (ctx.static_profile && !ctx.static_profile->resources.arch.empty()) {
    return ctx.static_profile->resources.arch;
  }
  return ctx.sm ? ctx.sm->arch : "";
}

class TensorCoresUnusedTool : public BuiltinTool {
 public:
  TensorCoresUnusedTool()
      : BuiltinTool("tensor-cores-unused", "matmul-shaped bf16/f16/fp8/tf32 work with no tensor-core instructions",
                    ComputeClasses(), {metric::kTensorHmmaInst, metric::kTensorGmmaInst, metric::kSmThroughputPct}) {}

  std::optional<Finding> Run(const ProfileContext& ctx) const override {
    if (!ctx.matmul_shaped || !TensorCorePrecision(ctx.compute_precision)) return std::nullopt;
    nlohmann::json evidence = {{"compute_precision", ctx.compute_precision}, {"matmul_shaped", true}};
    std::vector<std::string> seen;
    if (ctx.static_profile && ctx.static_profile->have_sass) {
      const InstructionMix& m = ctx.static_profile->mix;
      if (m.hmma + m.hgmma + m.imma > 0) return std::nullopt;
      evidence["sass_hmma"] = m.hmma;
      evidence["sass_hgmma"] = m.hgmma;
      evidence["sass_ffma"] = m.ffma;
      seen.push_back("the SASS has no HMMA/HGMMA (" + std::to_string(m.ffma) + " FFMA instead)");
    }
    // The SASS, when there is one, decides: on the H200 (GH100, CUPTI 13.0) the tensor pipe's
    // instruction counter read 10.5 M for a kernel whose SASS has no HMMA/HGMMA at all (other
    // instructions issue on that pipe), so the counter only speaks when the SASS is missing.
    auto hmma = ctx.Metric(metric::kTensorHmmaInst);
    auto gmma = ctx.Metric(metric::kTensorGmmaInst);
    if (seen.empty() && (hmma || gmma)) {
      double executed = hmma.value_or(0) + gmma.value_or(0);
      if (executed > 0) return std::nullopt;
      if (hmma) evidence[metric::kTensorHmmaInst] = *hmma;
      if (gmma) evidence[metric::kTensorGmmaInst] = *gmma;
      seen.push_back("the tensor pipe executed 0 instructions");
    }
    if (seen.empty()) return std::nullopt;  // nothing says whether tensor cores were used

    double severity = 0.8;
    std::string busy;
    if (auto sm = ctx.Metric(metric::kSmThroughputPct)) {
      evidence[metric::kSmThroughputPct] = *sm;
      severity = 0.7 + 0.3 * std::min(1.0, *sm / 100);
      busy = " while the SM runs at " + Pct(*sm) + " of its peak";
    }
    std::string arch = ArchOf(ctx);
    bool hopper = arch.rfind("sm_90", 0) == 0;
    std::string how = hopper ? "On " + arch +
                                   " use wgmma (warpgroup MMA, operands in shared memory via TMA) "
                                   "through CuTe, or mma.sync m16n8k16 with ldmatrix as a first step"
                             : "Use mma.sync (m16n8k16 for " + ctx.compute_precision +
                                   ") with operands loaded by ldmatrix from shared memory, or WMMA fragments";
    std::string joined = seen[0];
    for (size_t i = 1; i < seen.size(); ++i) joined += " and " + seen[i];
    std::string guidance = "The task is GEMM-shaped in " + ctx.compute_precision + ", but " + joined + busy +
                           ": every multiply-add runs on the CUDA cores, an order of magnitude below the tensor-core "
                           "peak for this precision. " +
                           how +
                           "; accumulate in f32 registers and keep the "
                           "shared-memory staging of the operand tiles.";
    std::vector<std::string> skills =
        hopper ? std::vector<std::string>{"wgmma-cute", "mma-sync-tensor-cores", "tma-bulk-copy"}
               : std::vector<std::string>{"mma-sync-tensor-cores", "shared-memory-tiling"};
    return MakeFinding(severity, std::move(evidence), std::move(guidance), std::move(skills));
  }
};

}  // namespace

std::unique_ptr<Tool> MakeTensorCoresUnusedTool() { return std::make_unique<TensorCoresUnusedTool>(); }

}  // namespace kpilot
