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

#include "core/stats.h"

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
  int cancelled = 0;         // drafts dropped unevaluated when --time passed
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

// An agent's session as a run (kpilot mcp, docs/mcp.md): the agent writes candidates and asks for
// their verdicts; each evaluation is a node of a run in the store, under the parent the agent
// names (by default its previous evaluation, the first one under the starting candidate), so that
// `kpilot runs`, `show`, `export` and `report` show an agent's work like a search's. A passing node
// faster than the best is timed against it in one process and promoted only through the same
// paired gate as a search's (PairedGate); Finish evaluates the best once more and records the run
// finished. The run is recorded with generator "agent:CLIENT" and cannot be resumed.
// What an agent's run works with, all borrowed: they must outlive it.
struct AgentDeps {
  const Task& task;
  Executor& executor;
  Store& store;
  ProgressSink& progress;
};

struct AgentDraft {
  std::string source;
  std::string source_name;  // a file name with the task's extension
  ParamValues params;
  std::string summary;            // what the agent says it changed ("" = none given)
  std::optional<int64_t> parent;  // nullopt: the previous evaluation (the starting candidate first)
};

struct AgentStep {
  int64_t node = -1;
  int64_t parent = -1;
  Evaluation evaluation;
  std::string object_sha;
  bool duplicate = false;  // its binary was evaluated already in this run: `duplicate_of` holds the node
  int64_t duplicate_of = -1;
  // The node's analysis: stage-1 roofline class, share of the roofline floor (0 = unknown) and the
  // static findings with their guidance.
  std::string bottleneck;
  double achieved_fraction = 0;
  std::vector<Finding> findings;
  // The promotion: "first passing candidate", "promoted" or "rejected" after a paired check
  // (paired_* hold its speedup over the incumbent and CI), or "" when none was due.
  std::string promotion;
  double paired_speedup = 0;
  Interval paired_ci;
  int64_t incumbent = -1;  // the best after this step (-1: nothing has passed)
};

class AgentRun {
 public:
  // How a session starts: `client` names the agent ("claude-code", …) in the run's generator;
  // `params` are the starting candidate's; `context` (may be null) is recorded in the start event
  // (e.g. the search run and node an agent of a command: generator drafts for).
  struct Origin {
    std::string client;
    ParamValues params;
    nlohmann::json context;
  };
  // Creates the run (status running, its lock held, the `start` event recorded) and evaluates
  // options.from (the starting candidate, "" for none) as its root when there is one. The options
  // are the run's evaluation settings.
  static Result<std::unique_ptr<AgentRun>> Start(const AgentDeps& deps, OptimizeOptions options, const Origin& origin);
  // A run neither finished nor failed is recorded interrupted, with its best so far.
  ~AgentRun();

  int64_t run_id() const;
  // Evaluates one draft. InvalidInput for a parent that is not a node of the run; a failure of
  // kpilot's own (not the candidate's) is the Status.
  Result<AgentStep> Evaluate(const AgentDraft& draft);
  // The node's class and findings with their guidance: on a live cuda task, first profiled with
  // the counters its class's tools need (CUPTI, else ncu), once per node; otherwise the static
  // findings of its evaluation. `counters` says which (and why not counters).
  Result<nlohmann::json> Profile(int64_t node);
  // The nodes so far, oldest first: node, parent, summary, verdict, speedup, CI, params.
  nlohmann::json History() const;
  // The promoted best (null when nothing has passed) and the fastest passing node not promoted.
  nlohmann::json Best() const;
  // The node's source and params (NotFound for an unknown node).
  Result<AgentDraft> NodeSource(int64_t node) const;
  int evaluations() const;  // drafts evaluated, the root not counted
  bool finished() const;
  // Evaluates the best once more against the task's baseline and records the run finished
  // (`reason` its stop reason). With nothing passed, the run is finished with no best.
  Result<OptimizeResult> Finish(const std::string& reason);
  // Records the run stopped without the final evaluation (a client that went away): status
  // interrupted, `reason` as its stop reason.
  Status Abandon(const std::string& reason);

 private:
  struct State;
  explicit AgentRun(std::unique_ptr<State> state);
  std::unique_ptr<State> s_;
};

// A run's status as `kpilot runs` shows it: a stored "running" whose process holds no lock on it
// any more (killed, or the machine restarted) is "interrupted" (resume it with --resume).
std::string ShownRunStatus(const Store& store, const RunRecord& run);

// Writes the best candidate of a run to `dir`: the source, params.json and report.json (verdict,
// speedup with CI, what it was verified on: task, workloads, dtypes, GPU, driver, toolkit).
Status ExportRun(Store& store, int64_t run_id, const std::filesystem::path& dir);

}  // namespace kpilot
