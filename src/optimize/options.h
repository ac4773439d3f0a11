// What a run of `kpilot optimize` is asked to do, as the command line gives it and the store keeps
// it (a resumed run reads its options back): the generator, the budget and stop rules, the
// objective, the ablation switches, and the evaluation settings every job of the run uses.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "exec/executor.h"
#include "generate/generator.h"
#include "search/tree.h"

namespace kpilot {

// What the search optimizes (--objective).
//   kTime:   the fastest candidate.
//   kEnergy: lexicographic, as KernelPro: the tree and promotion go by time; the reported best is,
//            among passed candidates whose speedup lies within the fastest's CI, the one with the
//            fewest joules per call.
//   kMix:    the tree, promotion and the best go by MixScore(speedup, joules ratio, weight).
// kEnergy and kMix need joules per call: NVML, on live cuda runs (CheckOptions).
enum class Objective { kTime, kEnergy, kMix };
std::optional<Objective> ParseObjective(std::string_view name);
const char* ObjectiveName(Objective o);

// Ablation switches (docs/bench.md): what the generator is shown of the parent's profile.
//   kNone:  no roofline class, findings, guidance or measured numbers (the verdict stays);
//   kRaw:   the measured numbers and the findings' raw evidence only, as `parent_metrics` (the
//           llm:/command: prompt's raw-metrics section); no class, findings or guidance;
//   kTools: the micro-profiling tools' findings with their guidance (the default).
enum class FeedbackMode { kNone, kRaw, kTools };
// How the tools' guidance reaches the generator (--guidance): kProactive pushes it into every
// proposal's context (the default); kOnRequest holds it back — an llm: generator gets it only by
// calling its get_profile tool, the params generator gets none.
enum class GuidanceMode { kProactive, kOnRequest };
std::optional<FeedbackMode> ParseFeedbackMode(const std::string& name);
std::optional<GuidanceMode> ParseGuidanceMode(const std::string& name);
const char* FeedbackModeName(FeedbackMode m);
const char* GuidanceModeName(GuidanceMode m);

struct OptimizeOptions {
  std::string task_dir;
  std::string from;                  // the starting candidate (a source file)
  std::string generator = "params";  // params | folder:DIR | llm:PROVIDER:MODEL[@URL] | command:CMDLINE
  std::string llm_config;            // --llm-config FILE for llm:/command: ("" = the default places)
  bool raw_metrics = false;          // llm:/command: see raw counters, not only guidance
  double max_cost_usd = 0;           // stop (reason "cost") once the generator spent this many US$ (0 = no cap)
  int64_t max_tokens = 0;            // stop (reason "tokens") once the generator used this many tokens, input
                                     // and output together (0 = no cap)
  SearchConfig search;
  int budget = 24;                         // candidate evaluations, the starting one included
  double time_limit_s = 0;                 // wall-clock limit (0 = none)
  int plateau = 0;                         // stop after this many evaluations without a promotion (0 = off)
  double target_fraction = 0;              // stop once the best reaches this share of the roofline floor (0 = off)
  Objective objective = Objective::kTime;  // --objective
  double energy_weight = 0.5;    // kMix: score = log(speedup) + w · log(baseline J / candidate J), w in (0, 10]
  int drafts_per_expansion = 2;  // drafts asked per selected node (compiled in parallel)
  // Expansions in flight: while the GPU evaluates one batch the next ones compile. 2 keeps the
  // tree one batch behind its results; more keeps the GPU busier when compiles are much slower
  // than evaluations (docs/search.md). 0 = adaptive (the default): start at 3 and add one, up to
  // kMaxAutoPipelineDepth, whenever a batch left the evaluation queue idle more than 20% of the
  // time (NextPipelineDepth); replays, whose clock is simulated, stay at kSpacePipelineDepth.
  int pipeline_depth = 0;
  uint64_t seed = 1;
  // Skill cards (docs/skills.md): retrieved for every expansion and offered to the generator;
  // false (`--skills off`) offers none, for ablations. skill_dirs: --skills DIR folders, loaded
  // after the built-in and user folders (the CLI loads the library; kept here so a resumed run
  // loads the same).
  bool skills = true;
  std::vector<std::string> skill_dirs;
  FeedbackMode feedback = FeedbackMode::kTools;      // --feedback none|raw|tools
  GuidanceMode guidance = GuidanceMode::kProactive;  // --guidance proactive|on-request
  // --tools DIR: folders of rule files (*.toml) whose tools run beside the built-in ones on every
  // node's profile, so that skill cards may name their ids as triggers (kept so a resumed run
  // loads the same).
  std::vector<std::string> tool_dirs;
  bool memory = true;  // --memory off: no search-memory summary for the generator
  // Compile footprints for the params generator's model (generator.h, FootprintProbe): cuda tasks
  // only; false (`--footprints off`) for ablations. Runs stored before it existed had none.
  bool footprints = true;
  // Speculative compiles of the configs the generator anticipates for good nodes (Generator::
  // Anticipate; OptimizeLoop::AnticipateAfter), on the compile threads footprints may use: with
  // footprints only. false (`--anticipate off`) for ablations; runs stored before it had it off.
  bool anticipate = true;
  // Counter profiles of new bests: each promoted node's kernels are profiled with the counters
  // of its class's tools (CUPTI, else ncu) on the evaluation queue, and its findings replace the
  // static ones before its next expansion (docs/search.md). Live cuda runs only (a space run's space
  // stores no counters); false (`--counters off`) steers by static findings alone. Runs stored
  // before it existed had none.
  bool counters = true;
  int device = 0;                      // CUDA device index evaluations run on (kpilot bench spreads problems)
  std::vector<int> devices;            // live cuda runs: the GPUs with an evaluation queue each (--devices)
  std::vector<std::string> workloads;  // empty = all
  std::string arch;                    // cuda target
  double eval_timeout_s = 120;
  // PyTorch-defined tasks: the CPU threads each torch worker may use (0: torch's default, one per
  // core). kpilot bench sets it when several problems share the host, so that N workers do not put
  // N threads on every core. Not stored with a run: it is a property of the process running it.
  int host_threads = 0;
  double timing_max_seconds = 2.0;  // per workload per evaluation
  TimingMode timing =
      TimingMode::kDefault;       // the timing procedure (docs/pytorch.md: default | kernelbench | flashinfer)
  std::string space_file;         // a space file (kpilot sweep) served instead of running ("" = run)
  std::string space_calibration;  // with space_file: a calibration file replacing the space's ("" = the space's)
};

nlohmann::json ToJson(const OptimizeOptions& o);
Result<OptimizeOptions> OptimizeOptionsFromJson(const nlohmann::json& j);
// Options a run cannot go with, before anything is recorded: InvalidInput naming the flag and
// the fix (an objective or stop rule the task's backend cannot measure, a weight out of range).
Status CheckOptions(const Task& task, const OptimizeOptions& o);
// The evaluation settings every job of a run starts from (workloads, arch, timeout, timing
// procedure, device; joules per call whenever the objective needs them).
EvalOptions BaseEvalOptions(const OptimizeOptions& o);

// Pure: the proposal context as the ablation switches let the generator see it (feedback, tools,
// memory; skills are applied where cards are retrieved). With kTools + kProactive and memory on it
// is left as it is.
void ApplyAblations(const OptimizeOptions& o, ProposalContext* ctx);
// The ablation flags as a command line gives them (--feedback none|raw|tools, --guidance
// proactive|on-request, --memory on|off) set into `o`; InvalidInput naming the flag otherwise.
// `--feedback raw` turns raw_metrics on (the generators' raw-metrics section is where the numbers
// go); `--feedback none` with --raw-metrics is a contradiction (InvalidInput).
Status ApplyAblationFlags(const std::string& feedback, const std::string& guidance, const std::string& memory,
                          OptimizeOptions* o);
// The tree's constants suited to o->generator, for a new run (a resumed one keeps its stored
// ones): the params generator gets kGlobalDraftsExploration, every other the SearchConfig default.
void FitSearchToGenerator(OptimizeOptions* o);

}  // namespace kpilot
