// CUTLASS/CuTe headers on a CUDA candidate's include path: where the toolchain finds them, their
// version in the cache key and the compile record, the switch that keeps them off, and a real
// CuTe candidate compiled by nvcc for sm_90a (skipped where nvcc or the nvidia-cutlass wheel is
// absent: scripts/setup-venv.sh installs the wheel).
#include <gtest/gtest.h>

#include <string>

#include "core/fs.h"
#include "toolchain/toolchain.h"

namespace kpilot {
namespace {
namespace fs = std::filesystem;

const fs::path kIncludeDir = fs::path(KPILOT_SOURCE_DIR) / "include";

// A folder shaped like a CUTLASS checkout: include/cute, include/cutlass/version.h.
void MakeTree(const fs::path& root, const std::string& major, const std::string& minor, const std::string& patch,
              bool util = false) {
  ASSERT_TRUE(WriteFileAtomic(root / "include" / "cute" / "tensor.hpp", "#pragma once\n").ok());
  ASSERT_TRUE(WriteFileAtomic(root / "include" / "cutlass" / "version.h",
                              "#pragma once\n#define CUTLASS_MAJOR " + major + "\n#define CUTLASS_MINOR " + minor +
                                  "\n#define CUTLASS_PATCH " + patch + "\n")
                  .ok());
  if (util) {
    ASSERT_TRUE(WriteFileAtomic(root / "tools" / "util" / "include" / "cutlass" / "util" / "x.h", "").ok());
  }
}

TEST(ParseCutlassVersion, ReadsTheThreeDefines) {
  EXPECT_EQ(ParseCutlassVersion("#define CUTLASS_MAJOR 4\n#define CUTLASS_MINOR 2\n#define CUTLASS_PATCH 0\n"),
            "4.2.0");
  EXPECT_EQ(ParseCutlassVersion("#define CUTLASS_MAJOR 3\n#define CUTLASS_MINOR 9\n"), "");
  EXPECT_EQ(ParseCutlassVersion(""), "");
}

TEST(FindCutlass, TheFirstRootHoldingCuteWins) {
  auto dir = TempDir::Create("kpilot-cutlass-test-");
  ASSERT_TRUE(dir.ok());
  ToolSearch search;
  search.cutlass_roots = {dir->path() / "absent", dir->path() / "first", dir->path() / "second"};
  MakeTree(dir->path() / "first", "4", "2", "1", /*util=*/true);
  MakeTree(dir->path() / "second", "3", "5", "0");
  auto found = FindCutlass(search);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->version, "4.2.1");
  EXPECT_EQ(found->include, dir->path() / "first" / "include");
  EXPECT_EQ(found->util_include, dir->path() / "first" / "tools" / "util" / "include");

  search.cutlass_roots = {dir->path() / "second"};
  found = FindCutlass(search);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->version, "3.5.0");
  EXPECT_TRUE(found->util_include.empty());

  search.cutlass_roots = {dir->path() / "absent"};
  EXPECT_FALSE(FindCutlass(search).has_value());
}

// A CuTe kernel of the kind a model writes: a tiled copy through register fragments.
const char kCuteCandidate[] = R"(#include <kpilot/kernel.h>
#include <cute/tensor.hpp>
using namespace cute;

__global__ void tiled_copy(const float* in, float* out, int n) {
  Tensor g_in = make_tensor(make_gmem_ptr(in), make_layout(make_shape(n)));
  Tensor g_out = make_tensor(make_gmem_ptr(out), make_layout(make_shape(n)));
  Tensor t_in = local_tile(g_in, make_shape(Int<256>{}), make_coord(blockIdx.x));
  Tensor t_out = local_tile(g_out, make_shape(Int<256>{}), make_coord(blockIdx.x));
  Tensor frag = make_tensor<float>(make_shape(Int<1>{}));
  int i = threadIdx.x;
  if (blockIdx.x * 256 + i < n) {
    frag(0) = t_in(i);
    t_out(i) = 2.f * frag(0);
  }
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int, const kpilot_tensor* outputs, int,
                                const kpilot_scalar*, int, void* stream) {
  int n = (int)kpilot_numel(&inputs[0]);
  tiled_copy<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>((const float*)inputs[0].data,
                                                               (float*)outputs[0].data, n);
  return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
)";

class CutlassCompileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (FindTool("nvcc", DefaultToolSearch()).empty()) GTEST_SKIP() << "nvcc is not installed here";
    cutlass_ = FindCutlass(DefaultToolSearch());
    if (!cutlass_) GTEST_SKIP() << "no CUTLASS headers: run scripts/setup-venv.sh (PyPI nvidia-cutlass)";
    auto dir = TempDir::Create("kpilot-cutlass-compile-");
    ASSERT_TRUE(dir.ok());
    dir_ = std::make_unique<TempDir>(std::move(*dir));
    toolchain_ = MakeSystemToolchain(dir_->path() / "cache", kIncludeDir);
    source_ = dir_->path() / "cute_copy.cu";
    ASSERT_TRUE(WriteFileAtomic(source_, kCuteCandidate).ok());
  }

  CompileOptions Options(bool cutlass) {
    CompileOptions o;
    o.cuda_arch = "sm_90a";
    o.want_sass = false;
    o.timeout_s = 300;  // CuTe's templates take nvcc tens of seconds on a small machine
    o.cutlass = cutlass;
    return o;
  }

  std::optional<CutlassHeaders> cutlass_;
  std::unique_ptr<TempDir> dir_;
  std::unique_ptr<Toolchain> toolchain_;
  fs::path source_;
};

TEST_F(CutlassCompileTest, CuteCandidateCompilesForSm90aWithTheVersionRecorded) {
  auto out = toolchain_->Compile(source_, {}, Options(true));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_TRUE(out->ok) << out->first_error << "\n" << out->log.substr(0, 2000);
  EXPECT_EQ(out->cutlass_version, cutlass_->version);
  bool has_include = false;
  for (size_t i = 0; i + 1 < out->command.size(); ++i)
    has_include |= out->command[i] == "-I" && out->command[i + 1] == cutlass_->include.string();
  EXPECT_TRUE(has_include) << "the command names the CUTLASS include folder";
}

TEST_F(CutlassCompileTest, WithoutCutlassTheFirstErrorNamesTheMissingHeader) {
  auto off = toolchain_->Compile(source_, {}, Options(false));
  ASSERT_TRUE(off.ok()) << off.status().ToString();
  EXPECT_FALSE(off->ok);
  EXPECT_NE(off->first_error.find("cute/tensor.hpp"), std::string::npos) << off->first_error;
  EXPECT_EQ(off->cutlass_version, "");
}

}  // namespace
}  // namespace kpilot
