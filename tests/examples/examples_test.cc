// Every bundled example loads, and every reference, baseline and candidate compiles (cuda ones
// with nvcc for sm_90a, so CI, which has no GPU, still holds them to the compile gate).
#include <gtest/gtest.h>

#include <filesystem>

#include "core/fs.h"
#include "task/loader.h"
#include "test_paths.h"
#include "toolchain/toolchain.h"

namespace kpilot {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> TaskDirs() {
  std::vector<fs::path> dirs;
  for (const char* backend : {"host", "cuda"})
    for (auto& e : fs::directory_iterator(testing::SourceDir() / "examples" / backend))
      if (fs::exists(e.path() / "task.toml")) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

TEST(Examples, FourHostAndEightCudaTasksLoad) {
  int host = 0, cuda = 0;
  for (const auto& dir : TaskDirs()) {
    auto task = LoadTask(dir);
    ASSERT_TRUE(task.ok()) << dir << ": " << task.status().message();
    (task->backend == Backend::kCuda ? cuda : host)++;
    int candidates = 0;
    for (auto& e : fs::directory_iterator(dir / "candidates")) candidates += e.is_regular_file();
    EXPECT_GE(candidates, 1) << dir;
  }
  EXPECT_GE(host, 4);
  EXPECT_GE(cuda, 8);
}

TEST(Examples, EverySourceCompiles) {
  auto cache = TempDir::Create("kpilot-examples-test-");
  ASSERT_TRUE(cache.ok());
  auto toolchain = MakeSystemToolchain(cache->path(), testing::SourceDir() / "include");
  CompileOptions opt;
  opt.cuda_arch = "sm_90a";
  opt.want_sass = false;
  opt.timeout_s = 600;  // the CUTLASS GEMM's templates take nvcc over a minute on a 2-core machine
  int compiled = 0;
  for (const auto& dir : TaskDirs()) {
    auto task = LoadTask(dir);
    ASSERT_TRUE(task.ok());
    std::vector<fs::path> sources = {task->reference.path};
    for (const auto& b : task->baselines) sources.push_back(b.path);
    for (auto& e : fs::directory_iterator(dir / "candidates")) sources.push_back(e.path());
    for (const auto& src : sources) {
      auto out = toolchain->Compile(src, {}, opt);
      ASSERT_TRUE(out.ok()) << src << ": " << out.status().message();
      EXPECT_TRUE(out->ok) << src << ": " << out->first_error;
      if (task->backend == Backend::kCuda) {
        EXPECT_FALSE(out->resources.empty()) << src << ": no ptxas report";
      }
      ++compiled;
    }
  }
  EXPECT_GE(compiled, 24);
}

}  // namespace
}  // namespace kpilot
