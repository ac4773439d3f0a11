// Module-internal: the state of one sweep behind Sweep (sweep/sweep.h), and the files that share
// it — sweep.cc (planning, the space file, the run and its summary), compile_pool.cc (the compile
// threads) and batches.cc (evaluation in runner batches). Code outside src/sweep includes sweep.h.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "sweep/sweep.h"

namespace kpilot {

// A sweep measures kpilot's parameter space of one candidate, not a generator's drafts: one fixed
// seed keeps its space files comparable from sweep to sweep.
inline constexpr uint64_t kSweepSeed = 1;

class SweepRun {
 public:
  using Clock = std::chrono::steady_clock;

  SweepRun(Task task, SweepOptions options, SweepObserver* observer);

  Status Prepare();  // the task's space and the workload (Sweep::Plan)
  Status ChooseGpu(GpuProbe& probe);
  Status Open(ProcessRunner& processes);
  Result<SweepSummary> Run(const SweepEnv& env);

  const Task& task() const { return task_; }
  const std::string& workload() const { return workload_; }
  size_t size() const { return configs_.size(); }
  size_t combinations() const;
  const std::optional<GpuInfo>& gpu() const { return gpu_; }

 private:
  // One configuration of the space and what the space file holds for it.
  struct Config {
    ParamValues params;
    nlohmann::json entry;  // the space file's entry; "status" is "not_run" until evaluated
    bool done = false;     // has a final status (evaluated, or did not compile), or is not planned
  };

  // The space file, atomically, with the journal folded in (and removed). Between saves, each
  // batch's results are appended to the journal, so a killed sweep loses nothing and the whole
  // file is rewritten only every kSaveEverySeconds, not after every batch (which made a sweep's
  // writing quadratic in its size).
  Status Save();
  Status Journal(const std::vector<std::string>& shas);  // the entries of these objects' configs
  Status SaveIfDue();

  // compile_pool.cc: threads compiling every configuration not done; Evaluate takes their objects.
  std::vector<std::thread> StartCompiling(Toolchain& toolchain, const CompileOptions& copts, bool overlap);
  void CompileOne(Toolchain& toolchain, const CompileOptions& copts, size_t i);

  // batches.cc: every compiled, not yet evaluated object, in batches: on this thread through
  // runner processes of its own, or with SweepEnv::channels on one thread per queue.
  Status Evaluate();
  // One queue's loop: batches until none is left (or another queue failed). `channel` is the
  // queue's (null: a runner process per batch).
  Status EvaluateQueue(std::unique_ptr<RunnerChannel>* channel, size_t queue);
  // Results for `objects` (paths), one runner for all; nullopt = not run yet.
  Result<std::vector<std::optional<nlohmann::json>>> EvaluateBatch(const std::vector<std::string>& objects,
                                                                   std::unique_ptr<RunnerChannel>* channel,
                                                                   size_t queue);
  // PyTorch-defined tasks: one worker call per object.
  Result<std::vector<std::optional<nlohmann::json>>> EvaluateWithWorker(const std::vector<std::string>& objects);
  RunResult RunRunner(const RunRequest& request, std::unique_ptr<RunnerChannel>* channel, size_t queue);
  EvalOptions Options() const;
  RunRequest Request(const std::vector<std::string>& objects);

  void Record(const std::string& sha, const nlohmann::json& fields);
  SweepProgress Progress();
  SweepSummary Summary() const;
  double SecondsSince(Clock::time_point t) const;

  const SweepOptions options_;
  SweepObserver* observer_;  // never null: a do-nothing one when none was given
  SweepObserver no_observer_;
  Task task_;
  std::string workload_;
  std::filesystem::path out_;
  nlohmann::json header_;
  std::vector<Config> configs_;
  std::optional<GpuInfo> gpu_;
  const SweepEnv* env_ = nullptr;  // during Run
  std::string reference_object_, baseline_object_;
  Calibration calibration_;

  // Shared with the compile threads; objects are named by the sha256 of their bytes, so
  // configurations that compile to the same binary are evaluated once.
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> ready_;                     // compiled, not evaluated yet, first seen first
  std::map<std::string, std::string> object_of_;      // object_sha → the object's path
  std::map<std::string, std::vector<size_t>> users_;  // object_sha → configs compiled to it
  std::map<std::string, nlohmann::json> known_;       // object_sha → evaluated fields (this run or the file)
  size_t compiled_ = 0, to_compile_ = 0, compile_errors_ = 0;
  int compilers_running_ = 0;
  Status compile_status_;  // kpilot's own failure (no compiler, …)
  bool stopped_ = false;   // stop_after_s, or evaluation failed
  // The space file's header, the journal, the saves and the observer, shared by the queues.
  mutable std::mutex io_mu_;
  Clock::time_point start_ = Clock::now();
  Clock::time_point saved_at_ = Clock::now();
};

}  // namespace kpilot
