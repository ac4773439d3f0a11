// The closed loop (kpilot optimize): select a node, ask the generator for drafts, evaluate them
// through the executor, grow the tree, promote a new best only on paired evidence, and record
// every step in the store as it happens so that a killed run resumes with nothing lost or
// repeated. The module's parts: options.h (what a run is asked to do), policy.h (its pure
// decisions), footprints.h (compile footprints for the params generator), and inside the module
// the loop (loop.h) with its journal, counter profiles, spending and skill offers.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "exec/executor.h"
#include "optimize/footprints.h"
#include "optimize/options.h"
#include "optimize/policy.h"
#include "profile/profiler.h"
#include "generate/generator.h"
#include "search/memory.h"
#include "search/tree.h"
#include "skills/skills.h"
#include "store/store.h"

namespace kpilot {

// Live progress, one event at a time (the CLI prints them; tests collect them).
class ProgressSink {
 public:
  virtual ~ProgressSink() = default;
  virtual void Event(const nlohmann::json& event) = 0;
};

// What a run works with, all borrowed: they must outlive it.
struct OptimizeDeps {
  const Task& task;
  Generator& generator;
  Executor& executor;
  Store& store;
  ProgressSink& progress;
  const SkillLibrary* skills = nullptr;  // null: no cards offered
  UsageLog* usage = nullptr;             // null: no card statistics
};

struct OptimizeResult {
  int64_t run_id = 0;
  StopReason stop_reason = StopReason::kExhausted;
  int evaluations = 0;  // candidate evaluations (promotion checks not counted)
  int promotion_checks = 0;
  int devices = 1;           // evaluation queues (GPUs) the run used
  int counter_profiles = 0;  // new bests profiled with counters (OptimizeOptions::counters)
  double counters_s = 0;     // seconds those profiles held the GPU
  int duplicates = 0;        // drafts whose binary was evaluated already
  GeneratorSpend spend;      // the generator's tokens and dollars over the whole run
  int64_t best_node = 0;
  ParamValues best_params;
  std::string best_source;  // the best candidate's source text
  std::string best_source_name;
  Evaluation final;       // the best, evaluated again against the task's baseline
  double busy_share = 0;  // evaluation queues busy / (wall time × devices)
  // Of that, the runners' checks and timing proper / (wall time × devices)
  // (Executor::ChecksAndTimingSeconds; 0 for a space run).
  double checks_timing_share = 0;
  int pipeline_depth = 0;  // expansions in flight at the end (adaptive: where it got to)
  int anticipated = 0;     // compiles ahead of configs the generator anticipated
};

class Optimizer {
 public:
  // All references are borrowed and must outlive the optimizer.
  Optimizer(const Task& task, Generator& generator, Executor& executor, Store& store, ProgressSink& progress);

  // The skill cards offered to the generator and where their usage is recorded (both borrowed,
  // may be null: no cards / no statistics). Call before Run or Resume.
  void UseSkills(const SkillLibrary* library, UsageLog* usage) {
    deps_.skills = library;
    deps_.usage = usage;
  }

  // Runs a new search. While it runs the process holds the run's lock (STORE/runs/ID/lock).
  Result<OptimizeResult> Run(const OptimizeOptions& options);
  // What a resumed run may take from the command line instead of its stored options.
  struct ResumeOverrides {
    std::optional<double> max_cost_usd;       // --max-cost: a new spending cap
    std::optional<int64_t> max_tokens;        // --max-tokens: a new token cap
    std::optional<std::vector<int>> devices;  // the GPUs of this machine (the first one is `device`)
  };
  // Continues run `run_id` with its stored options (and `overrides`): rebuilds the tree and the
  // memory from the recorded nodes, serves the evaluations that ended before the interruption
  // from their journal, evaluates the proposals that were recorded but never evaluated, then
  // carries on. InvalidInput for a finished run, and for one that another process is running
  // now (it holds the run's lock).
  Result<OptimizeResult> Resume(int64_t run_id, const ResumeOverrides& overrides = {});

 private:
  OptimizeDeps deps_;
};

// A run's status as `kpilot runs` shows it: a stored "running" whose process holds no lock on it
// any more (killed, or the machine restarted) is "interrupted" (resume it with --resume).
std::string ShownRunStatus(const Store& store, const RunRecord& run);

// Writes the best candidate of a run to `dir`: the source, params.json and report.json (verdict,
// speedup with CI, what it was verified on: task, workloads, dtypes, GPU, driver, toolkit).
Status ExportRun(Store& store, int64_t run_id, const std::filesystem::path& dir);

}  // namespace kpilot
