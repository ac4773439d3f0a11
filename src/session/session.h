// Everything one optimize run works with, assembled one way for `kpilot optimize` and for each
// problem of `kpilot bench`: the toolchain (its compile cache in the store), the torch worker for
// PyTorch-defined tasks, the executor (local, or a sweep's space file for a space run), the generator,
// and the skill cards with their usage log. The CLI parses flags into OptimizeOptions, opens a
// session, and runs an Optimizer over it. `kpilot lineage` opens the smaller LineageSession: the
// toolchain and evaluator, and the walk's generator set up the way an optimize run's is. Both
// archive their generators' transcripts in the store (StoreTranscriptArchive).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "exec/executor.h"
#include "generate/drafting.h"
#include "harness/harness.h"
#include "lineage/lineage.h"
#include "optimize/optimizer.h"
#include "skills/skills.h"
#include "store/store.h"
#include "toolchain/toolchain.h"

namespace kpilot {

// Where kpilot's shipped parts are (the CLI finds them beside its executable; tests point at the
// build and source trees).
struct InstallLayout {
  std::filesystem::path kpilot;          // the kpilot executable ("" = unknown: agents get no MCP server)
  std::filesystem::path runner;          // kpilot-runner
  std::filesystem::path include_dir;     // the folder holding kpilot/kernel.h
  std::filesystem::path prompts_dir;     // llm:/command: prompt templates
  std::filesystem::path skills_dir;      // the built-in skill cards
  std::filesystem::path example_tools;   // the example rule files (ids cards may name)
  std::filesystem::path python_package;  // the folder holding kpilot_torch/
  std::filesystem::path user_tools;      // ~/.config/kpilot/tools ("" = none)
};

struct SessionSettings {
  InstallLayout layout;
  std::string python;                      // --python for PyTorch-defined tasks ("" = python3 on PATH)
  RunnerReuse reuse = RunnerReuse::kCuda;  // served runners (kCuda) or one per evaluation (kNone)
  int compile_threads = 0;                 // 0: one per core
  // The compilers' process runner (kpilot ... --compile-on slurm: job steps on a CPU node); null:
  // this machine's. Borrowed; outlives the session.
  ProcessRunner* compile_processes = nullptr;
  std::ostream* notices = nullptr;  // card overrides, space calibration warnings (null: none)
  // Evaluations only (kpilot bench --eval-only, a start with nothing to tune): no generator and no
  // skill cards are opened, and MakeOptimizer must not be called.
  bool evaluate_only = false;
  // Evaluations elsewhere (kpilot optimize --executor slurm): `channel_queues` evaluation queues,
  // each taking every evaluation through the channel `channels` makes for it (RunnerChannelFactory).
  RunnerChannelFactory channels;
  int channel_queues = 1;
};

// The finding ids skill cards may name: the built-in tools', and the rule ids of the example rule
// files, the user's and `tool_dirs`.
Result<ValidationOptions> SkillValidation(const InstallLayout& layout, const std::vector<std::string>& tool_dirs);
// The skill-card library: the built-in folder, the user folders, then `skill_dirs` (--skills DIR),
// each card validated; overrides are written to `notices`. InvalidInput listing every problem
// when a card is invalid.
Result<SkillLibrary> LoadSkillLibrary(const InstallLayout& layout, const std::vector<std::string>& skill_dirs,
                                      const std::vector<std::string>& tool_dirs, std::ostream* notices);

// The generators' transcripts kept in `store` (borrowed; it outlives the archive): each exchange
// as a blob holding the whole of it, and a "transcript" event of its run pointing at the blob
// with the parent node, status, attempts, seconds, usage and error. A blob that cannot be
// written is skipped (archiving must not stop a run; the event would dangle).
std::shared_ptr<TranscriptArchive> StoreTranscriptArchive(Store& store);

class OptimizeSession {
 public:
  // The parts for running `options` on `task` with `store` (borrowed: both outlive the session).
  // Errors name the flag or file to fix: a generator spec, a space file, a calibration file, the
  // Python worker, a skill card.
  static Result<std::unique_ptr<OptimizeSession>> Open(const Task& task, const OptimizeOptions& options, Store& store,
                                                       const SessionSettings& settings);
  ~OptimizeSession();

  Executor& executor() { return *executor_; }
  Generator& generator() { return *generator_; }
  // An optimizer over this session's parts, reporting to `progress` (borrowed).
  Optimizer MakeOptimizer(ProgressSink& progress);

 private:
  OptimizeSession(const Task& task, Store& store) : task_(task), store_(store) {}

  const Task& task_;
  Store& store_;
  std::unique_ptr<Toolchain> toolchain_;
  std::unique_ptr<PythonTaskRunner> python_;
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<Generator> generator_;
  std::optional<SkillLibrary> skills_;
  std::unique_ptr<UsageLog> usage_;
};

// What `kpilot lineage` works with (docs/lineage.md): the toolchain (its compile cache in the
// store), the evaluator the walk's measures run through, and the walk's generator, set up as an
// optimize run's generator is and archiving its exchanges in the store.
class LineageSession {
 public:
  // `generator`: llm:PROVIDER:MODEL[@BASE_URL] or command:CMDLINE; `llm_config` ("": the user's)
  // and `max_cost_usd` (< 0: the config's; llm: only) as for optimize. `store` is borrowed and
  // outlives the session. Errors are MakeLineageGenerator's (lineage/lineage.h).
  static Result<std::unique_ptr<LineageSession>> Open(const std::string& generator, const std::string& llm_config,
                                                      double max_cost_usd, Store& store, const InstallLayout& layout);
  ~LineageSession();

  Evaluator& evaluator() { return *evaluator_; }
  lineage::LineageGenerator& generator() { return *generator_; }
  // Told the run and attempt before each request (LineageWalk, AdmitCards).
  RunTranscripts& transcripts() { return *transcripts_; }
  // The LLM config's prompts_dir, which overrides the shipped templates ("" = none).
  const std::filesystem::path& prompts_override() const { return prompts_override_; }

 private:
  LineageSession() = default;

  std::unique_ptr<Toolchain> toolchain_;
  std::unique_ptr<Evaluator> evaluator_;
  std::shared_ptr<RunTranscripts> transcripts_;
  std::unique_ptr<lineage::LineageGenerator> generator_;
  std::filesystem::path prompts_override_;
};

}  // namespace kpilot
