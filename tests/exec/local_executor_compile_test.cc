// The local executor's compile side: references compiled before the GPU is held, SASS taken
// with or after the object, the order of compile jobs (evaluations first, guesses last and
// newest first, ahead-marked jobs), counter jobs, compile-only jobs' share of the threads, cancel.
// Toolchain doubles hold compiles at gates the tests open.
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

class GatedToolchain : public Toolchain {
 public:
  explicit GatedToolchain(Toolchain& real) : real_(real) {}
  Result<CompileOutput> Compile(const std::filesystem::path& source, const ParamValues& params,
                                const CompileOptions& options) override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      const std::string name = source.stem().string();  // the evaluations' reference is not recorded
      if (name != "reference" && std::find(order_.begin(), order_.end(), name) == order_.end()) {
        order_.push_back(name);
        nices_[name] = options.nice;
      }
      if (order_.size() == 1) {
        held_ = true;
        cv_.notify_all();
        cv_.wait(lock, [&] { return open_; });
      }
    }
    return real_.Compile(source, params, options);
  }
  // Waits until the first compile is held at the gate; false after testing::kEventTimeout.
  bool AwaitHeld() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, testing::kEventTimeout, [&] { return held_; });
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  std::vector<std::string> Order() {
    std::lock_guard<std::mutex> lock(mu_);
    return order_;
  }
  std::map<std::string, int> Nices() {
    std::lock_guard<std::mutex> lock(mu_);
    return nices_;
  }

 private:
  Toolchain& real_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false, held_ = false;
  std::vector<std::string> order_;
  std::map<std::string, int> nices_;
};

// Delegates to a real toolchain; its first compile of the task's reference waits at a gate.
class HeldFirstReferenceToolchain : public Toolchain {
 public:
  explicit HeldFirstReferenceToolchain(Toolchain& real) : real_(real) {}
  Result<CompileOutput> Compile(const std::filesystem::path& source, const ParamValues& params,
                                const CompileOptions& options) override {
    if (source.stem() == "reference" && !held_.exchange(true)) gate.Pass();
    return real_.Compile(source, params, options);
  }
  testing::Gate gate;

 private:
  Toolchain& real_;
  std::atomic<bool> held_{false};
};

// The reference is compiled beside the draft, before the evaluation takes the GPU: the
// evaluation's own compiles are cache hits, and its time on the GPU holds no compile.
TEST(LocalExecutor, CompilesTheReferenceBeforeTheEvaluationHoldsTheGpu) {
  Saxpy saxpy;
  ASSERT_NO_FATAL_FAILURE(saxpy.Load());
  HeldFirstReferenceToolchain held(*saxpy.toolchain);
  LocalExecutor executor(held, SystemProcessRunner(), testing::RunnerPath(), 1);
  auto future = executor.Submit(SaxpyJob(saxpy.task, 0.1));
  EXPECT_TRUE(held.gate.AwaitArrivals(1)) << "the reference was never compiled";
  EXPECT_EQ(executor.BusySeconds(), 0) << "the evaluation started before its reference compiled";
  const double opened_s = executor.ElapsedSeconds();
  held.gate.Open();
  EvalJobResult r = future.get();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.evaluation.verdict.passed()) << r.evaluation.verdict.summary;
  EXPECT_GE(r.compile_end_s, opened_s) << "the compile stage waited for the reference";
  EXPECT_LE(r.compile_end_s, r.eval_start_s);
  EXPECT_LT(r.evaluation.compile_s, 0.5) << "the evaluation compiled nothing itself";
}

