// ExecutorFootprints (optimizer.h): compile footprints are waited for only while the executor has
// evaluations queued behind those its GPUs run, so that the search never waits for them with the
// GPU idle. A scripted executor stands in: its compile-only jobs finish when the test says so,
// and it tells the test when the probe, waiting, asks it how much work is ahead.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <thread>

#include "optimize/optimizer.h"
#include "support/sync.h"

namespace kpilot {
namespace {

class ScriptedExecutor : public Executor {
 public:
  std::future<EvalJobResult> Submit(EvalJob job) override {
    std::lock_guard<std::mutex> lock(mu_);
    submitted_.push_back(job.params);
    waited_for_.push_back(job.waited_for);
    if (job.cancelled) flags_.push_back(job.cancelled);
    promises_.emplace_back();
    return promises_.back().get_future();
  }
  double BusySeconds() const override { return 0; }
  double ElapsedSeconds() const override { return 0; }
  // A probe asks only while it waits for its compiles, having waited a while already.
  int EvaluationsReady() const override {
    {
      std::lock_guard<std::mutex> lock(polls_mu_);
      ++polls_;
    }
    polled_.notify_all();
    return ahead.load();
  }
  // Waits until EvaluationsReady has been asked `n` more times than when `since` was taken
  // (Polls()); false after testing::kEventTimeout.
  bool AwaitPolls(int since, int n = 1) {
    std::unique_lock<std::mutex> lock(polls_mu_);
    return polled_.wait_for(lock, testing::kEventTimeout, [&] { return polls_ >= since + n; });
  }
  int Polls() {
    std::lock_guard<std::mutex> lock(polls_mu_);
    return polls_;
  }

  // Finishes every compile submitted so far: `registers` = the config's value of R.
  void FinishAll() {
    std::lock_guard<std::mutex> lock(mu_);
    for (; finished_ < promises_.size(); ++finished_) {
      EvalJobResult r;
      r.compiled = true;
      r.skipped = true;
      KernelResources k;
      k.registers = std::stoi(submitted_[finished_].at("R"));
      k.spill_stores = 8;
      r.resources = {k};
      promises_[finished_].set_value(std::move(r));
    }
  }
  size_t Submitted() {
    std::lock_guard<std::mutex> lock(mu_);
    return submitted_.size();
  }
  // Each submitted job's value of R, "?" appended while no one waits for it (EvalJob::waited_for).
  std::vector<std::string> Log() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> out;
    for (size_t i = 0; i < submitted_.size(); ++i)
      out.push_back(submitted_[i].at("R") + (waited_for_[i] && !waited_for_[i]->load() ? "?" : ""));
    return out;
  }
  // How many submitted jobs carry a cancel flag, and how many of those are set.
  std::pair<size_t, size_t> Flags() {
    std::lock_guard<std::mutex> lock(mu_);
    size_t set = 0;
    for (const auto& f : flags_) set += f->load() ? 1 : 0;
    return {flags_.size(), set};
  }

  std::atomic<int> ahead{0};  // EvaluationsReady: compiled jobs queued for or running on the GPU

 private:
  std::mutex mu_;
  std::vector<ParamValues> submitted_;
  std::vector<std::shared_ptr<const std::atomic<bool>>> waited_for_;
  std::vector<std::shared_ptr<const std::atomic<bool>>> flags_;
  std::deque<std::promise<EvalJobResult>> promises_;
  size_t finished_ = 0;
  mutable std::mutex polls_mu_;
  mutable std::condition_variable polled_;
  mutable int polls_ = 0;
};

struct Fixture {
  ScriptedExecutor executor;
  Task task;
  ExecutorFootprints probe{executor, task, EvalOptions{}, [](const std::string&, const std::string& name) {
                             return Result<std::filesystem::path>(std::filesystem::path("/sources") / name);
                           }};
  std::vector<ParamValues> configs{{{"R", "32"}}, {{"R", "64"}}, {{"R", "128"}}};
};

TEST(ExecutorFootprints, WaitsForItsCompilesWhileEvaluationsAreQueuedBehindTheRunningOne) {
  Fixture f;
  f.executor.ahead = 2;  // one GPU: one running, one queued
  std::thread finisher([&] {
    EXPECT_TRUE(f.executor.AwaitPolls(0)) << "the probe did not wait";
    f.executor.FinishAll();
  });
  auto got = f.probe.Probe("src", "k.cu", f.configs);
  finisher.join();
  ASSERT_EQ(got.size(), 3u);
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(got[i].has_value()) << i;
    EXPECT_TRUE(got[i]->compiles);
    EXPECT_EQ(got[i]->registers, std::stoi(f.configs[i].at("R")));
    EXPECT_EQ(got[i]->spill_bytes, 8);
  }
  // Known now: asking again compiles nothing.
  EXPECT_EQ(f.probe.Probe("src", "k.cu", f.configs).size(), 3u);
  EXPECT_EQ(f.executor.Submitted(), 3u);
}

