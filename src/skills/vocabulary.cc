// The closed vocabularies of the card format (skills/README.md): features, roofline classes,
// platforms, languages, element types and param roles.
#include "skills/skills.h"

#include <algorithm>

#include "task/dtype.h"

namespace kpilot {

const std::vector<Feature>& FeatureVocabulary() {
  // The rows of skills/README.md's "## Feature vocabulary" table, in its order
  // (tests/skills/vocabulary_test.cc compares them).
  static const std::vector<Feature> kFeatures = {
      {"coalesced-global", "consecutive lanes of a warp access consecutive global addresses"},
      {"vector-global-128", "global loads/stores are 128-bit (float4, int4, uint4)"},
      {"smem-tile", "reused operand tiles are staged in shared memory"},
      {"smem-conflict-free", "shared tiles are padded or swizzled against bank conflicts"},
      {"register-tile", "each thread accumulates a TM x TN output sub-tile in registers (GEMM-style coarsening)"},
      {"thread-coarsened", "each thread or block processes several independent items or rows"},
      {"warp-reduce", "reductions inside a warp use register shuffles"},
      {"block-reduce", "two-level block reduction (warp shuffles, partials through shared memory)"},
      {"online-softmax", "softmax max and normalizer computed in one pass with running rescaling"},
      {"welford-stats", "mean/variance computed in one pass with Welford updates and a parallel combine"},
      {"fused-kernels", "a chain of operations that were separate kernels runs in one kernel"},
      {"fused-epilogue", "bias/activation/conversion applied to accumulators before the producer's store"},
      {"grid-stride", "threads loop over work with a grid-sized stride; the grid is independent of the problem size"},
      {"wave-quantized-grid", "grid size is a whole number of waves (SMs x resident blocks per SM)"},
      {"persistent-grid", "one resident wave of blocks fetches work tiles in a loop (static or dynamic schedule)"},
      {"launch-bounds", "the kernel declares `__launch_bounds__` to cap registers for a target occupancy"},
      {"async-copy-pipeline", "global-to-shared copies through cp.async into a multi-stage ring (sm_80+)"},
      {"tma", "tiles move through the Tensor Memory Accelerator with mbarrier completion (sm_90a)"},
      {"tensor-core-mma", "matrix products run on tensor cores (mma.sync, WMMA or WGMMA)"},
      {"wgmma", "warpgroup asynchronous MMAs (wgmma.mma_async, sm_90a)"},
      {"split-k", "the reduction dimension of a GEMM is split across blocks and the partials summed"},
      {"cuda-graph", "the call's launches are replayed from a captured CUDA graph"},
      {"fast-math", "approximate intrinsics or fast-math flags for transcendentals, division, sqrt"},
      {"fp32-only", "no FP64 instruction in a kernel that computes in f32 or lower"},
      {"unrolled-loops", "inner loops have compile-time trip counts and are unrolled"},
      {"static-index-math", "index math free of run-time integer division/modulo"},
      {"l2-persistence", "an L2 access-policy window marks a re-used buffer as persisting"},
      {"l2-tile-order", "output tiles are rasterized in L2-friendly groups (threadblock swizzle)"},
      {"readonly-loads", "input pointers are `const __restrict__` / loaded through the read-only path"},
  };
  return kFeatures;
}

bool IsFeature(std::string_view name) {
  const auto& v = FeatureVocabulary();
  return std::any_of(v.begin(), v.end(), [&](const Feature& f) { return f.name == name; });
}

const std::vector<std::string>& RooflineClasses() {
  static const std::vector<std::string> kClasses = {"memory-bound", "compute-bound", "latency-bound", "launch-bound",
                                                    "mixed"};
  return kClasses;
}

const std::vector<std::string>& SkillPlatforms() {
  static const std::vector<std::string> kPlatforms = {"sm_80",  "sm_86",   "sm_89",  "sm_90",
                                                      "sm_90a", "sm_100a", "x86-64", "aarch64"};
  return kPlatforms;
}

const std::vector<std::string>& SkillDTypes() {
  static const std::vector<std::string> kDTypes = [] {
    std::vector<std::string> names;  // the DType values are 0 … kBool without gaps (kpilot_dtype)
    for (int t = static_cast<int>(DType::kF64); t <= static_cast<int>(DType::kBool); ++t)
      names.emplace_back(DTypeName(static_cast<DType>(t)));
    return names;
  }();
  return kDTypes;
}

const std::vector<std::string>& SkillLanguages() {
  static const std::vector<std::string> kLanguages = {"cuda", "cpp"};
  return kLanguages;
}

const std::vector<std::string>& ParamRoles() {
  static const std::vector<std::string> kRoles = {"vector", "block",         "grid",   "work-per-block", "stages",
                                                  "unroll", "register-tile", "tile-k", "tile",           "min-blocks"};
  return kRoles;
}

std::string_view MoveDirectionName(MoveDirection d) {
  switch (d) {
    case MoveDirection::kUp:
      return "up";
    case MoveDirection::kDown:
      return "down";
    case MoveDirection::kSet:
      return "set";
  }
  return "up";
}

std::string_view SkillOriginName(SkillOrigin o) {
  switch (o) {
    case SkillOrigin::kBuiltin:
      return "built-in";
    case SkillOrigin::kUser:
      return "user";
    case SkillOrigin::kCommandLine:
      return "--skills";
  }
  return "built-in";
}

}  // namespace kpilot