// Delegates to a real toolchain; a compile asking for SASS inline waits until released and
// reports "FAKE SASS", standing in for a slow cuobjdump on the object. One that takes only the
// SASS ready with the object gets kSassLater, or "FAKE SASS" at once when `ready_with_object`
// (made beside the compile). Records what each compile of the candidate asked.
class SlowSassToolchain : public Toolchain {
 public:
  explicit SlowSassToolchain(Toolchain& real, bool ready_with_object = false)
      : real_(real), ready_with_object_(ready_with_object) {}
  Result<CompileOutput> Compile(const std::filesystem::path& source, const ParamValues& params,
                                const CompileOptions& options) override {
    const bool inline_sass = options.want_sass && options.sass_inline;
    if (source.stem() != "reference") {
      std::unique_lock<std::mutex> lock(mu_);
      asked_.push_back(source.stem().string() + (inline_sass ? " sass" : options.want_sass ? " ready sass" : ""));
      if (inline_sass) cv_.wait(lock, [&] { return open_; });
    }
    auto out = real_.Compile(source, params, options);
    if (out.ok() && options.want_sass) {
      out->sass = inline_sass || ready_with_object_ ? "FAKE SASS" : "";
      out->sass_status = inline_sass || ready_with_object_ ? "ok" : kSassLater;
    }
    return out;
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  std::vector<std::string> Asked() {
    std::lock_guard<std::mutex> lock(mu_);
    return asked_;
  }

 private:
  Toolchain& real_;
  const bool ready_with_object_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  std::vector<std::string> asked_;
};

// A draft goes to the GPU once its object exists; its SASS is extracted meanwhile and joins the
// evaluation before the job ends (on_done sees it). Compile-only jobs extract none.
TEST(LocalExecutor, ExtractsADraftsSassWhileItIsEvaluated) {
  Saxpy saxpy;
  ASSERT_NO_FATAL_FAILURE(saxpy.Load());
  const std::string text = *ReadFile(saxpy.task.dir / "candidates" / "omp_simd.cpp");
  ASSERT_TRUE(WriteFileAtomic(saxpy.dir->path() / "guess.cpp", text).ok());
  SlowSassToolchain slow(*saxpy.toolchain);
  LocalExecutor executor(slow, SystemProcessRunner(), testing::RunnerPath(), 2);
  EvalJob guess = SaxpyJob(saxpy.task, 0.1);
  guess.source = saxpy.dir->path() / "guess.cpp";
  guess.compile_only = true;
  EvalJobResult g = executor.Submit(std::move(guess)).get();
  ASSERT_TRUE(g.status.ok()) << g.status.ToString();
  EXPECT_TRUE(g.compiled);

  std::atomic<bool> done_saw_sass{false}, done_called{false};
  EvalJob job = SaxpyJob(saxpy.task, 0.1);
  job.on_done = [&](const EvalJobResult& r) {
    done_saw_sass = r.evaluation.compile.sass == "FAKE SASS";
    done_called = true;
  };
  auto future = executor.Submit(std::move(job));
  // The evaluation starts on the executor's thread and says nothing: poll its busy time.
  testing::WaitUntil([&] { return executor.BusySeconds() > 0; }, std::chrono::seconds(60));
  EXPECT_GT(executor.BusySeconds(), 0) << "the evaluation ran while its SASS was being extracted";
  EXPECT_EQ(future.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  EXPECT_FALSE(done_called);
  slow.Open();
  EvalJobResult r = future.get();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.evaluation.verdict.passed()) << r.evaluation.verdict.summary;
  EXPECT_EQ(r.evaluation.compile.sass, "FAKE SASS");
  EXPECT_EQ(r.evaluation.compile.sass_status, "ok");
  EXPECT_TRUE(done_called);
  EXPECT_TRUE(done_saw_sass);
  // The guess, the draft's compile stage (the SASS ready with the object: none), then its
  // evaluation's cache hit and its SASS, in either order: only the one beside the evaluation
  // asks for SASS inline.
  auto asked = slow.Asked();
  ASSERT_EQ(asked.size(), 4u);
  EXPECT_EQ(asked[0], "guess");
  EXPECT_EQ(asked[1], "omp_simd ready sass");
  std::sort(asked.begin() + 2, asked.end());
  EXPECT_EQ(asked[2], "omp_simd ready sass");
  EXPECT_EQ(asked[3], "omp_simd sass");
}

// SASS made beside the compile (SystemToolchain::SassBeside) is in the result with the object:
// nothing is extracted after it, and the job does not wait for anything but its evaluation.
TEST(LocalExecutor, TakesTheSassThatIsReadyWithTheObject) {
  Saxpy saxpy;
  ASSERT_NO_FATAL_FAILURE(saxpy.Load());
  SlowSassToolchain slow(*saxpy.toolchain, /*ready_with_object=*/true);  // opened only on the way out
  LocalExecutor executor(slow, SystemProcessRunner(), testing::RunnerPath(), 2);
  struct OpenOnExit {  // destroyed before the executor, which waits for its jobs
    SlowSassToolchain& slow;
    ~OpenOnExit() { slow.Open(); }
  } open_on_exit{slow};
  auto future = executor.Submit(SaxpyJob(saxpy.task, 0.1));
  ASSERT_EQ(future.wait_for(std::chrono::seconds(60)), std::future_status::ready)
      << "the job waited for an inline SASS extract";
  EvalJobResult r = future.get();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.evaluation.verdict.passed()) << r.evaluation.verdict.summary;
  EXPECT_EQ(r.evaluation.compile.sass, "FAKE SASS");
  EXPECT_EQ(r.sass_end_s, 0) << "no SASS was extracted beside the evaluation";
  EXPECT_EQ(slow.Asked(), (std::vector<std::string>{"omp_simd ready sass", "omp_simd ready sass"}));
}

