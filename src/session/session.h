// Everything one optimize run works with, assembled one way for `kpilot optimize` and for each
// problem of `kpilot bench`: the toolchain (its compile cache in the store), the torch worker for
// PyTorch-defined tasks, the executor (local, or a sweep's space file for a replay), the generator,
// and the skill cards with their usage log. The CLI parses flags into OptimizeOptions, opens a
// session, and runs an Optimizer over it.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "exec/executor.h"
#include "optimize/optimizer.h"
#include "skills/skills.h"
#include "store/store.h"
#include "toolchain/toolchain.h"

namespace kpilot {

// Where kpilot's shipped parts are (the CLI finds them beside its executable; tests point at the
// build and source trees).
struct InstallLayout {
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
  std::ostream* notices = nullptr;         // card overrides, replay calibration warnings (null: none)
  // Evaluations only (kpilot bench --eval-only, a start with nothing to tune): no generator and no
  // skill cards are opened, and MakeOptimizer must not be called.
  bool evaluate_only = false;
};

// The finding ids skill cards may name: the built-in tools', and the rule ids of the example rule
// files, the user's and `tool_dirs`.
Result<ValidationOptions> SkillValidation(const InstallLayout& layout, const std::vector<std::string>& tool_dirs);
// The skill-card library: the built-in folder, the user folders, then `skill_dirs` (--skills DIR),
// each card validated; overrides are written to `notices`. InvalidInput listing every problem
// when a card is invalid.
Result<SkillLibrary> LoadSkillLibrary(const InstallLayout& layout, const std::vector<std::string>& skill_dirs,
                                      const std::vector<std::string>& tool_dirs, std::ostream* notices);

class OptimizeSession {
 public:
  // The parts for running `options` on `task` with `store` (borrowed: both outlive the session).
  // Errors name the flag or file to fix: a generator spec, a space file, a calibration file, the
  // Python worker, a skill card.
  static Result<std::unique_ptr<OptimizeSession>> Open(const Task& task, const OptimizeOptions& options, Store& store,
                                                       const SessionSettings& settings);
  ~OptimizeSession();

  Executor& executor() { return *executor_; }
  Proposer& proposer() { return *proposer_; }
  // An optimizer over this session's parts, reporting to `progress` (borrowed).
  Optimizer MakeOptimizer(ProgressSink& progress);

 private:
  OptimizeSession(const Task& task, Store& store) : task_(task), store_(store) {}

  const Task& task_;
  Store& store_;
  std::unique_ptr<Toolchain> toolchain_;
  std::unique_ptr<PythonTaskRunner> python_;
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<Proposer> proposer_;
  std::optional<SkillLibrary> skills_;
  std::unique_ptr<UsageLog> usage_;
};

}  // namespace kpilot
