// The local executor's evaluation queues: one per listed GPU, each job on the first free one,
// never two evaluations on one device at once. Host evaluations stand in for GPU ones (the host
// runner ignores the device), so this runs on any machine.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "exec/executor.h"
#include "local_executor_helpers.h"
#include "support/sync.h"

namespace kpilot {
namespace {

TEST(LocalExecutor, EachListedDeviceHasItsOwnExclusiveQueue) {
  Saxpy saxpy;
  ASSERT_NO_FATAL_FAILURE(saxpy.Load());
  LocalExecutor executor(*saxpy.toolchain, SystemProcessRunner(), testing::RunnerPath(), 2, nullptr, {3, 7});
  EXPECT_EQ(executor.Devices(), 2);
  std::vector<std::future<EvalJobResult>> futures;
  for (int i = 0; i < 6; ++i) futures.push_back(executor.Submit(SaxpyJob(saxpy.task, 0.2)));
  std::map<int, std::vector<std::pair<double, double>>> by_device;
  for (auto& f : futures) {
    EvalJobResult r = f.get();
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    EXPECT_TRUE(r.evaluation.verdict.passed()) << r.evaluation.verdict.summary;
    ASSERT_TRUE(r.device == 3 || r.device == 7) << r.device;
    // Each job's times on the executor's clock come in the order its stages ran.
    EXPECT_GT(r.submitted_s, 0);
    EXPECT_LE(r.submitted_s, r.compile_start_s);
    EXPECT_LT(r.compile_start_s, r.compile_end_s);
    EXPECT_NEAR(r.compile_s, r.compile_end_s - r.compile_start_s, 1e-9);
    EXPECT_LE(r.compile_end_s, r.eval_start_s);
    EXPECT_LT(r.eval_start_s, r.eval_end_s);
    EXPECT_LE(r.eval_end_s, executor.ElapsedSeconds());
    by_device[r.device].push_back({r.eval_start_s, r.eval_end_s});
  }
  EXPECT_EQ(by_device.size(), 2u) << "both queues took work";
  for (auto& [device, spans] : by_device) {
    std::sort(spans.begin(), spans.end());
    for (size_t i = 1; i < spans.size(); ++i)
      EXPECT_LE(spans[i - 1].second, spans[i].first) << "two evaluations at once on device " << device;
  }
  EXPECT_LE(executor.BusySeconds(), 2 * executor.ElapsedSeconds() + 1e-6);
  EXPECT_GT(executor.ChecksAndTimingSeconds(), 0.0) << "the host runner's timeline";
  EXPECT_LT(executor.ChecksAndTimingSeconds(), executor.BusySeconds());
}

// The adaptive pipeline depth reads the busy seconds over each batch's window: an evaluation
// that spans windows counts in each as it runs, not all in the window where it ends (a window
// inside one long evaluation would otherwise read 0% busy and deepen the pipeline).
TEST(LocalExecutor, BusySecondsCountAnEvaluationWhileItRuns) {
  Saxpy saxpy;
  ASSERT_NO_FATAL_FAILURE(saxpy.Load());
  LocalExecutor executor(*saxpy.toolchain, SystemProcessRunner(), testing::RunnerPath(), 2);
  auto f = executor.Submit(SaxpyJob(saxpy.task, 1.0));
  bool seen = false;
  while (f.wait_for(std::chrono::milliseconds(10)) == std::future_status::timeout)
    if (executor.BusySeconds() > 0.2) {
      seen = true;
      break;
    }
  EXPECT_TRUE(seen) << "busy seconds grew while the evaluation ran";
  EvalJobResult r = f.get();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_NEAR(executor.BusySeconds(), r.eval_end_s - r.eval_start_s, 1e-9) << "counted once when it ended";
}

TEST(RunnerChecksAndTimingSeconds, FromObjectsToTheEndOfTimingOrOfTheChecks) {
  using nlohmann::json;
  EXPECT_DOUBLE_EQ(RunnerChecksAndTimingSeconds(
                       json{{"timeline_s", {{"context", 0.2}, {"objects", 0.25}, {"checks", 0.4}, {"timing", 0.9}}}}),
                   0.65);
  EXPECT_DOUBLE_EQ(RunnerChecksAndTimingSeconds(json{{"timeline_s", {{"objects", 0.25}, {"checks", 0.4}}}}), 0.15)
      << "nothing timed";
  EXPECT_EQ(RunnerChecksAndTimingSeconds(json{{"timeline_s", {{"checks", 0.4}}}}), 0.0) << "no objects step";
  EXPECT_EQ(RunnerChecksAndTimingSeconds(json::object()), 0.0);
  EXPECT_EQ(RunnerChecksAndTimingSeconds(json{{"timeline_s", "garbled"}}), 0.0);
}

// With RunnerReuse::kAll each queue keeps one served runner: its evaluations run in the same
// process, numbered in order. By default (kCuda) a host task's evaluations start runners of
// their own.
TEST(LocalExecutor, EachQueueKeepsOneServedRunnerForItsEvaluations) {
  Saxpy saxpy;
  ASSERT_NO_FATAL_FAILURE(saxpy.Load());
  auto reference_job = [&] {
    EvalJob j = SaxpyJob(saxpy.task, 0.1);
    j.source = saxpy.task.reference.path;  // single-threaded: nothing stays behind, so the runner is kept
    return j;
  };
  {
    LocalExecutor executor(*saxpy.toolchain, SystemProcessRunner(), testing::RunnerPath(), 2, nullptr, {3, 7},
                           RunnerReuse::kAll);
    std::vector<std::future<EvalJobResult>> futures;
    for (int i = 0; i < 6; ++i) futures.push_back(executor.Submit(reference_job()));
    std::map<int, std::vector<int>> requests_by_pid;
    std::map<int, std::set<int>> pids_by_device;
    for (auto& f : futures) {
      EvalJobResult r = f.get();
      ASSERT_TRUE(r.status.ok()) << r.status.ToString();
      ASSERT_TRUE(r.evaluation.verdict.passed()) << r.evaluation.verdict.summary;
      const nlohmann::json& served = r.evaluation.run.details["served"];
      ASSERT_TRUE(served.is_object()) << r.evaluation.run.details.dump();
      EXPECT_EQ(served.value("next", ""), "ready");
      requests_by_pid[served.value("pid", 0)].push_back(served.value("request", 0));
      pids_by_device[r.device].insert(served.value("pid", 0));
    }
    EXPECT_LE(requests_by_pid.size(), 2u) << "one runner per queue";
    for (auto& [device, pids] : pids_by_device) EXPECT_EQ(pids.size(), 1u) << "device " << device;
    for (auto& [pid, requests] : requests_by_pid) {
      std::sort(requests.begin(), requests.end());
      for (size_t i = 0; i < requests.size(); ++i) EXPECT_EQ(requests[i], static_cast<int>(i) + 1) << "runner " << pid;
    }
  }
  LocalExecutor per_eval(*saxpy.toolchain, SystemProcessRunner(), testing::RunnerPath(), 1);
  EvalJobResult r = per_eval.Submit(reference_job()).get();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.evaluation.verdict.passed());
  EXPECT_FALSE(r.evaluation.run.details.contains("served")) << "a host task's runner is its own by default";
}

TEST(LocalExecutor, WithoutDevicesOneQueueRunsEachJobOnItsOwnDevice) {
  Saxpy saxpy;
  ASSERT_NO_FATAL_FAILURE(saxpy.Load());
  LocalExecutor executor(*saxpy.toolchain, SystemProcessRunner(), testing::RunnerPath(), 1);
  EXPECT_EQ(executor.Devices(), 1);
  EvalJob job = SaxpyJob(saxpy.task, 0.2);
  job.options.device = 5;
  EvalJobResult r = executor.Submit(std::move(job)).get();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.device, -1);
}

// on_done sees each finished evaluation before its future is ready, and its record reads back as
// the same result; skipped and compile-only jobs are not reported.
TEST(LocalExecutor, ReportsEachFinishedEvaluationBeforeItsFutureIsReady) {
  Saxpy saxpy;
  ASSERT_NO_FATAL_FAILURE(saxpy.Load());
  LocalExecutor executor(*saxpy.toolchain, SystemProcessRunner(), testing::RunnerPath(), 2);
  std::mutex mu;
  std::vector<nlohmann::json> done;
  auto job = [&](bool compile_only, bool admit) {
    EvalJob j = SaxpyJob(saxpy.task, 0.2);
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

// A toolchain that records the order of first compiles per candidate source, and the nice value
// each asked for, and holds the first one until released, so that the test can queue jobs behind it.
}  // namespace
}  // namespace kpilot