// Compile-only jobs (the params generator's footprints) take a compile thread only when no job
// bound for evaluation waits for one; those no caller waits for (anticipated drafts, a probe's
// leftovers) only when no other compile-only job waits, newest first, and one whose flag turns on
// while it is queued moves up. EvaluationsReady counts none of them while they compile. Every
// compile runs below the runner's priority.
TEST(LocalExecutor, CompilesJobsBoundForEvaluationBeforeCompileOnlyOnesAndGuessesLastNewestFirst) {
  Saxpy saxpy;
  ASSERT_NO_FATAL_FAILURE(saxpy.Load());
  const std::string text = *ReadFile(saxpy.task.dir / "candidates" / "omp_simd.cpp");
  for (const char* name : {"a", "f1", "f2", "b", "c", "s1", "s2", "s3"})
    ASSERT_TRUE(WriteFileAtomic(saxpy.dir->path() / (std::string(name) + ".cpp"), text + "// " + name + "\n").ok());
  GatedToolchain gated(*saxpy.toolchain);
  LocalExecutor executor(gated, SystemProcessRunner(), testing::RunnerPath(), 1);
  EXPECT_EQ(executor.EvaluationsReady(), 0);
  auto job = [&](const std::string& name, bool compile_only,
                 std::shared_ptr<const std::atomic<bool>> waited_for = nullptr) {
    EvalJob j;
    j.task = &saxpy.task;
    j.source = saxpy.dir->path() / (name + ".cpp");
    j.options.workloads = {saxpy.task.workloads.front().name};
    j.options.timing.max_seconds = 0.1;
    j.compile_only = compile_only;
    j.waited_for = std::move(waited_for);
    return executor.Submit(std::move(j));
  };
  std::vector<std::future<EvalJobResult>> futures;
  futures.push_back(job("a", false));  // takes the only compile thread, held at the gate
  if (!gated.AwaitHeld()) {
    gated.Open();  // the executor waits for its jobs on the way out
    FAIL() << "the first job never compiled";
  }
  auto no_one = std::make_shared<std::atomic<bool>>(false);
  auto later = std::make_shared<std::atomic<bool>>(false);
  futures.push_back(job("s1", true, no_one));
  futures.push_back(job("f1", true));
  futures.push_back(job("s2", true, no_one));
  futures.push_back(job("f2", true));
  futures.push_back(job("s3", true, later));
  futures.push_back(job("b", false));
  futures.push_back(job("c", false));
  later->store(true);  // a probe now waits for s3
  EXPECT_EQ(executor.EvaluationsReady(), 0) << "a compiles, b and c wait to: none keeps a GPU busy";
  gated.Open();
  for (auto& f : futures) {
    EvalJobResult r = f.get();
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  }
  EXPECT_EQ(gated.Order(), (std::vector<std::string>{"a", "b", "c", "f1", "f2", "s3", "s2", "s1"}));
  EXPECT_EQ(executor.EvaluationsReady(), 0);
  for (const auto& [name, nice] : gated.Nices()) EXPECT_EQ(nice, kCompileNice) << name;
  EXPECT_EQ(gated.Nices().size(), 8u);
}

