// The cuda examples on a real GPU (label gpu): each reference evaluated as a candidate passes
// with a speedup near 1; each hand-optimized candidate passes and is faster.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "core/fs.h"
#include "device/device.h"
#include "harness/harness.h"
#include "task/loader.h"
#include "test_paths.h"

namespace kpilot {
namespace {

namespace fs = std::filesystem;

class CudaEval : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    auto gpus = SystemGpuProbe().List(&why);
    if (gpus.empty()) GTEST_SKIP() << "no GPU: " << why;
    arch_ = gpus.front().Arch();
    auto dir = TempDir::Create("kpilot-cuda-test-");
    ASSERT_TRUE(dir.ok());
    cache_ = std::make_unique<TempDir>(std::move(dir).value());
    toolchain_ = MakeSystemToolchain(cache_->path(), testing::SourceDir() / "include");
  }
  Evaluation Eval(const Task& task, const fs::path& candidate) {
    Evaluator ev(*toolchain_, SystemProcessRunner(), testing::RunnerPath());
    EvalOptions opt;
    opt.compile.cuda_arch = arch_;
    opt.timing.max_seconds = 1.0;
    opt.calibration = calibration_;
    auto e = ev.Evaluate(task, candidate, opt);
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    if (!e.ok()) return {};
    if (e->run.calibration.valid()) calibration_ = e->run.calibration;
    return *e;
  }
  std::string arch_;
  std::unique_ptr<TempDir> cache_;
  std::unique_ptr<Toolchain> toolchain_;
  Calibration calibration_;
};

TEST_F(CudaEval, ReferencesPassAsCandidatesAndOptimizedOnesAreFaster) {
  int tasks = 0;
  for (auto& entry : fs::directory_iterator(testing::SourceDir() / "examples" / "cuda")) {
    auto task = LoadTask(entry.path());
    ASSERT_TRUE(task.ok()) << task.status().message();
    ++tasks;
    Evaluation ref = Eval(*task, task->reference.path);
    EXPECT_EQ(ref.verdict.kind, VerdictKind::kPassed) << task->name << " reference: " << ref.verdict.summary;
    for (const auto& t : ref.timings) {
      EXPECT_NEAR(t.speedup.ratio, 1.0, 0.05) << task->name << "/" << t.workload;
      std::cout << fmt::format("{:<14} {:<12} reference-as-candidate {:8.4f} ms  speedup {:.3f}\n", task->name,
                               t.workload, t.candidate.median, t.speedup.ratio);
    }
    for (auto& c : fs::directory_iterator(entry.path() / "candidates")) {
      Evaluation e = Eval(*task, c.path());
      EXPECT_EQ(e.verdict.kind, VerdictKind::kPassed) << c.path() << ": " << e.verdict.summary;
      EXPECT_GT(e.speedup_geomean, 1.0) << c.path();
      for (const auto& t : e.timings)
        std::cout << fmt::format("{:<14} {:<12} {:<24} {:8.4f} ms vs {:8.4f} ms  speedup {:.2f}× [{:.2f}, {:.2f}]\n",
                                 task->name, t.workload, c.path().filename().string(), t.candidate.median,
                                 t.baseline.median, t.speedup.ratio, t.speedup.ci.lo, t.speedup.ci.hi);
    }
  }
  EXPECT_GE(tasks, 8);
}

}  // namespace
}  // namespace kpilot
