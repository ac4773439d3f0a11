// DetectFeatures: the features retrieval sees in a parent's code, on the examples' real kernels and
// on small fragments.
#include <gtest/gtest.h>

#include "core/fs.h"
#include "skills/skills.h"
#include "test_paths.h"

namespace kpilot {
namespace {

std::set<std::string> Of(const std::string& example) {
  auto text = ReadFile(testing::SourceDir() / "examples" / "cuda" / example);
  EXPECT_TRUE(text.ok()) << example;
  return text.ok() ? DetectFeatures(*text) : std::set<std::string>{};
}

TEST(DetectFeatures, TheNaiveLayerNormHasNone) {
  // One thread per row, plain loops: nothing a card requires or provides.
  EXPECT_EQ(Of("layernorm/reference.cu"), std::set<std::string>{});
}

TEST(DetectFeatures, TheBlockPerRowLayerNorm) {
  auto f = Of("layernorm/candidates/block_two_pass.cu");
  for (const char* want : {"coalesced-global", "warp-reduce", "block-reduce", "vector-global-128", "launch-bounds",
                           "unrolled-loops", "readonly-loads"})
    EXPECT_TRUE(f.count(want)) << want;
  EXPECT_FALSE(f.count("smem-tile")) << "a reduction's 1-D scratch is not a tile";
  EXPECT_FALSE(f.count("tensor-core-mma"));
}

TEST(DetectFeatures, ATiledGemmHasASharedTile) {
  EXPECT_TRUE(DetectFeatures("__shared__ float As[BK][BM + PAD];\n").count("smem-tile"));
  EXPECT_FALSE(DetectFeatures("__shared__ float partial[BLOCK / 32];\n").count("smem-tile"));
}

TEST(DetectFeatures, CommentsAreNotCode) {
  EXPECT_EQ(DetectFeatures("// a later version could use float4 loads and __shfl_xor_sync\n"
                           "/* or wmma:: fragments */ int x;\n"),
            std::set<std::string>{});
}

TEST(DetectFeatures, TensorCoresAsyncCopiesAndGraphs) {
  EXPECT_TRUE(DetectFeatures("wmma::fragment<wmma::matrix_a, 16, 16, 16, half> a;").count("tensor-core-mma"));
  auto w = DetectFeatures(R"(asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 ...");)");
  EXPECT_TRUE(w.count("wgmma"));
  EXPECT_TRUE(w.count("tensor-core-mma"));
  EXPECT_TRUE(
      DetectFeatures(R"(asm volatile("cp.async.cg.shared.global [%0], [%1], 16;");)").count("async-copy-pipeline"));
  EXPECT_TRUE(DetectFeatures(R"(asm volatile("cp.async.bulk.shared::cluster.global"))").count("tma"));
  EXPECT_TRUE(DetectFeatures("cudaGraphLaunch(exec, s);").count("cuda-graph"));
  EXPECT_TRUE(DetectFeatures("for (i = tid; i < n; i += blockDim.x * gridDim.x)").count("grid-stride"));
}

}  // namespace
}  // namespace kpilot