// EvaluationsReady counts the compiled jobs queued for the GPU and the one running; a job marked
// `ahead` (a promotion check the loop waits for) goes before those queued.
TEST(LocalExecutor, AJobMarkedAheadGoesBeforeTheQueuedEvaluations) {
  Saxpy saxpy;
  ASSERT_NO_FATAL_FAILURE(saxpy.Load());
  // Three compiled jobs queue behind the one running (the same object: cache hits after the
  // first compile); then the job marked ahead arrives while the first runs (each takes seconds).
  LocalExecutor executor(*saxpy.toolchain, SystemProcessRunner(), testing::RunnerPath(), 1);
  auto job = [&](bool ahead) {
    EvalJob j = SaxpyJob(saxpy.task, 0.1);
    j.ahead = ahead;
    return executor.Submit(std::move(j));
  };
  std::vector<std::future<EvalJobResult>> futures;
  for (int i = 0; i < 3; ++i) futures.push_back(job(false));
  int most = 0;
  while (most < 3 && futures.front().wait_for(std::chrono::milliseconds(1)) != std::future_status::ready)
    most = std::max(most, executor.EvaluationsReady());
  // The first one has started once the GPU's busy time counts it.
  testing::WaitUntil([&] { return executor.BusySeconds() > 0; });
  futures.push_back(job(true));
  std::vector<double> starts;
  for (auto& f : futures) {
    EvalJobResult r = f.get();
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    starts.push_back(r.eval_start_s);
  }
  EXPECT_EQ(most, 3) << "the first running, the others compiled and queued";
  EXPECT_LT(starts[0], starts[3]) << "the first was running when the last arrived";
  EXPECT_LT(starts[3], starts[1]) << "the job marked ahead went before those queued";
  EXPECT_LT(starts[3], starts[2]);
  EXPECT_EQ(executor.EvaluationsReady(), 0);
}

// A counter job handed an evaluation of its candidate (the node's own, or the promotion gate's)
// profiles it without evaluating it again; one whose evaluation lacks what the profile needs is
// evaluated first, as before. Host jobs stand in: whether the profiler then runs is not the point.
TEST(LocalExecutor, ACounterJobTakesTheEvaluationItIsHandedWhenItHoldsWhatTheProfileNeeds) {
  Saxpy saxpy;
  ASSERT_NO_FATAL_FAILURE(saxpy.Load());
  LocalExecutor executor(*saxpy.toolchain, SystemProcessRunner(), testing::RunnerPath(), 1);
  EvalJobResult own = executor.Submit(SaxpyJob(saxpy.task, 0.05)).get();
  ASSERT_TRUE(own.status.ok()) << own.status.ToString();
  ASSERT_TRUE(own.evaluation.verdict.passed()) << own.evaluation.verdict.summary;
  const std::vector<std::unique_ptr<Tool>> no_tools;
  auto counter_job = [&](std::shared_ptr<const Evaluation> have) {
    EvalJob j = SaxpyJob(saxpy.task, 0.05);
    j.counter_tools = &no_tools;
    j.counters_of = std::move(have);
    return executor.Submit(std::move(j)).get();
  };
  EvalJobResult taken = counter_job(std::make_shared<const Evaluation>(own.evaluation));
  ASSERT_TRUE(taken.status.ok()) << taken.status.ToString();
  EXPECT_TRUE(taken.evaluation_reused);
  EXPECT_EQ(taken.evaluation.run_s, own.evaluation.run_s) << "the evaluation handed over, not a new one";
  ASSERT_FALSE(taken.evaluation.timings.empty());
  EXPECT_EQ(taken.evaluation.timings.front().candidate.median, own.evaluation.timings.front().candidate.median);

  Evaluation other = own.evaluation;  // timed on another workload only: the profile's is missing
  for (auto& t : other.timings) t.workload = "not-" + t.workload;
  EvalJobResult fresh = counter_job(std::make_shared<const Evaluation>(other));
  ASSERT_TRUE(fresh.status.ok()) << fresh.status.ToString();
  EXPECT_FALSE(fresh.evaluation_reused);
  EXPECT_TRUE(fresh.evaluation.verdict.passed()) << fresh.evaluation.verdict.summary;
  EXPECT_NE(fresh.evaluation.run_s, own.evaluation.run_s) << "evaluated again";

  Evaluation gone = own.evaluation;  // its object was evicted from the cache since
  gone.compile.object = saxpy.dir->path() / "evicted.so";
  EXPECT_FALSE(counter_job(std::make_shared<const Evaluation>(gone)).evaluation_reused);
  EXPECT_FALSE(counter_job(nullptr).evaluation_reused);
}

