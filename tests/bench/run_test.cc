// The bench loop with a ProblemRunner double and a real store: every problem recorded as it
// finishes, a resumed bench skips finished problems and continues an interrupted one's optimizer
// run, problems spread over devices one at a time each.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "bench/bench.h"
#include "core/fs.h"
#include "session/bench_runner.h"
#include "support/fake_clock.h"
#include "support/sync.h"

namespace kpilot {
namespace {

class FakeRunner : public ProblemRunner {
 public:
  ProblemResult Run(const BenchProblem& p, int device, int64_t resume_run,
                    const std::function<void(int64_t)>& started) override {
    int now = ++running_[device + 1];
    {
      std::lock_guard<std::mutex> lock(mu);
      calls.push_back(p.id);
      resumes[p.id] = resume_run;
      devices.insert(device);
      max_per_device = std::max(max_per_device, now);
    }
    if (clock) clock->Advance(run_time);
    int64_t run = resume_run > 0 ? resume_run : 100 + next_run_++;
    started(run);
    const bool met_others = Meet();
    --running_[device + 1];
    ProblemResult r;
    if (p.id == crash_on) throw std::runtime_error("killed");  // the process dies mid-problem
    if (p.id == always_fails || (p.id == fails_when_shared && met_others)) {
      if (failure == Failure::kError) {
        r.error = "the GPU's memory cannot hold workload default";
        return r;
      }
      r.verdict = "runtime_error";
      r.out_of_memory = failure == Failure::kOutOfMemory;
      r.message =
          std::string("the candidate failed on workload default, seed 1:\nTraceback (most recent call last):\n") +
          (r.out_of_memory ? "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB"
                           : "ValueError: shape not supported");
      return r;
    }
    r.verdict = "passed";
    r.speedup_eager = 2.0;
    r.run_id = run;
    r.evaluations = 3;
    return r;
  }
  testing::FakeClock* clock = nullptr;  // when set, each run takes `run_time` on it
  std::chrono::seconds run_time{0};
  std::mutex mu;
  std::vector<std::string> calls;
  std::map<std::string, int64_t> resumes;
  std::set<int> devices;
  int max_per_device = 0;
  std::string crash_on;
  std::string fails_when_shared;  // this problem fails when another runs on its device at the same time
  std::string always_fails;
  // How those two fail: the problem cannot be run (an error), or a runtime_error verdict whose run
  // ran out of the GPU's memory, or one that failed otherwise.
  enum class Failure { kError, kOutOfMemory, kRuntimeError } failure = Failure::kError;
  // > 1: runs meet in groups of this many, each held until its group has all arrived, so that
  // the group's runs are in progress at once (as they would be on devices working side by side).
  int meet = 1;
  int meet_runs = 1 << 30;  // only the first runs meet; later ones go straight through

 private:
  // Holds this run until the group it arrived in is complete (testing::kEventTimeout at most);
  // true when that group had others in it. (Counting runs in progress instead would race: which
  // of a group's runs increments first is up to the scheduler.)
  bool Meet() {
    std::unique_lock<std::mutex> lock(meet_mu_);
    if (arrived_ >= meet_runs) return false;
    const int group = arrived_++ / meet;
    met_.notify_all();
    if (!met_.wait_for(lock, testing::kEventTimeout, [&] { return arrived_ >= (group + 1) * meet; })) {
      ADD_FAILURE() << "a run waited in vain for " << meet << " runs at once";
      meet = 1;  // the runs still to come need not wait as long
    }
    return meet > 1;
  }
  std::mutex meet_mu_;
  std::condition_variable met_;
  int arrived_ = 0;

