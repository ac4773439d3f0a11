// Generators: where new candidate drafts come from. The search asks a Generator through this
// interface only; `params` (moves in a task's tunable space, steered by profile findings),
// `folder:DIR` (drafts from a folder, in order), `llm:PROVIDER:MODEL[@BASE_URL]` (a language model
// over HTTP, src/generate/llm_generator.h) and `command:CMDLINE` (an agent CLI run in a prepared
// workspace, src/generate/command_generator.h) live here.
#pragma once

#include <cstdint>
#include <filesystem>
#include <future>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "llm/llm.h"
#include "profile/profile.h"
#include "task/task.h"

namespace kpilot {

class TranscriptArchive;  // generate/transcripts.h

// One proposed candidate: a complete source file plus params.
struct Draft {
  std::string source;            // the whole candidate file
  std::string source_name;       // a file name with the task's extension, e.g. "blocked_omp.cpp"
  ParamValues params;            // -D values
  std::string summary;           // one line: what changed and why
  std::string targeted_finding;  // the finding id the change answers ("" = none)
  // Ids of the skill cards (ProposalContext::skills) this draft applies: the card whose move made
  // a params draft; the cards an llm:/command: reply names on its "Applied skills:" line.
  std::vector<std::string> skills_applied;
  // Non-empty when the generator could not produce this draft (no code after its re-asks, an ABI
  // mismatch, an agent that wrote nothing): the reason, recorded in search memory and the run's
  // events; such a draft has no source and is never evaluated.
  std::string failure;
};

// One candidate the run has evaluated, for generators that learn from the run so far.
struct EvaluatedParams {
  ParamValues params;
  bool passed = false;
  double speedup = 0;  // what the search tree was given (passed only)
};

// What compiling a config says before it is timed: the ptxas report of its kernels (cuda).
struct Footprint {
  bool compiles = true;      // false: the config does not compile (the numbers are unset)
  int registers = 0;         // per thread, the most any kernel uses
  int64_t spill_bytes = 0;   // spill stores and loads, summed over kernels
  int64_t shared_bytes = 0;  // static shared memory, the most any kernel uses
};

// The params generator's seam to the compiler (docs/search.md, "Compile footprints"): it
// compiles configs of the parent's source that the model ranks high, and the model, which also
// sees each evaluated config's footprint, re-ranks them before any is timed. A register tile that
// spills, or launch bounds that cap the registers, show in the footprint where the params alone
// say nothing. The optimizer implements it with compile-only executor jobs (src/optimize/
// footprints.h): live, the local executor compiles and the later evaluation hits its cache; in a
// space run, the space executor serves the space file's stored reports.
class FootprintProbe {
 public:
  virtual ~FootprintProbe() = default;
  // One entry per config, in order: its footprint (`compiles` false when it does not compile),
  // or nullopt when the probe cannot tell (no ptxas report: a host task, a space file without
  // one).
  virtual std::vector<std::optional<Footprint>> Probe(const std::string& source, const std::string& source_name,
                                                      const std::vector<ParamValues>& configs) = 0;
};

// A params move of an offered skill card whose `when` held for the parent's findings or class.
struct SkillMoveHint {
  std::string param;      // a param role ("vector", "tile", …) or an UPPER_CASE param name
  std::string direction;  // "up" | "down" | "set"
  std::string value;      // for "set"
  std::string finding;    // the finding id (or class name) that triggered it
  std::string reason;     // why the move matched, in words
};

// A skill card retrieval offered for the parent (src/skills; docs/skills.md), ranked best first.
struct OfferedSkill {
  std::string id;
  std::string intent;      // one line
  bool tune_only = false;  // the code has what the card provides: only its moves apply
  std::vector<SkillMoveHint> moves;
  std::string card_text;         // the whole SKILL.md, for prompts and get_skill
  std::filesystem::path folder;  // the card's folder (copied into a command: workspace)
  std::string reason;            // why retrieval ranked it here
};

struct ProposalContext {
  const Task* task = nullptr;
  // The parent candidate.
  int64_t parent_node = -1;
  std::string parent_source;
  std::string parent_source_name;
  ParamValues parent_params;
  std::string parent_verdict;           // "passed", …
  std::string parent_verdict_summary;   // the verdict's one-line summary (compile error, mismatch …)
  std::string parent_verdict_evidence;  // its evidence as JSON text ("" = none)
  std::string parent_metrics;           // JSON text: compile resources and roofline numbers ("" = none)
  double parent_speedup = 0;
  std::string bottleneck;                  // the parent's roofline class name ("" = not profiled)
  std::vector<Finding> findings;           // the parent's findings, ranked
  std::string memory_summary;              // SearchMemory::Summary for the parent
  std::vector<ParamValues> tried_params;   // params already evaluated anywhere in the run (dedupe)
  std::vector<EvaluatedParams> evaluated;  // every evaluated node of the run, in evaluation order
  std::vector<std::string> sibling_summaries;
  int remaining_budget = 0;  // evaluations left
  int k = 1;                 // return at most k drafts
  uint64_t seed = 0;         // for randomized moves; same seed, same drafts
  int64_t run_id = 0;        // the run asking (generators archive transcripts under it)
  // Skill cards for the parent, ranked (empty when none fit). skills_enabled is false with
  // `--skills off`: generators then use no card, and `params` no finding-steered move.
  std::vector<OfferedSkill> skills;
  bool skills_enabled = true;
  // `--tools on-request` (an ablation): `bottleneck` and `findings` are held back — prompts do not
  // show them and the params generator makes no finding-steered move; the llm: generator's
  // get_profile tool still serves them when called.
  bool profile_on_request = false;
  // Compile footprints for the params generator's model (borrowed; null: the model sees params
  // only).
  FootprintProbe* footprints = nullptr;
};

// What a generator has spent so far (language models; the others spend nothing).
struct GeneratorSpend {
  int64_t requests = 0;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  double cost_usd = 0;
  bool priced = true;  // false when some model had no configured price (counted as 0)
};

class Generator {
 public:
  virtual ~Generator() = default;
  virtual std::string name() const = 0;  // "params", "folder:DIR", …
  // Up to ctx.k drafts; an empty list means "nothing more from this parent" (the search closes
  // it). Asynchronous: an LLM call can take minutes and several may be in flight.
  virtual std::future<Result<std::vector<Draft>>> Propose(const ProposalContext& ctx) = 0;
  // Tokens and dollars spent by this generator object so far (thread-safe).
  virtual GeneratorSpend Spent() const { return {}; }
  // Configs of `task`'s params that a later Propose from a node at `parent` (complete params)
  // may well draft, likeliest first: the search compiles them ahead on idle CPU cores, so that
  // a draft among them is a cache hit when it comes. Only a guess, made before the node's
  // profile and siblings are known; no budget is spent on it. Thread-safe (called on the
  // executor's threads). Default: none (a generator whose drafts cannot be foreseen).
  virtual std::vector<ParamValues> Anticipate(const Task& /*task*/, const ParamValues& /*parent*/) const { return {}; }
};

// What the llm: and command: generators need beyond the spec (llm_generator.h and
// command_generator.h say how each is used); `params` and `folder:` ignore it.
struct GeneratorSetup {
  std::string llm_config;             // --llm-config FILE ("": $XDG_CONFIG_HOME/kpilot/llm.toml if any)
  bool raw_metrics = false;           // --raw-metrics: counters in prompts and get_profile
  double max_cost_usd = -1;           // the run's cap; the generator stops asking at it (< 0: config's)
  std::filesystem::path include_dir;  // the folder holding kpilot/kernel.h
  std::filesystem::path prompts_dir;  // the shipped prompt templates (LlmConfig::prompts_dir overrides)
  // Where the exchanges with the model and the agent runs are archived (generate/transcripts.h;
  // null: not archived), and the store folder a command: agent must not see ("": none).
  std::shared_ptr<TranscriptArchive> transcripts;
  std::filesystem::path store_dir;
  // kpilot-runner, which confines command: agents (`--sandbox`, CommandGeneratorOptions); empty:
  // they run as the user, unconfined.
  std::filesystem::path sandbox_runner;
  // The kpilot executable, which command: agents start as their MCP server (`kpilot mcp`); empty:
  // agents get no server.
  std::filesystem::path kpilot;
  std::ostream* notices = nullptr;  // where "which endpoint receives what" is stated (null: stderr)
};

// The config of the llm: and command: generators: `file` (--llm-config) when given, else
// $XDG_CONFIG_HOME/kpilot/llm.toml (~/.config/kpilot/llm.toml) when it exists, else the defaults.
// A task folder's files are never read for it: a downloaded task must not choose which trees a
// model may read or which variables an agent sees.
Result<llm::LlmConfig> LoadGeneratorConfig(const std::string& file);

// "params", "folder:DIR", "llm:PROVIDER:MODEL[@BASE_URL]" or "command:CMDLINE". InvalidInput
// naming the spec and the choices otherwise; `params` on a task without tunable params is
// InvalidInput with the fix ("declare [params] in task.toml").
Result<std::unique_ptr<Generator>> MakeGenerator(const std::string& spec, const Task& task,
                                                 const GeneratorSetup& setup = {});

}  // namespace kpilot