// With GPU queues, an evaluation made on another GPU is not taken: the profile's time, trace and
// counters must come from one GPU.
TEST(LocalExecutor, ACounterJobTakesOnlyAnEvaluationItsOwnGpuMade) {
  Saxpy saxpy;
  ASSERT_NO_FATAL_FAILURE(saxpy.Load());
  LocalExecutor executor(*saxpy.toolchain, SystemProcessRunner(), testing::RunnerPath(), 1, nullptr, {7});
  EvalJobResult own = executor.Submit(SaxpyJob(saxpy.task, 0.05)).get();
  ASSERT_TRUE(own.status.ok()) << own.status.ToString();
  ASSERT_EQ(own.device, 7);
  const std::vector<std::unique_ptr<Tool>> no_tools;
  auto counter_job = [&](int made_on) {
    EvalJob j = SaxpyJob(saxpy.task, 0.05);
    j.counter_tools = &no_tools;
    j.counters_of = std::make_shared<const Evaluation>(own.evaluation);
    j.counters_of_device = made_on;
    return executor.Submit(std::move(j)).get();
  };
  EXPECT_TRUE(counter_job(7).evaluation_reused);
  EXPECT_TRUE(counter_job(-1).evaluation_reused) << "made on no particular GPU";
  EXPECT_FALSE(counter_job(3).evaluation_reused);
}

// Counts how many compiles run at once; each waits at the gate, then fails (nothing is evaluated).
class HeldToolchain : public Toolchain {
 public:
  Result<CompileOutput> Compile(const std::filesystem::path&, const ParamValues&, const CompileOptions&) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      most_ = std::max(most_, ++running_);
      ++total_;
    }
    gate.Pass();
    std::lock_guard<std::mutex> lock(mu_);
    --running_;
    return CompileOutput{};
  }
  testing::Gate gate;
  int Most() {
    std::lock_guard<std::mutex> lock(mu_);
    return most_;
  }
  int Total() {
    std::lock_guard<std::mutex> lock(mu_);
    return total_;
  }

 private:
  std::mutex mu_;
  int running_ = 0, most_ = 0, total_ = 0;
};

// Submits `n` compile-only jobs of sources k0.cu, k1.cu, … (for HeldToolchain).
std::vector<std::future<EvalJobResult>> SubmitCompileOnly(
    LocalExecutor& executor, const Task& task, int n, std::shared_ptr<const std::atomic<bool>> cancelled = nullptr) {
  std::vector<std::future<EvalJobResult>> futures;
  for (int i = 0; i < n; ++i) {
    EvalJob j;
    j.task = &task;
    j.source = "k" + std::to_string(i) + ".cu";
    j.compile_only = true;
    j.cancelled = cancelled;
    futures.push_back(executor.Submit(std::move(j)));
  }
  return futures;
}

