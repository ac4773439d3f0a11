// Executors: where evaluations run. The search submits jobs and gets futures; it never knows
// whether compiles run in parallel or where the GPU is.
//
// The local executor is a two-stage pipeline: a pool of compile threads (the CPU cores) feeding
// one exclusive evaluation queue per GPU (the host backend has one: timing needs the machine to
// itself). It never runs two evaluations on one device at once. A draft goes to its queue once
// its object exists; its SASS is extracted on the compile thread meanwhile and is in the
// evaluation's compile report before on_done and the future see it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "harness/harness.h"
#include "profile/counter_profile.h"

namespace kpilot {

struct EvalJobResult;

struct EvalJob {
  const Task* task = nullptr;  // borrowed; must outlive the job
  std::filesystem::path source;
  ParamValues params;
  EvalOptions options;
  // Called on the compile thread once the object exists and before evaluation; returning false
  // skips the evaluation (e.g. its binary was evaluated already). May be empty.
  std::function<bool(const std::string& object_sha)> admit;
  // Compile only: the result carries the compile report and is `skipped`; nothing is evaluated
  // and `admit` is not asked. The compile cache then serves the evaluation, if one follows. The
  // local executor compiles such a job only when no job bound for evaluation waits to compile,
  // and on at most half its compile threads at once.
  bool compile_only = false;
  // With compile_only: whether a caller waits for it now. Compile-only jobs whose flag is set (or
  // that have none) compile first, in the order submitted; the others — guesses at drafts that
  // may come later (Generator::Anticipate), and the compiles a footprint probe stopped waiting
  // for — only when none of those waits, newest first: the latest good node is the likeliest to
  // be expanded next. The flag may change while the job is queued. Measured on the H200: with
  // no such order the GPU sat idle 2.4-3.4 s while a new best's children compiled, three times
  // in a 29 s run, and guesses queued behind the probes' leftovers (48 compiles, 18 s of backlog
  // on 8 threads) were compiled too late (docs/results.md, "Anticipated compiles").
  std::shared_ptr<const std::atomic<bool>> waited_for;
  // A job whose flag is set when a compile thread takes it is not compiled, one whose flag is set
  // while it compiles has its compiler killed, and one whose flag is set while it waits for a GPU
  // is not evaluated: each result is `skipped` and `cancelled`, a compile-only job's with an
  // Unavailable status, an evaluation job's with an ok one (nothing went wrong: the caller no
  // longer wants it). Lets a caller end without waiting for work it no longer needs, e.g. a
  // search whose time is up. An evaluation already on its GPU runs to its end. May be null. (The
  // space executor answers at Submit, so there is nothing in flight for it to cancel.)
  std::shared_ptr<const std::atomic<bool>> cancelled;
  // Counters too: after a passing evaluation, while the job still holds the GPU, the counters the
  // tools of the candidate's class need are collected (CUPTI, else ncu: each needs the GPU to
  // itself) and the tools run, on the job's last workload (the task's last when it names none).
  // Null: none. Borrowed; must outlive the job.
  const std::vector<std::unique_ptr<Tool>>* counter_tools = nullptr;
  CounterProfileOptions counters;
  // With counter_tools: an evaluation of this same source and params made already (the node's
  // own, or the promotion gate's), which the counters take instead of evaluating the candidate
  // again when it holds all they need (CounterProfileCanTake) and its object still exists. The
  // job's result then carries it with `evaluation_reused` set. Null: evaluate first.
  std::shared_ptr<const Evaluation> counters_of;
  // The GPU queue's device that made counters_of (-1: any). A job that another queue takes
  // evaluates again, so that its time, trace and counters come from one GPU.
  int counters_of_device = -1;
  // Goes ahead of the evaluations waiting in the queue: the caller waits for it before it submits
  // more (a counter profile, a promotion check, the final re-evaluation). Behind them, the loop
  // proposed nothing for up to 2.7 s while the GPU worked through the queue (H200; docs/results.md,
  // "Where short runs leave the GPU idle").
  bool ahead = false;
  // Called on the executor's thread with an evaluation's result (status ok) before its future is
  // ready, so that the caller can journal it the moment it ends: the search records it before a
  // kill -9 can lose it (docs/search.md, "Resume"). Not called for skipped or compile-only jobs;
  // an executor whose results cost nothing to make again (the space executor) need not call it. May be
  // empty.
  std::function<void(const EvalJobResult&)> on_done;
};

struct EvalJobResult {
  Status status;           // kpilot's own failure (not the candidate's)
  Evaluation evaluation;   // valid when status.ok() && !skipped
  bool skipped = false;    // `admit` said no, or the job was cancelled
  bool cancelled = false;  // EvalJob::cancelled was set before the job was evaluated
  std::string object_sha;  // sha256 of the compiled object ("" when it did not compile)
  double compile_s = 0;
  bool compiled = false;                   // the source compiled at these params
  std::vector<KernelResources> resources;  // its ptxas report (cuda; empty otherwise)
  // On the executor's clock (seconds since it started): when the job was submitted, when its
  // compile ran, and when it held its GPU (evaluation and counters). Where a wait left a GPU
  // idle, these say what it waited for (bench/busy_timeline.py). A space run models only the eval_*;
  // a journal record keeps only those too, since the rest is one process's clock.
  double submitted_s = 0, compile_start_s = 0, compile_end_s = 0;
  double eval_start_s = 0, eval_end_s = 0;
  // When the SASS extracted beside the evaluation was ready (0: none was): a result whose SASS
  // ends after its evaluation reaches the caller then, not at eval_end_s.
  double sass_end_s = 0;
  int device = -1;    // the GPU its evaluation queue runs on (-1: the job's options.device)
  std::string where;  // the machine it was evaluated on, when not this one (RunnerChannel::Where)
  // With counter_tools: the profile of a passing evaluation, or why there is none.
  std::optional<CounterProfile> counters;
  Status counters_status = Status::Ok();
  double counters_s = 0;           // wall seconds the counter collection held the GPU
  bool evaluation_reused = false;  // `evaluation` is the job's counters_of: nothing was evaluated
};

// Pure: the seconds a runner spent on checks and timing proper, from its details["timeline_s"]
// (seconds since it started at each step's end): from its objects being loaded to the end of
// its timing, or of its checks when it timed nothing. 0 without those steps.
double RunnerChecksAndTimingSeconds(const nlohmann::json& run_details);

// An evaluation job's result as JSON and back, exactly (status, skipped and counters are not
// kept: only a finished evaluation is journaled). EvalJobResultFromRecord: InvalidInput naming
// what is malformed.
nlohmann::json RecordJson(const EvalJobResult& r);
Result<EvalJobResult> EvalJobResultFromRecord(const nlohmann::json& j);

class Executor {
 public:
  virtual ~Executor() = default;
  virtual std::future<EvalJobResult> Submit(EvalJob job) = 0;
  // Seconds the evaluation queues were busy, summed over them (counter profiles included, and the
  // evaluations running now up to this moment) / seconds since the executor started.
  virtual double BusySeconds() const = 0;
  // Of BusySeconds, the runners' checks and timing proper (RunnerChecksAndTimingSeconds of every
  // evaluation run: no process start, CUDA context, loading or counter profile), the share of
  // the wall time docs/results.md reports as "checks and timing proper" ("GPU busy share"). 0
  // where nothing says (a space run).
  virtual double ChecksAndTimingSeconds() const { return 0; }
  virtual double ElapsedSeconds() const = 0;
  // Evaluation queues: BusySeconds can reach Devices() × ElapsedSeconds.
  virtual int Devices() const { return 1; }
  // Jobs compiled and bound for a GPU: waiting in an evaluation queue or running on a GPU. Jobs
  // still waiting to compile or compiling are not counted, since they keep no GPU busy: once this
  // is at most Devices(), the GPUs run dry after what they run now, whatever is compiling, and a
  // caller whose wait would delay the next submissions should stop waiting. An executor whose
  // futures are ready at once (the space executor) has none.
  virtual int EvaluationsReady() const { return 0; }
};

// The nice value the local executor compiles at (CompileOptions::nice; a job's own higher value
// is kept). Its compiles overlap the evaluations, and on a machine whose cores they fill, a
// runner waiting for a core delays its launches and its host-side clock; `kpilot sweep` nices
// its overlapping compiles the same way. Guesses get no lower priority than the drafts: a draft
// often waits for a guess's compile of its config (the toolchain runs one compile per key), and
// an unprivileged process cannot raise a guess's priority once the draft waits.
inline constexpr int kCompileNice = 10;

// Which evaluations the local executor sends to a served runner (ServedRunner: one
// kpilot-runner process per GPU kept across evaluations) instead of a runner of their own.
//   kNone  every evaluation starts its own runner
//   kCuda  cuda tasks are served (the default): a fresh runner spends about 0.28 s of a 0.5 s
//          evaluation on its process, CUDA context and CUPTI set-up (H200; docs/results.md,
//          "Served runners"). Host tasks keep a runner of their own, and with it the PID
//          namespace a served one lacks.
//   kAll   host tasks too (tests exercise the served path on the CPU this way)
// Counter profiles always run in a runner of their own.
enum class RunnerReuse { kNone, kCuda, kAll };

// Makes the runner channel of evaluation queue `queue` (0, 1, …), which then takes every evaluation
// of that queue, host and cuda alike: a served runner on another machine (slurm::ClusterRunner).
// Called on the queue's thread when its first job arrives, and again after a channel reported its
// runner lost (Unavailable): that evaluation runs once more on the new channel.
using RunnerChannelFactory = std::function<Result<std::unique_ptr<RunnerChannel>>(size_t queue)>;

class LocalExecutor : public Executor {
 public:
  // `compile_threads` ≥ 1. Toolchain and process runner are borrowed and must be thread-safe
  // (the real ones are); `python` (borrowed, may be null) evaluates tasks with a Python reference.
  // `devices`: the GPUs to evaluate on, one exclusive queue each; a job goes to the first queue
  // that is free and runs with options.device set to its GPU (EvalJobResult::device). Empty: one
  // queue, each job on its own options.device (`kpilot bench` pins a problem to a GPU this way).
  // `reuse`: which evaluations a served runner takes (one per queue and GPU).
  // `channels` (may be empty): each queue's runner channel, in place of the local runners.
  LocalExecutor(Toolchain& toolchain, ProcessRunner& processes, std::filesystem::path runner_exe, int compile_threads,
                PythonTaskRunner* python = nullptr, std::vector<int> devices = {},
                RunnerReuse reuse = RunnerReuse::kCuda, RunnerChannelFactory channels = nullptr);
  ~LocalExecutor() override;  // finishes queued work, then joins
  std::future<EvalJobResult> Submit(EvalJob job) override;
  double BusySeconds() const override;
  double ChecksAndTimingSeconds() const override;
  double ElapsedSeconds() const override;
  int Devices() const override;
  int EvaluationsReady() const override;

