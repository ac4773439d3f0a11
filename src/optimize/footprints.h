// Compile footprints (registers, spills, shared memory per config) for the params generator's
// model, made through the executor's compile threads without ever holding the GPU idle.
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "exec/executor.h"
#include "generate/generator.h"

namespace kpilot {

// The params generator's compile footprints through an executor (generator.h, FootprintProbe):
// the source compiled at each config as compile-only jobs, with the options its evaluation would
// use, so that an evaluation that follows is a cache hit. Each (source, config) is compiled once,
// and Remember takes an evaluated draft's own compile report, so that it is not compiled again
// when the generator asks for every evaluated config at every expansion.
//
// The compiles never hold the GPU idle. The local executor runs compile-only jobs only on compile
// threads that no draft bound for evaluation needs (at most half of them), and Probe waits for
// them only while more compiled evaluations are queued or running (Executor::EvaluationsReady)
// than the GPUs can run at once. Once no more are, waiting on would leave the GPUs idle after
// their last evaluation, since the next drafts still need compiling; so Probe returns what is
// known and leaves the rest unknown for this pick. Their compiles go on, behind those a later
// Probe waits for and newest first (EvalJob::waited_for), and a later Probe finds them done. A
// space run's results are ready at once, so it waits for nothing and sees every footprint. Why
// (docs/search.md, "Compile footprints"): on evaluations of about a second, a wait for 16
// compiles was the pipeline's critical path, and the busy share was 45% with them against 77%
// without. Counting drafts still compiling as work ahead kept the probe waiting while the GPU
// idled: 4.0 s of row_softmax's 29 s.
class ExecutorFootprints : public FootprintProbe {
 public:
  using Materializer = std::function<Result<std::filesystem::path>(const std::string& source, const std::string& name)>;
  // Borrowed: executor and task outlive the probe. `materialize` writes a source to a file.
  ExecutorFootprints(Executor& executor, const Task& task, EvalOptions options, Materializer materialize);
  // Cancels its compiles still queued and waits for those running (their jobs borrow the task).
  ~ExecutorFootprints() override;

  std::vector<std::optional<Footprint>> Probe(const std::string& source, const std::string& source_name,
                                              const std::vector<ParamValues>& configs) override;
  // Compiles `source` at each config not yet known or submitted, as compile-only jobs no one
  // waits for (EvalJob::waited_for: after those a Probe waits for, newest first, configs[0]
  // first), and returns at once. A Probe of a config still queued this way waits for it, which
  // moves it up with that Probe's own. Returns how many were submitted. Never waits for a Probe
  // (it is called on the executor's threads).
  size_t Prefetch(const std::filesystem::path& source, const std::vector<ParamValues>& configs);
  // Compiles submitted by Prefetch, over the probe's life.
  size_t Prefetched() const { return prefetched_; }
  // An evaluated (or skipped) draft's compile report for `source` at `params`.
  void Remember(const std::filesystem::path& source, const ParamValues& params, const EvalJobResult& r);
  // Drops its compiles still queued (a run that stopped picking need not wait for them); those
  // running finish. Probe still serves what is known.
  void Cancel() { cancelled_->store(true); }
  // Compiles submitted and not yet seen finished (for tests).
  size_t Pending();

 private:
  using Key = std::pair<std::filesystem::path, ParamValues>;
  void Harvest();  // moves finished compiles into known_; a failed job is forgotten
  // A compile-only job; `waited_for` is its flag (EvalJob::waited_for).
  struct Compile {
    std::shared_future<EvalJobResult> result;
    std::shared_ptr<std::atomic<bool>> waited_for;
  };
  Compile Submit(const std::filesystem::path& source, const ParamValues& params, bool waited_for);

  Executor& executor_;
  const Task& task_;
  EvalOptions options_;
  Materializer materialize_;
  std::mutex mu_;
  std::map<Key, std::optional<Footprint>> known_;  // nullopt: compiled, no ptxas report
  std::map<Key, Compile> pending_;                 // compiles submitted and not harvested
  std::atomic<size_t> prefetched_ = 0;
  std::shared_ptr<std::atomic<bool>> cancelled_ = std::make_shared<std::atomic<bool>>(false);
};

}  // namespace kpilot
