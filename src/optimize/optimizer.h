// The closed loop (kpilot optimize): select a node, ask the proposer for drafts, evaluate them
// through the executor, grow the tree, promote a new best only on paired evidence, and record
// every step in the store as it happens so that a killed run resumes with nothing lost or
// repeated.
#pragma once

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "exec/executor.h"
#include "propose/proposer.h"
#include "search/memory.h"
#include "search/tree.h"
#include "skills/skills.h"
#include "store/store.h"

namespace kpilot {

// Ablation switches (docs/bench.md): what the generator is shown of the parent's profile.
//   kNone:  no roofline class, findings, guidance or measured numbers (the verdict stays);
//   kRaw:   the measured numbers and the findings' raw evidence only, as `parent_metrics` (the
//           llm:/command: prompt's raw-metrics section); no class, findings or guidance;
//   kTools: the micro-profiling tools' findings with their guidance (the default).
enum class FeedbackMode { kNone, kRaw, kTools };
// How tool guidance reaches the generator: kProactive pushes it into every proposal's context
// (the default); kOnRequest holds it back — an llm: generator gets it only by calling its
// get_profile tool, the params generator gets none.
enum class ToolsMode { kProactive, kOnRequest };
std::optional<FeedbackMode> ParseFeedbackMode(const std::string& name);
std::optional<ToolsMode> ParseToolsMode(const std::string& name);
const char* FeedbackModeName(FeedbackMode m);
const char* ToolsModeName(ToolsMode m);

struct OptimizeOptions {
  std::string task_dir;
  std::string from;                     // the starting candidate (a source file)
  std::string generator = "params";     // params | replay:DIR | llm:PROVIDER:MODEL[@URL] | command:CMDLINE
  std::string llm_config;               // --llm-config FILE for llm:/command: ("" = the default places)
  bool raw_metrics = false;             // llm:/command: see raw counters, not only guidance
  double max_cost_usd = 0;              // stop (reason "cost") once the generator spent this many US$ (0 = no cap)
  int64_t max_tokens = 0;               // stop (reason "tokens") once the generator used this many tokens, input
                                        // and output together (0 = no cap)
  SearchConfig search;
  int budget = 24;                      // candidate evaluations, the starting one included
  double time_limit_s = 0;              // wall-clock limit (0 = none)
  int plateau = 0;                      // stop after this many evaluations without a promotion (0 = off)
  double target_fraction = 0;           // stop once the best reaches this share of the roofline floor (0 = off)
  // time: the fastest candidate. energy (lexicographic, as KernelPro): the tree and promotion go
  // by time; the reported best is, among passed candidates whose speedup lies within the
  // fastest's CI (at or above its lower end), the one with the fewest joules per call. mix: the
  // tree, promotion and the best go by MixScore(speedup, joules ratio, energy_weight), and a
  // paired check promotes when that score at the lower end of its speedup CI is above 1. energy
  // and mix need joules per call: NVML, on live cuda runs (CheckOptions).
  std::string objective = "time";
  double energy_weight = 0.5;           // mix: score = log(speedup) + w · log(baseline J / candidate J), w in (0, 10]
  int drafts_per_expansion = 2;         // drafts asked per selected node (compiled in parallel)
  // Expansions in flight: while the GPU evaluates one batch the next ones compile. 2 keeps the
  // tree one batch behind its results; more keeps the GPU busier when compiles are much slower
  // than evaluations (docs/search.md). 0 = adaptive (the default): start at 3 and add one, up to
  // kMaxAutoPipelineDepth, whenever a batch left the evaluation queue idle more than 20% of the
  // time (NextPipelineDepth); replays, whose clock is simulated, stay at kReplayPipelineDepth.
  int pipeline_depth = 0;
  uint64_t seed = 1;
  // Skill cards (docs/skills.md): retrieved for every expansion and offered to the generator;
  // false (`--skills off`) offers none, for ablations. skill_dirs: --skills DIR folders, loaded
  // after the built-in and user folders (the CLI loads the library; kept here so a resumed run
  // loads the same).
  bool skills = true;
  std::vector<std::string> skill_dirs;
  FeedbackMode feedback = FeedbackMode::kTools;  // --feedback none|raw|tools
  ToolsMode tools = ToolsMode::kProactive;       // --tools proactive|on-request
  bool memory = true;                            // --memory off: no search-memory summary for the generator
  // Compile footprints for the params generator's model (proposer.h, FootprintProbe): cuda tasks
  // only; false (`--footprints off`) for ablations. Runs stored before it existed had none.
  bool footprints = true;
  // Speculative compiles of the configs the generator anticipates for good nodes (Proposer::
  // Anticipate; Loop::AnticipateAfter), on the compile threads footprints may use: with
  // footprints only. false (`--anticipate off`) for ablations; runs stored before it had it off.
  bool anticipate = true;
  // Counter profiles of new bests: each promoted node's kernels are profiled with the counters
  // of its class's tools (CUPTI, else ncu) on the evaluation queue, and its findings replace the
  // static ones before its next expansion (docs/search.md). Live cuda runs only (a replay's space
  // stores no counters); false (`--counters off`) steers by static findings alone. Runs stored
  // before it existed had none.
  bool counters = true;
  int device = 0;                                // CUDA device index evaluations run on (kpilot bench spreads problems)
  std::vector<int> devices;                      // live cuda runs: the GPUs with an evaluation queue each (--devices)
  std::vector<std::string> workloads;   // empty = all
  std::string arch;                     // cuda target
  double eval_timeout_s = 120;
  double timing_max_seconds = 2.0;      // per workload per evaluation
  TimingMode timing = TimingMode::kDefault;  // the timing procedure (docs/pytorch.md: default | kernelbench | flashinfer)
  std::string replay;                   // a space file (kpilot sweep) served instead of running ("" = run)
  std::string replay_calibration;       // with replay: a calibration file replacing the space's ("" = the space's)
};

// Adaptive pipeline depth (OptimizeOptions::pipeline_depth = 0): the depth after a batch during
// which the evaluation queues were busy `busy_s` (summed) of `elapsed_s` seconds (the executor's
// clock) on `devices` GPUs: one more when they were busy less than kAutoPipelineBusyGoal of the
// time, never more than MaxPipelineDepth(devices), never less than `depth`. Each GPU beyond the
// first adds one expansion in flight at the start and two to the cap, so every queue has a batch
// to take while the next ones compile. Three at the start: on the H200 at a wall-clock budget it
// ended better than two and four (docs/search.md, "Pipeline depth"). A replay, whose clock does
// not model compiles, keeps kReplayPipelineDepth (its figures count evaluations, where deeper
// only costs).
inline constexpr int kMinAutoPipelineDepth = 3;
inline constexpr int kReplayPipelineDepth = 2;
inline constexpr int kMaxAutoPipelineDepth = 4;
inline constexpr double kAutoPipelineBusyGoal = 0.8;
inline int MinPipelineDepth(int devices) { return kMinAutoPipelineDepth + std::max(0, devices - 1); }
inline int MaxPipelineDepth(int devices) { return kMaxAutoPipelineDepth + 2 * std::max(0, devices - 1); }
int NextPipelineDepth(int depth, double busy_s, double elapsed_s, int devices = 1);

// Energy (--objective energy | mix). JoulesRatio: the baseline's joules per call over the
// candidate's, as the geometric mean over the workloads where both were measured; 0 when none
// was. In a paired check the baseline is the incumbent. MixScore: the mix objective's score,
// as a speedup: exp(log(speedup) + weight · log(joules ratio)); the speedup alone when no ratio
// was measured (joules_ratio ≤ 0).
double JoulesRatio(const Evaluation& e);
double MixScore(double speedup, double joules_ratio, double weight);
// Options a run cannot go with, before anything is recorded: InvalidInput naming the flag and
// the fix (an objective or stop rule the task's backend cannot measure, a weight out of range).
Status CheckOptions(const Task& task, const OptimizeOptions& o);

nlohmann::json ToJson(const OptimizeOptions& o);
// Pure: the proposal context as the ablation switches let the generator see it (feedback, tools,
// memory; skills are applied where cards are retrieved). With kTools + kProactive and memory on it
// is left as it is.
void ApplyAblations(const OptimizeOptions& o, ProposalContext* ctx);
// The ablation flags as a command line gives them (--feedback none|raw|tools, --tools
// proactive|on-request, --memory on|off) set into `o`; InvalidInput naming the flag otherwise.
// `--feedback raw` turns raw_metrics on (the generators' raw-metrics section is where the numbers
// go); `--feedback none` with --raw-metrics is a contradiction (InvalidInput).
Status ApplyAblationFlags(const std::string& feedback, const std::string& tools, const std::string& memory,
                          OptimizeOptions* o);
Result<OptimizeOptions> OptimizeOptionsFromJson(const nlohmann::json& j);
// The tree's constants suited to o->generator, for a new run (a resumed one keeps its stored
// ones): the params generator gets kGlobalDraftsExploration, every other the SearchConfig default.
void FitSearchToGenerator(OptimizeOptions* o);

// Live progress, one event at a time (the CLI prints them; tests collect them).
class ProgressSink {
 public:
  virtual ~ProgressSink() = default;
  virtual void Event(const nlohmann::json& event) = 0;
};

struct OptimizeResult {
  int64_t run_id = 0;
  std::string stop_reason;
  int evaluations = 0;                  // candidate evaluations (promotion checks not counted)
  int promotion_checks = 0;
  int devices = 1;                      // evaluation queues (GPUs) the run used
  int counter_profiles = 0;             // new bests profiled with counters (OptimizeOptions::counters)
  double counters_s = 0;                // seconds those profiles held the GPU
  int duplicates = 0;                   // drafts whose binary was evaluated already
  GeneratorSpend spend;                 // the generator's tokens and dollars over the whole run
  int64_t best_node = 0;
  ParamValues best_params;
  std::string best_source;              // the best candidate's source text
  std::string best_source_name;
  Evaluation final;                     // the best, evaluated again against the task's baseline
  double busy_share = 0;                // evaluation queues busy / (wall time × devices)
  // Of that, the runners' checks and timing proper / (wall time × devices): figure c's share
  // (Executor::ChecksAndTimingSeconds; 0 for a replay).
  double checks_timing_share = 0;
  int pipeline_depth = 0;               // expansions in flight at the end (adaptive: where it got to)
  int anticipated = 0;                  // compiles ahead of configs the generator anticipated
};

class Optimizer {
 public:
  // All references are borrowed and must outlive the optimizer.
  Optimizer(const Task& task, Proposer& proposer, Executor& executor, Store& store, ProgressSink& progress);

