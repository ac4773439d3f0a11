// The occupancy tools on a warpgroup-MMA kernel: the real SASS of a wgmma kernel (nvcc 13.0,
// sm_90a; tests/fixtures/profile/README.md) given the resources of CUTLASS's cooperative SM90 GEMM
// (168 registers, one block of 384 threads per SM). Such a kernel runs few warps by design; the
// advice to cap its registers would spill its accumulators, so occupancy-limiter and
// high-register-count stay silent, while the same numbers on an FFMA kernel still fire them.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/fs.h"
#include "profile/static_profile.h"
#include "profile/tool.h"
#include "profile/tools/tools.h"

namespace kpilot {
namespace {

std::string Fixture(const std::string& path) {
  auto text = ReadFile(std::string(KPILOT_FIXTURES_DIR) + "/" + path);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? *text : std::string();
}

KernelStaticProfile FixtureKernel(const std::string& mangled) {
  CompileOutput out;
  out.ok = true;
  out.resources = ParsePtxasReport(Fixture("profile/ptxas_mix_kernels_sm90a.txt"));
  out.sass = Fixture("profile/sass_mix_kernels_sm90a.txt");
  auto profiles = StaticProfiles(out);
  auto it = std::find_if(profiles.begin(), profiles.end(),
                         [&](const KernelStaticProfile& p) { return p.resources.mangled == mangled; });
  EXPECT_NE(it, profiles.end()) << mangled;
  return it == profiles.end() ? KernelStaticProfile{} : *it;
}

// A context as a static profile builds it: the kernel's resources set to the GEMM's.
ProfileContext GemmShapedContext(KernelStaticProfile kernel) {
  kernel.resources.registers = 168;
  ProfileContext c;
  c.sm = *SmLimitsFor("sm_90a");
  c.occupancy = ComputeOccupancy(*c.sm, 384, 168, 0);
  c.static_profile = kernel;
  return c;
}

std::optional<Finding> RunTool(const std::string& id, const ProfileContext& ctx) {
  for (const auto& t : BuiltinTools())
    if (t->id() == id) return t->Run(ctx);
  ADD_FAILURE() << "no built-in tool " << id;
  return std::nullopt;
}

TEST(WarpgroupMmaKernels, OccupancyAndRegisterToolsStaySilent) {
  ProfileContext wgmma = GemmShapedContext(FixtureKernel("_Z10wgmma_bf16yyPf"));
  ASSERT_GT(wgmma.static_profile->mix.hgmma, 0);
  ASSERT_LT(wgmma.occupancy->fraction, 0.25);
  EXPECT_TRUE(IssuesWarpgroupMma(wgmma));
  EXPECT_FALSE(RunTool("occupancy-limiter", wgmma));
  EXPECT_FALSE(RunTool("high-register-count", wgmma));

  // The same resources without HGMMA (the HMMA tile of mma.sync) are the usual limiter.
  ProfileContext hmma = GemmShapedContext(FixtureKernel("_Z9wmma_bf16PK13__nv_bfloat16S1_Pf"));
  ASSERT_EQ(hmma.static_profile->mix.hgmma, 0);
  EXPECT_FALSE(IssuesWarpgroupMma(hmma));
  auto occupancy = RunTool("occupancy-limiter", hmma);
  ASSERT_TRUE(occupancy);
  EXPECT_NE(occupancy->guidance.find("limited by registers"), std::string::npos) << occupancy->guidance;
  EXPECT_TRUE(RunTool("high-register-count", hmma));
}

}  // namespace
}  // namespace kpilot