TEST(LocalExecutor, CompileOnlyJobsTakeAtMostHalfTheCompileThreads) {
  HeldToolchain held;
  Task task;
  LocalExecutor executor(held, SystemProcessRunner(), testing::RunnerPath(), 4);
  auto futures = SubmitCompileOnly(executor, task, 8);
  // Two compiles held at the gate, and every other thread of the executor idle: a third
  // compile would have started by now.
  EXPECT_TRUE(held.gate.AwaitArrivals(2));
  EXPECT_TRUE(testing::WaitUntilOtherThreadsBlock());
  EXPECT_EQ(held.gate.Arrivals(), 2);
  held.gate.Open();
  for (auto& f : futures) {
    EvalJobResult r = f.get();
    EXPECT_TRUE(r.skipped);
    EXPECT_FALSE(r.compiled);
  }
  EXPECT_EQ(held.Most(), 2);
  EXPECT_EQ(executor.EvaluationsReady(), 0);
}

// Compiles until its cancel flag turns true (10 s at most), as the system toolchain's killed
// compiler does.
class CancellableToolchain : public Toolchain {
 public:
  Result<CompileOutput> Compile(const std::filesystem::path&, const ParamValues&,
                                const CompileOptions& options) override {
    ++calls_;
    started.Notify();
    // The flag is a bare atomic that signals nothing: poll it.
    if (testing::WaitUntil([&] { return options.cancel && options.cancel->load(); }, std::chrono::seconds(10)))
      return Status::Unavailable("compile cancelled");
    return CompileOutput{};
  }
  int Calls() const { return calls_.load(); }
  testing::Notification started;

 private:
  std::atomic<int> calls_{0};
};

// Cancelling compile-only jobs stops the one compiling at once and drops those queued behind
// it: each ends with an error rather than a report that says its source does not compile.
TEST(LocalExecutor, CancelStopsTheRunningCompileOnlyJobAndDropsTheQueuedOnes) {
  CancellableToolchain toolchain;
  Task task;
  LocalExecutor executor(toolchain, SystemProcessRunner(), testing::RunnerPath(), 1);
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  auto futures = SubmitCompileOnly(executor, task, 5, cancelled);
  EXPECT_TRUE(toolchain.started.WaitFor()) << "no compile started";
  auto t0 = std::chrono::steady_clock::now();
  cancelled->store(true);
  for (auto& f : futures) {
    EvalJobResult r = f.get();
    EXPECT_TRUE(r.skipped);
    EXPECT_FALSE(r.compiled);
    EXPECT_EQ(r.status.code(), StatusCode::kUnavailable) << r.status.ToString();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5);
  EXPECT_EQ(toolchain.Calls(), 1);
}

// A search whose time is up cancels its drafts: the one compiling has its compiler killed, the
// one queued behind it is never compiled, and neither is evaluated or admitted. Both end without
// an error (nothing went wrong) but say they were cancelled.
TEST(LocalExecutor, CancelStopsEvaluationJobsBeforeTheyReachAGpu) {
  CancellableToolchain toolchain;
  Task task;
  task.reference.kind = ReferenceKind::kPython;  // no reference or baseline to compile beside
  LocalExecutor executor(toolchain, SystemProcessRunner(), testing::RunnerPath(), 1);
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  std::atomic<int> admitted{0};
  std::vector<std::future<EvalJobResult>> futures;
  for (int i = 0; i < 2; ++i) {
    EvalJob j;
    j.task = &task;
    j.source = "k" + std::to_string(i) + ".cu";
    j.cancelled = cancelled;
    j.admit = [&](const std::string&) { return ++admitted, true; };
    futures.push_back(executor.Submit(std::move(j)));
  }
  EXPECT_TRUE(toolchain.started.WaitFor()) << "no compile started";
  cancelled->store(true);
  for (auto& f : futures) {
    EvalJobResult r = f.get();
    EXPECT_TRUE(r.status.ok()) << r.status.ToString();
    EXPECT_TRUE(r.skipped);
    EXPECT_TRUE(r.cancelled);
  }
  EXPECT_EQ(toolchain.Calls(), 1);
  EXPECT_EQ(admitted.load(), 0);
  EXPECT_EQ(executor.EvaluationsReady(), 0);
}

}  // namespace
}  // namespace kpilot