 private:
  struct Pending {
    EvalJob job;
    std::promise<EvalJobResult> promise;
    EvalJobResult result;
    // A draft's SASS is extracted on its compile thread while it is evaluated (cuobjdump took
    // 1.26 s of a 2.7 s compile on the H200's host; docs/results.md, "SASS beside the compile");
    // whichever of the two ends last adds it to the evaluation and fulfils the promise.
    bool sass_deferred = false;
    std::mutex finish_mu;
    int parts_left = 1;
    std::string sass, sass_status;
    double sass_end_s = 0;
  };
  void CompileLoop();
  void EvalLoop(int device, size_t queue);  // device -1: the job's own options.device
  // Ends one of a job's parts (its evaluation, its deferred SASS); the last one ends the job.
  static void FinishPart(const std::shared_ptr<Pending>& p);

  Toolchain& toolchain_;
  ProcessRunner& processes_;
  const std::filesystem::path runner_exe_;
  Evaluator evaluator_;
  const RunnerReuse reuse_;
  const RunnerChannelFactory channels_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  mutable std::mutex mu_;
  std::condition_variable compile_cv_, eval_cv_;
  // Compile-only jobs wait in footprint_queue_, taken only when compile_queue_ is empty: the
  // first one waited for, else the newest (EvalJob::waited_for).
  std::deque<std::shared_ptr<Pending>> compile_queue_, footprint_queue_, eval_queue_;
  bool stopping_ = false;
  int compiling_ = 0;
  int evaluations_ready_ = 0;  // EvaluationsReady()
  int footprints_compiling_ = 0;
  const int max_footprint_compiles_;          // half the compile threads, at least one
  double busy_s_ = 0;                         // of evaluations that have ended
  std::map<const Pending*, double> running_;  // evaluations running now: since when (ElapsedSeconds)
  double checks_timing_s_ = 0;
  std::vector<std::thread> compilers_;
  const size_t queues_;
  std::vector<std::thread> evaluators_;
};

}  // namespace kpilot
