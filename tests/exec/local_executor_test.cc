// The local executor's evaluation queues: one per listed GPU, each job on the first free one,
// never two evaluations on one device at once. Host evaluations stand in for GPU ones (the host
// runner ignores the device), so this runs on any machine.
#include <gtest/gtest.h>

#include <map>
#include <mutex>

#include "core/fs.h"
#include "exec/executor.h"
#include "task/loader.h"
#include "test_paths.h"
#include "toolchain/toolchain.h"

namespace kpilot {
namespace {

TEST(LocalExecutor, EachListedDeviceHasItsOwnExclusiveQueue) {
  auto dir = TempDir::Create("kpilot-local-executor-");
  ASSERT_TRUE(dir.ok());
  auto task = LoadTask(testing::SourceDir() / "examples" / "host" / "saxpy");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  auto toolchain = MakeSystemToolchain(dir->path() / "cache", testing::SourceDir() / "include");
  LocalExecutor executor(*toolchain, SystemProcessRunner(), testing::RunnerPath(), 2, nullptr, {3, 7});
  EXPECT_EQ(executor.Devices(), 2);
  std::vector<std::future<EvalJobResult>> futures;
  for (int i = 0; i < 6; ++i) {
    EvalJob job;
    job.task = &*task;
    job.source = task->dir / "candidates" / "omp_simd.cpp";
    job.options.workloads = {task->workloads.front().name};
    job.options.timing.max_seconds = 0.2;
    futures.push_back(executor.Submit(std::move(job)));
  }
  std::map<int, std::vector<std::pair<double, double>>> by_device;
  for (auto& f : futures) {
    EvalJobResult r = f.get();
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    EXPECT_TRUE(r.evaluation.verdict.passed()) << r.evaluation.verdict.summary;
    ASSERT_TRUE(r.device == 3 || r.device == 7) << r.device;
    by_device[r.device].push_back({r.eval_start_s, r.eval_end_s});
  }
  EXPECT_EQ(by_device.size(), 2u) << "both queues took work";
  for (auto& [device, spans] : by_device) {
    std::sort(spans.begin(), spans.end());
    for (size_t i = 1; i < spans.size(); ++i)
      EXPECT_LE(spans[i - 1].second, spans[i].first) << "two evaluations at once on device " << device;
  }
  EXPECT_LE(executor.BusySeconds(), 2 * executor.ElapsedSeconds() + 1e-6);
}

TEST(LocalExecutor, WithoutDevicesOneQueueRunsEachJobOnItsOwnDevice) {
  auto dir = TempDir::Create("kpilot-local-executor-");
  ASSERT_TRUE(dir.ok());
  auto task = LoadTask(testing::SourceDir() / "examples" / "host" / "saxpy");
  ASSERT_TRUE(task.ok());
  auto toolchain = MakeSystemToolchain(dir->path() / "cache", testing::SourceDir() / "include");
  LocalExecutor executor(*toolchain, SystemProcessRunner(), testing::RunnerPath(), 1);
  EXPECT_EQ(executor.Devices(), 1);
  EvalJob job;
  job.task = &*task;
  job.source = task->dir / "candidates" / "omp_simd.cpp";
  job.options.workloads = {task->workloads.front().name};
  job.options.timing.max_seconds = 0.2;
  job.options.device = 5;
  EvalJobResult r = executor.Submit(std::move(job)).get();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.device, -1);
}

// on_done sees each finished evaluation before its future is ready, and its record reads back as
// the same result; skipped and compile-only jobs are not reported.
TEST(LocalExecutor, ReportsEachFinishedEvaluationBeforeItsFutureIsReady) {
  auto dir = TempDir::Create("kpilot-local-executor-");
  ASSERT_TRUE(dir.ok());
  auto task = LoadTask(testing::SourceDir() / "examples" / "host" / "saxpy");
  ASSERT_TRUE(task.ok());
  auto toolchain = MakeSystemToolchain(dir->path() / "cache", testing::SourceDir() / "include");
  LocalExecutor executor(*toolchain, SystemProcessRunner(), testing::RunnerPath(), 2);
  std::mutex mu;
  std::vector<nlohmann::json> done;
  auto job = [&](bool compile_only, bool admit) {
    EvalJob j;
    j.task = &*task;
    j.source = task->dir / "candidates" / "omp_simd.cpp";
    j.options.workloads = {task->workloads.front().name};
    j.options.timing.max_seconds = 0.2;
    j.compile_only = compile_only;
    if (!admit) j.admit = [](const std::string&) { return false; };
    j.on_done = [&](const EvalJobResult& r) {
      std::lock_guard<std::mutex> lock(mu);
      done.push_back(RecordJson(r));
    };
    return j;
  };
  EvalJobResult evaluated = executor.Submit(job(false, true)).get();
  {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_EQ(done.size(), 1u) << "reported before the future was ready";
  }
  EXPECT_TRUE(executor.Submit(job(true, true)).get().skipped);
  EXPECT_TRUE(executor.Submit(job(false, false)).get().skipped);
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(done.size(), 1u) << "compile-only and refused jobs are not reported";
  auto back = EvalJobResultFromRecord(done.front());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(RecordJson(*back), RecordJson(evaluated));
  EXPECT_EQ(back->object_sha, evaluated.object_sha);
  EXPECT_FALSE(back->object_sha.empty());
  EXPECT_TRUE(back->evaluation.verdict.passed());
  EXPECT_FALSE(EvalJobResultFromRecord(nlohmann::json{{"kpilot_job_record_version", 2}}).ok());
}

}  // namespace
}  // namespace kpilot