  std::atomic<int> running_[8] = {};  // by device + 1
  std::atomic<int> next_run_{0};
};

class Quiet : public BenchProgress {
 public:
  void Started(const BenchProblem&, int) override {}
  void Finished(const ProblemResult& r, int done, int total) override {
    finished.push_back(r.id);
    last_done = done;
    last_total = total;
  }
  std::vector<std::string> finished;
  int last_done = 0, last_total = 0;
};

class BenchRunTest : public ::testing::Test {
 protected:
  static nlohmann::json json_config() { return {{"generator", "params"}}; }
  void SetUp() override {
    auto d = TempDir::Create("kpilot-bench-run-");
    ASSERT_TRUE(d.ok());
    dir_.emplace(std::move(d).value());
    auto s = Store::Open(dir_->path() / "store");
    ASSERT_TRUE(s.ok());
    store_ = std::move(s).value();
    suite_.name = "kb";
    suite_.root = dir_->path();
    for (const char* id : {"level1/1_A", "level1/2_B", "level2/1_C", "level2/2_D"}) {
      BenchProblem p;
      p.id = id;
      p.level = std::string(id).substr(5, 1);
      p.stem = std::string(id).substr(7);
      suite_.problems.push_back(p);
    }
  }
  // A new bench of the suite, two problems in flight on device 0 (1_A with 2_B, then 1_C with
  // 2_D), where 2_B fails as `failure` says when it shares the device.
  Result<std::vector<ProblemResult>> RunSharing(FakeRunner& runner, FakeRunner::Failure failure) {
    auto id = CreateBench(*store_, suite_, json_config());
    if (!id.ok()) return id.status();
    runner.fails_when_shared = "level1/2_B";
    runner.failure = failure;
    runner.meet = 2;
    runner.meet_runs = 4;
    Quiet progress;
    return RunBench(*store_, *id, suite_.problems, runner, {0, 0}, progress, clock_);
  }
  std::optional<TempDir> dir_;
  std::unique_ptr<Store> store_;
  Suite suite_;
  testing::FakeClock clock_;
};

TEST_F(BenchRunTest, EveryProblemIsRecordedAndTheBenchFinishes) {
  auto id = CreateBench(*store_, suite_, {{"generator", "params"}});
  ASSERT_TRUE(id.ok());
  FakeRunner runner;
  Quiet progress;
  auto results = RunBench(*store_, *id, suite_.problems, runner, {}, progress, clock_);
  ASSERT_TRUE(results.ok()) << results.status().ToString();
  ASSERT_EQ(results->size(), 4u);
  EXPECT_EQ((*results)[2].id, "level2/1_C") << "suite order";
  EXPECT_EQ((*results)[2].level, "2");
  EXPECT_EQ(runner.devices, (std::set<int>{-1})) << "no devices: one at a time, device -1";
  EXPECT_EQ(progress.last_done, 4);
  auto state = LoadBench(*store_, *id);
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->status, "finished");
  EXPECT_EQ(state->finished.size(), 4u);
  EXPECT_TRUE(state->interrupted.empty());
  EXPECT_EQ(state->config["generator"], "params");
  auto run = store_->GetRun(*id);
  ASSERT_TRUE(run.ok() && run->has_value());
  EXPECT_EQ((*run)->task_name, "bench:kb");
  EXPECT_DOUBLE_EQ((*run)->best_speedup, 2.0);
}

// Each run of a bench is a slice: its problems say which and when they finished from its start,
// so a bench run in slices (the time between them not counted) reports its own wall time.
TEST_F(BenchRunTest, EachSliceTimesItsProblemsFromItsStart) {
  auto id = CreateBench(*store_, suite_, json_config());
  ASSERT_TRUE(id.ok());
  FakeRunner runner;
  runner.clock = &clock_;
  runner.run_time = std::chrono::seconds(10);
  Quiet progress;
  const std::vector<BenchProblem> level1(suite_.problems.begin(), suite_.problems.begin() + 2);
  ASSERT_TRUE(RunBench(*store_, *id, level1, runner, {}, progress, clock_).ok());
  clock_.Advance(std::chrono::hours(2));  // the next call on a machine lent later
  auto results = RunBench(*store_, *id, suite_.problems, runner, {}, progress, clock_);
  ASSERT_TRUE(results.ok()) << results.status().ToString();
  ASSERT_EQ(results->size(), 4u);
  std::vector<std::pair<int, double>> when;
  for (const auto& r : *results) when.push_back({r.slice, r.finished_at_s});
  EXPECT_EQ(when, (std::vector<std::pair<int, double>>{{1, 10}, {1, 20}, {2, 10}, {2, 20}}));
  EXPECT_DOUBLE_EQ((*results)[0].wall_s, 10);
  auto state = LoadBench(*store_, *id);
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->slices, 2);
  BenchReport report = Summarize("kb", SuiteFormat::kKernelBench, state->finished);
  EXPECT_DOUBLE_EQ(report.wall_s, 40) << "two slices of 20 s; the two hours between them are not the bench's";
  // A resume with nothing left to run starts no slice.
  ASSERT_TRUE(RunBench(*store_, *id, suite_.problems, runner, {}, progress, clock_).ok());
  EXPECT_EQ(LoadBench(*store_, *id)->slices, 2);
}

