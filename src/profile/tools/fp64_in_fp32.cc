// fp64-in-fp32: double-precision instructions in a kernel whose task computes in f32 or lower —
// almost always an unsuffixed literal (1.0), a double math function (exp, sqrt) or an implicit
// promotion.
#include "profile/tools/tools.h"

namespace kpilot {
namespace {

bool Fp32OrLower(const std::string& p) {
  return p == "f32" || p == "tf32" || p == "bf16" || p == "f16" || p == "fp16" || p.rfind("fp8", 0) == 0;
}

class Fp64InFp32Tool : public BuiltinTool {
 public:
  Fp64InFp32Tool()
      : BuiltinTool("fp64-in-fp32", "FP64 instructions in a kernel computing in f32 or lower", KernelClasses(),
                    {metric::kDfmaThreadInst, metric::kDmulThreadInst, metric::kDaddThreadInst, metric::kFfmaThreadInst,
                     metric::kFmulThreadInst, metric::kFaddThreadInst}) {}

  std::optional<Finding> Run(const ProfileContext& ctx) const override {
    if (!Fp32OrLower(ctx.compute_precision)) return std::nullopt;
    nlohmann::json evidence = {{"compute_precision", ctx.compute_precision}};
    std::string text;
    double share = -1;  // of floating-point instructions that are FP64
    auto dfma = ctx.Metric(metric::kDfmaThreadInst);
    auto dmul = ctx.Metric(metric::kDmulThreadInst);
    auto dadd = ctx.Metric(metric::kDaddThreadInst);
    if (dfma && dmul && dadd && *dfma + *dmul + *dadd > 0) {
      double fp64 = *dfma + *dmul + *dadd;
      double fp32 = ctx.Metric(metric::kFfmaThreadInst).value_or(0) + ctx.Metric(metric::kFmulThreadInst).value_or(0) +
                    ctx.Metric(metric::kFaddThreadInst).value_or(0);
      share = fp64 / (fp64 + fp32);
      evidence["fp64_thread_instructions"] = fp64;
      evidence["fp32_thread_instructions"] = fp32;
      text = Num(fp64) + " FP64 thread instructions executed (" + Pct(share * 100) + " of FP32+FP64 arithmetic)";
    }
    if (ctx.static_profile && ctx.static_profile->have_sass && ctx.static_profile->mix.fp64 > 0) {
      const InstructionMix& m = ctx.static_profile->mix;
      evidence["sass_fp64"] = m.fp64;
      if (share < 0) share = static_cast<double>(m.fp64) / (m.fp64 + m.ffma + m.fmul + m.fadd);
      text += (text.empty() ? "" : "; ") + std::to_string(m.fp64) +
              " FP64 instructions (DFMA/DMUL/DADD/F2F.F64) in the SASS";
    }
    if (text.empty()) return std::nullopt;
    evidence["fp64_share"] = share;
    std::string guidance = text + " in a kernel whose task computes in " + ctx.compute_precision +
                           ": FP64 runs at a fraction of the FP32 rate (1/2 on H100/H200, 1/64 on consumer GPUs) and "
                           "each conversion costs extra instructions. Suffix float literals (1.0f), call the float "
                           "functions (expf, sqrtf, fabsf or __expf), and avoid mixing double variables into float "
                           "expressions; compile with -Xptxas -warn-double-usage to find them.";
    return MakeFinding(SeverityRamp(share, 0, 0.3, 0.4), std::move(evidence), std::move(guidance),
                       {"remove-fp64", "fast-math-intrinsics"});
  }
};

}  // namespace

std::unique_ptr<Tool> MakeFp64InFp32Tool() { return std::make_unique<Fp64InFp32Tool>(); }

}  // namespace kpilot