  // The skill cards offered to the generator and where their usage is recorded (both borrowed,
  // may be null: no cards / no statistics). Call before Run or Resume.
  void UseSkills(const SkillLibrary* library, UsageLog* usage) {
    skills_ = library;
    usage_ = usage;
  }

  // Runs a new search. While it runs the process holds the run's lock (STORE/runs/ID/lock).
  Result<OptimizeResult> Run(const OptimizeOptions& options);
  // What a resumed run may take from the command line instead of its stored options.
  struct ResumeOverrides {
    std::optional<double> max_cost_usd;      // --max-cost: a new spending cap
    std::optional<int64_t> max_tokens;       // --max-tokens: a new token cap
    std::optional<std::vector<int>> devices;  // the GPUs of this machine (the first one is `device`)
  };
  // Continues run `run_id` with its stored options (and `overrides`): rebuilds the tree and the
  // memory from the recorded nodes, serves the evaluations that ended before the interruption
  // from their journal, evaluates the proposals that were recorded but never evaluated, then
  // carries on. InvalidInput for a finished run, and for one that another process is running
  // now (it holds the run's lock).
  Result<OptimizeResult> Resume(int64_t run_id, const ResumeOverrides& overrides = {});

 private:
  struct NodeData;
  class Loop;
  const Task& task_;
  Proposer& proposer_;
  Executor& executor_;
  Store& store_;
  ProgressSink& progress_;
  const SkillLibrary* skills_ = nullptr;
  UsageLog* usage_ = nullptr;
};

// The params generator's compile footprints through an executor (proposer.h, FootprintProbe):
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
// replay's results are ready at once, so it waits for nothing and sees every footprint. Why
// (docs/search.md, "Compile footprints"): on evaluations of about a second, a wait for 16
// compiles was the pipeline's critical path, and the busy share was 45% with them against 77%
// without. Counting drafts still compiling as work ahead (session 19) kept the probe waiting
// while the GPU idled: 4.0 s of row_softmax's 29 s (session 20).
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
  std::map<Key, std::optional<Footprint>> known_;      // nullopt: compiled, no ptxas report
  std::map<Key, Compile> pending_;                     // compiles submitted and not harvested
  std::atomic<size_t> prefetched_ = 0;
  std::shared_ptr<std::atomic<bool>> cancelled_ = std::make_shared<std::atomic<bool>>(false);
};

// A run's status as `kpilot runs` shows it: a stored "running" whose process holds no lock on it
// any more (killed, or the machine restarted) is "interrupted" (resume it with --resume).
std::string ShownRunStatus(const Store& store, const RunRecord& run);

// Writes the best candidate of a run to `dir`: the source, params.json and report.json (verdict,
// speedup with CI, what it was verified on: task, workloads, dtypes, GPU, driver, toolkit).
Status ExportRun(Store& store, int64_t run_id, const std::filesystem::path& dir);

}  // namespace kpilot