TEST_F(BenchRunTest, AProblemThatFailsWhileSharingItsGpuRunsAgainAlone) {
  auto id = CreateBench(*store_, suite_, json_config());
  ASSERT_TRUE(id.ok());
  FakeRunner runner;
  runner.fails_when_shared = "level1/2_B";
  runner.meet = 2;  // 1_A and 2_B in flight together, then 1_C and 2_D
  runner.meet_runs = 4;
  Quiet progress;
  auto results = RunBench(*store_, *id, suite_.problems, runner, {0, 0}, progress, clock_);
  ASSERT_TRUE(results.ok()) << results.status().ToString();
  ASSERT_EQ(results->size(), 4u);
  for (const auto& r : *results) EXPECT_TRUE(r.correct()) << r.id << ": " << r.error;
  EXPECT_EQ(std::count(runner.calls.begin(), runner.calls.end(), "level1/2_B"), 2) << "once shared, once alone";
  EXPECT_EQ(runner.calls.back(), "level1/2_B") << "the second try waits for the others to finish";
  const ProblemResult& b = (*results)[1];
  ASSERT_EQ(b.warnings.size(), 1u);
  EXPECT_NE(b.warnings[0].find("ran again alone"), std::string::npos) << b.warnings[0];
  EXPECT_NE(b.warnings[0].find("cannot hold"), std::string::npos) << "the first failure is named";
  auto state = LoadBench(*store_, *id);
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->finished.size(), 4u) << "the failure while shared is not recorded as a result";
  EXPECT_EQ(progress.last_done, 4);
}

TEST_F(BenchRunTest, ACandidateOutOfGpuMemoryWhileSharingRunsAgainAlone) {
  FakeRunner runner;
  auto results = RunSharing(runner, FakeRunner::Failure::kOutOfMemory);
  ASSERT_TRUE(results.ok()) << results.status().ToString();
  EXPECT_EQ(std::count(runner.calls.begin(), runner.calls.end(), "level1/2_B"), 2) << "once shared, once alone";
  const ProblemResult& b = (*results)[1];
  EXPECT_TRUE(b.correct());
  ASSERT_EQ(b.warnings.size(), 1u);
  EXPECT_NE(b.warnings[0].find("CUDA out of memory"), std::string::npos) << "the exception is named: " << b.warnings[0];
}

TEST_F(BenchRunTest, ACandidateThatFailsOtherwiseWhileSharingIsNotRunAgain) {
  FakeRunner runner;
  auto results = RunSharing(runner, FakeRunner::Failure::kRuntimeError);
  ASSERT_TRUE(results.ok()) << results.status().ToString();
  EXPECT_EQ(runner.calls.size(), 4u) << "its own failure: sharing the GPU has nothing to do with it";
  const ProblemResult& b = (*results)[1];
  EXPECT_EQ(b.verdict, "runtime_error");
  EXPECT_NE(b.message.find("shape not supported"), std::string::npos) << b.message;
  EXPECT_TRUE(b.warnings.empty());
}

TEST_F(BenchRunTest, AFailureAloneOnItsDeviceIsRecordedWithoutASecondTry) {
  auto id = CreateBench(*store_, suite_, json_config());
  ASSERT_TRUE(id.ok());
  FakeRunner runner;
  runner.always_fails = "level1/2_B";
  Quiet progress;
  auto results = RunBench(*store_, *id, suite_.problems, runner, {0}, progress, clock_);
  ASSERT_TRUE(results.ok());
  EXPECT_EQ(runner.calls.size(), 4u) << "nothing shared the device: the failure is the problem's";
  EXPECT_FALSE((*results)[1].error.empty());
  EXPECT_TRUE((*results)[1].warnings.empty());
}