TEST(ExecutorFootprints, ReturnsWhatIsKnownOnceOnlyTheRunningEvaluationIsLeftAndFindsTheRestLater) {
  Fixture f;
  f.executor.ahead = 2;
  std::thread idler([&] {
    EXPECT_TRUE(f.executor.AwaitPolls(0)) << "the probe did not wait";
    f.executor.ahead = 1;  // the last one runs: the next drafts must compile now, or the GPU idles
  });
  const auto t0 = std::chrono::steady_clock::now();
  auto got = f.probe.Probe("src", "k.cu", f.configs);
  idler.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  ASSERT_EQ(got.size(), 3u);
  for (const auto& g : got) EXPECT_FALSE(g.has_value()) << "unknown for this pick";
  EXPECT_EQ(f.probe.Pending(), 3u) << "the compiles go on";
  EXPECT_EQ(f.executor.Flags(), (std::pair<size_t, size_t>{3, 0}));

  f.executor.FinishAll();
  got = f.probe.Probe("src", "k.cu", f.configs);  // idle, but done: no wait needed
  for (const auto& g : got) EXPECT_TRUE(g.has_value());
  EXPECT_EQ(f.executor.Submitted(), 3u) << "each config is compiled once";
  EXPECT_EQ(f.probe.Pending(), 0u);
}

TEST(ExecutorFootprints, AnEvaluatedDraftsCompileReportIsNotCompiledAgain) {
  Fixture f;
  EvalJobResult spilled;
  spilled.compiled = true;
  KernelResources k;
  k.registers = 255;
  k.spill_loads = 64;
  spilled.resources = {k};
  f.probe.Remember("/sources/k.cu", f.configs[0], spilled);
  EvalJobResult broken;  // did not compile
  f.probe.Remember("/sources/k.cu", f.configs[1], broken);
  EvalJobResult failed;  // kpilot's own failure: not remembered
  failed.status = Status::Internal("runner crashed");
  f.probe.Remember("/sources/k.cu", f.configs[2], failed);

  auto got = f.probe.Probe("src", "k.cu", f.configs);  // nothing ahead: returns at once
  ASSERT_TRUE(got[0].has_value());
  EXPECT_EQ(got[0]->registers, 255);
  EXPECT_EQ(got[0]->spill_bytes, 64);
  ASSERT_TRUE(got[1].has_value());
  EXPECT_FALSE(got[1]->compiles);
  EXPECT_FALSE(got[2].has_value());
  EXPECT_EQ(f.executor.Submitted(), 1u) << "only the config with no report is compiled";
  f.probe.Cancel();  // the run stopped picking: what is still queued is dropped
  EXPECT_EQ(f.executor.Flags(), (std::pair<size_t, size_t>{1, 1}));
  f.executor.FinishAll();  // the probe's destructor waits for its compiles
}

// Prefetch (the configs the generator anticipates) submits compiles no one waits for and never
// waits, even with evaluations queued; a Probe of a config still queued that way waits for it,
// which moves it up with the probe's own (the flag the executor reads), and lets it go after.
TEST(ExecutorFootprints, PrefetchSubmitsGuessesAtOnceAndAProbeWaitsForOneStillQueued) {
  Fixture f;
  f.executor.ahead = 2;  // a Probe now would wait
  const std::filesystem::path source = "/sources/k.cu";
  EvalJobResult evaluated;
  evaluated.compiled = true;
  f.probe.Remember(source, {{"R", "16"}}, evaluated);
  std::vector<ParamValues> guesses{{{"R", "16"}}, {{"R", "32"}}, {{"R", "64"}}, {{"R", "128"}}};
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(f.probe.Prefetch(source, guesses), 3u) << "R=16 is known from its evaluation";
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  // Last first: the executor takes the newest of these first, so R=32 compiles first.
  EXPECT_EQ(f.executor.Log(), (std::vector<std::string>{"128?", "64?", "32?"}));
  EXPECT_EQ(f.probe.Prefetch(source, guesses), 0u) << "each guess is submitted once";
  EXPECT_EQ(f.probe.Prefetched(), 3u);

  const int polls = f.executor.Polls();
  std::thread prober([&] { f.probe.Probe("src", "k.cu", {f.configs[0], f.configs[1]}); });
  EXPECT_TRUE(f.executor.AwaitPolls(polls)) << "the probe did not wait";
  EXPECT_EQ(f.executor.Log(), (std::vector<std::string>{"128?", "64", "32"})) << "waited for, not submitted again";
  f.executor.ahead = 0;  // the GPU runs dry: the probe stops waiting
  prober.join();
  EXPECT_EQ(f.executor.Log(), (std::vector<std::string>{"128?", "64?", "32?"}));

  f.executor.FinishAll();
  auto got = f.probe.Probe("src", "k.cu", f.configs);
  for (const auto& g : got) EXPECT_TRUE(g.has_value());
  EXPECT_EQ(f.executor.Submitted(), 3u) << "every config was compiled by its guess";
  f.probe.Cancel();
  EXPECT_EQ(f.probe.Prefetch(source, {{{"R", "256"}}}), 0u) << "a run that stopped picking guesses no more";
}

// Prefetch runs on the executor's evaluation thread (an evaluation's on_done): it must not wait
// while a Probe waits for its compiles, or the GPU idles with compiled drafts queued.
TEST(ExecutorFootprints, PrefetchDoesNotWaitForAProbeThatIsWaiting) {
  Fixture f;
  f.executor.ahead = 2;  // the probe waits until its compiles finish
  std::thread prober([&] { f.probe.Probe("src", "k.cu", f.configs); });
  EXPECT_TRUE(f.executor.AwaitPolls(0)) << "the probe did not wait";  // its lock is released by then
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(f.probe.Prefetch("/sources/k.cu", {{{"R", "256"}}}), 1u);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(500));
  f.executor.FinishAll();
  prober.join();
  f.executor.FinishAll();
}

}  // namespace
}  // namespace kpilot
