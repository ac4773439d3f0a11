// The cuda examples on a real GPU (label gpu): each reference evaluated as a candidate passes
// with a speedup near 1; each hand-optimized candidate passes and is faster.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <set>

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
  Evaluation Eval(const Task& task, const fs::path& candidate, RunnerChannel* runner = nullptr) {
    Evaluator ev(*toolchain_, SystemProcessRunner(), testing::RunnerPath());
    EvalOptions opt;
    opt.compile.cuda_arch = arch_;
    opt.timing.max_seconds = 1.0;
    opt.calibration = calibration_;
    auto e = ev.Evaluate(task, candidate, opt, runner);
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
    // Every workload's launches are traced (a counter profile of that workload reads them).
    std::set<std::string> traced;
    if (ref.run.details.contains("launch_trace"))
      for (const auto& c : ref.run.details["launch_trace"]) traced.insert(c.value("workload", ""));
    for (const auto& w : task->workloads)
      EXPECT_TRUE(traced.count(w.name)) << task->name << "/" << w.name << " untraced";
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

// A served runner evaluates one after another in one process: the CUDA context, stream and
// CUPTI set-up of the first request serve the later ones, and the results are those of a runner
// of its own.
TEST_F(CudaEval, AServedRunnerKeepsItsContextAcrossEvaluations) {
  auto task = LoadTask(testing::SourceDir() / "examples" / "cuda" / "vector_add");
  ASSERT_TRUE(task.ok()) << task.status().message();
  ServedRunner served(testing::RunnerPath());
  std::vector<fs::path> candidates = {task->reference.path};
  for (auto& c : fs::directory_iterator(task->dir / "candidates")) candidates.push_back(c.path());
  candidates.push_back(task->reference.path);
  int pid = 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    Evaluation e = Eval(*task, candidates[i], &served);
    EXPECT_EQ(e.verdict.kind, VerdictKind::kPassed) << candidates[i] << ": " << e.verdict.summary;
    const nlohmann::json& s = e.run.details["served"];
    ASSERT_TRUE(s.is_object()) << e.run.details.dump();
    EXPECT_EQ(s.value("request", 0), static_cast<int>(i) + 1) << s.dump();
    EXPECT_EQ(s.value("next", ""), "ready") << s.dump();
    if (i == 0) pid = s.value("pid", 0);
    EXPECT_EQ(s.value("pid", 0), pid);
    const nlohmann::json& tl = e.run.details["timeline_s"];
    const double context_s = tl.value("context", -1.0) - tl.value("gpu_lock", 0.0);
    std::cout << fmt::format("served request {} {:<24} context {:.4f} s, runner {:.3f} s, speedup {:.3f}\n", i + 1,
                             candidates[i].filename().string(), context_s, e.run.wall_s, e.speedup_geomean);
    if (i > 0) {
      EXPECT_LT(context_s, 0.01) << "request " << i + 1 << " made a context again";
    }
    EXPECT_TRUE(e.run.details.value("cupti", false)) << "the launch trace works in every request";
    if (candidates[i] == task->reference.path) {
      for (const auto& t : e.timings) EXPECT_NEAR(t.speedup.ratio, 1.0, 0.05) << t.workload;
    }
  }
  EXPECT_EQ(served.servers_started(), 1);
}

// A candidate whose result is right but which leaves CUDA state behind that would change a later
// candidate's run (the adversarial suite's "leave CUDA state behind" cases) gets its verdict, and
// the served runner then retires: the next request runs in a fresh process, and is ready again.
TEST_F(CudaEval, AServedRunnerRetiresAfterACandidateLeavesCudaStateChanged) {
  const fs::path suite = testing::SourceDir() / "tests" / "adversarial";
  auto task = LoadTask(suite / "tasks" / "vadd");
  ASSERT_TRUE(task.ok()) << task.status().message();
  ServedRunner served(testing::RunnerPath());
  const fs::path honest = suite / "candidates" / "honest_vadd.cu";
  const std::pair<const char*, const char*> cases[] = {{"persisting_l2_limit.cu", "persisting L2"},
                                                       {"stream_access_window.cu", "access-policy window"},
                                                       {"l2_fetch_granularity.cu", "fetch granularity"}};
  Evaluation first = Eval(*task, honest, &served);
  ASSERT_TRUE(first.run.details["served"].is_object()) << first.run.details.dump();
  EXPECT_EQ(first.run.details["served"].value("next", ""), "ready") << first.run.details["served"].dump();
  int started = served.servers_started();
  for (const auto& [file, named] : cases) {
    Evaluation e = Eval(*task, suite / "candidates" / file, &served);
    EXPECT_EQ(e.verdict.kind, VerdictKind::kPassed) << file << ": " << e.verdict.summary;
    const nlohmann::json& s = e.run.details["served"];
    ASSERT_TRUE(s.is_object()) << file << ": " << e.run.details.dump();
    EXPECT_EQ(s.value("next", ""), "retire") << file << ": " << s.dump();
    EXPECT_NE(s.value("why", "").find(named), std::string::npos) << file << ": " << s.dump();
    std::cout << fmt::format("{:<26} retired: {}\n", file, s.value("why", ""));
    Evaluation after = Eval(*task, honest, &served);
    EXPECT_EQ(after.verdict.kind, VerdictKind::kPassed) << after.verdict.summary;
    EXPECT_EQ(after.run.details["served"].value("next", ""), "ready") << after.run.details["served"].dump();
    EXPECT_EQ(served.servers_started(), started + 1) << "after " << file << ": a fresh runner";
    started = served.servers_started();
  }
}

}  // namespace
}  // namespace kpilot