TEST_F(BenchRunTest, ResumeSkipsFinishedProblemsAndContinuesTheInterruptedRun) {
  auto id = CreateBench(*store_, suite_, json_config());
  ASSERT_TRUE(id.ok());
  {
    FakeRunner runner;
    runner.crash_on = "level2/1_C";
    Quiet progress;
    // The "crash": the runner throws out of the loop after C's run was recorded as started.
    EXPECT_THROW((void)RunBench(*store_, *id, suite_.problems, runner, {}, progress, clock_), std::runtime_error);
    EXPECT_EQ(progress.finished, (std::vector<std::string>{"level1/1_A", "level1/2_B"}));
  }
  auto state = LoadBench(*store_, *id);
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->status, "running");
  EXPECT_EQ(state->finished.size(), 2u);
  ASSERT_EQ(state->interrupted.size(), 1u);
  EXPECT_EQ(state->interrupted[0].first, "level2/1_C");
  int64_t c_run = state->interrupted[0].second;
  EXPECT_GT(c_run, 0);

  FakeRunner runner;
  Quiet progress;
  auto results = RunBench(*store_, *id, suite_.problems, runner, {}, progress, clock_);
  ASSERT_TRUE(results.ok()) << results.status().ToString();
  EXPECT_EQ(runner.calls, (std::vector<std::string>{"level2/1_C", "level2/2_D"})) << "A and B are not run again";
  EXPECT_EQ(runner.resumes["level2/1_C"], c_run) << "C continues its optimizer run";
  EXPECT_EQ(runner.resumes["level2/2_D"], 0);
  EXPECT_EQ(results->size(), 4u);
  EXPECT_EQ(progress.last_done, 4) << "counts include the problems finished before";
  EXPECT_EQ(LoadBench(*store_, *id)->status, "finished");
}

TEST_F(BenchRunTest, OneProblemPerDeviceAtATime) {
  for (int i = 0; i < 8; ++i) {
    BenchProblem p;
    p.id = "more/" + std::to_string(i);
    p.level = "more";
    suite_.problems.push_back(p);
  }
  auto id = CreateBench(*store_, suite_, json_config());
  ASSERT_TRUE(id.ok());
  FakeRunner runner;
  runner.meet = 3;  // every device holds a problem before any finishes
  Quiet progress;
  auto results = RunBench(*store_, *id, suite_.problems, runner, {0, 1, 2}, progress, clock_);
  ASSERT_TRUE(results.ok());
  EXPECT_EQ(results->size(), 12u);
  EXPECT_EQ(runner.max_per_device, 1);
  EXPECT_EQ(runner.devices, (std::set<int>{0, 1, 2})) << "three problems at once, one on each device";
}

TEST(SecondsLeft, AtTheSlicesPaceSoFar) {
  EXPECT_DOUBLE_EQ(SecondsLeft(60, 4, 6), 90);
  EXPECT_DOUBLE_EQ(SecondsLeft(60, 0, 6), 0) << "no pace yet";
  EXPECT_DOUBLE_EQ(SecondsLeft(60, 4, 0), 0) << "nothing left";
}

TEST(TorchThreadsPerProblem, AnEqualShareOfTheHostsCoresWhenProblemsShareIt) {
  EXPECT_EQ(TorchThreadsPerProblem(16, 0), 0);  // no GPU: one at a time
  EXPECT_EQ(TorchThreadsPerProblem(16, 1), 0);  // alone: torch's default
  EXPECT_EQ(TorchThreadsPerProblem(16, 4), 4);
  EXPECT_EQ(TorchThreadsPerProblem(16, 3), 5);
  EXPECT_EQ(TorchThreadsPerProblem(2, 8), 1);  // never none
}

TEST_F(BenchRunTest, AnOptimizerRunIsNotABench) {
  RunRecord r;
  r.task_name = "saxpy";
  r.config_json = "{}";
  r.status = "finished";
  auto run = store_->CreateRun(r);
  ASSERT_TRUE(run.ok());
  auto state = LoadBench(*store_, *run);
  ASSERT_FALSE(state.ok());
  EXPECT_NE(state.status().message().find("kpilot optimize --resume"), std::string::npos);
  EXPECT_FALSE(LoadBench(*store_, 999).ok());
}

}  // namespace
}  // namespace kpilot
