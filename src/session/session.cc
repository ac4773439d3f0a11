// Assembling an optimize run's parts (session.h).
#include "session/session.h"

#include <thread>

#include <fmt/format.h>

#include "core/subprocess.h"
#include "exec/replay_executor.h"
#include "pytorch/pytorch.h"

namespace kpilot {

namespace fs = std::filesystem;

Result<ValidationOptions> SkillValidation(const InstallLayout& layout, const std::vector<std::string>& tool_dirs) {
  std::vector<fs::path> rule_dirs = {layout.example_tools};
  if (!layout.user_tools.empty()) rule_dirs.push_back(layout.user_tools);
  for (const auto& d : tool_dirs) rule_dirs.push_back(d);
  auto ids = KnownFindingIds(rule_dirs);
  if (!ids.ok()) return ids.status();
  return ValidationOptions{*ids};
}

Result<SkillLibrary> LoadSkillLibrary(const InstallLayout& layout, const std::vector<std::string>& skill_dirs,
                                      const std::vector<std::string>& tool_dirs, std::ostream* notices) {
  auto options = SkillValidation(layout, tool_dirs);
  if (!options.ok()) return options.status();
  std::vector<fs::path> extra(skill_dirs.begin(), skill_dirs.end());
  auto lib = LoadLibrary(DefaultSkillDirs(layout.skills_dir, extra), *options);
  if (!lib.ok()) return lib.status();
  if (notices)
    for (const auto& o : lib->overrides)
      *notices << fmt::format("kpilot: card {} from {} ({}) overrides {} ({})\n", o.id, o.by.string(),
                              SkillOriginName(o.by_origin), o.replaced.string(), SkillOriginName(o.replaced_origin));
  return lib;
}

namespace {

Result<std::unique_ptr<Proposer>> MakeGenerator(const Task& task, const OptimizeOptions& o, Store& store,
                                                const InstallLayout& layout) {
  GeneratorSetup gen;
  gen.llm_config = o.llm_config;
  gen.raw_metrics = o.raw_metrics;
  gen.max_cost_usd = o.generator.rfind("llm:", 0) == 0 ? o.max_cost_usd : -1;
  gen.include_dir = layout.include_dir;
  gen.prompts_dir = layout.prompts_dir;
  gen.store = &store;
  gen.sandbox_runner = layout.runner;
  return MakeProposer(o.generator, task, gen);
}

}  // namespace

OptimizeSession::~OptimizeSession() = default;

Result<std::unique_ptr<OptimizeSession>> OptimizeSession::Open(const Task& task, const OptimizeOptions& o, Store& store,
                                                               const SessionSettings& s) {
  std::unique_ptr<OptimizeSession> session(new OptimizeSession(task, store));
  if (!s.evaluate_only) {
    auto proposer = MakeGenerator(task, o, store, s.layout);
    if (!proposer.ok()) return proposer.status();
    session->proposer_ = std::move(proposer).value();
  }

  if (!o.replay.empty()) {
    auto replay = ReplayExecutor::Open(o.replay, task, o.seed);
    if (!replay.ok()) return replay.status();
    if (!o.replay_calibration.empty()) {
      auto calibration = ReadCalibrationFile(o.replay_calibration);
      if (!calibration.ok()) return calibration.status().WithContext("--calibration");
      std::string warning = (*replay)->SetCalibration(*calibration);
      if (!warning.empty() && s.notices) *s.notices << "kpilot: warning: " << warning << "\n";
    }
    session->executor_ = std::move(replay).value();
  } else {
    session->toolchain_ = MakeSystemToolchain(store.dir() / "cache", s.layout.include_dir);
    if (task.reference.kind == ReferenceKind::kPython) {
      auto worker = FindPythonWorker(s.python, s.layout.python_package);
      if (!worker.ok()) return worker.status();
      worker->sandbox_runner = s.layout.runner;
      session->python_ = std::make_unique<WorkerTaskRunner>(SystemProcessRunner(), *worker);
    }
    const int threads = s.compile_threads > 0 ? s.compile_threads
                                              : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    session->executor_ = std::make_unique<LocalExecutor>(*session->toolchain_, SystemProcessRunner(), s.layout.runner,
                                                         threads, session->python_.get(), o.devices, s.reuse);
  }
  if (o.skills && !s.evaluate_only) {
    auto lib = LoadSkillLibrary(s.layout, o.skill_dirs, o.tool_dirs, s.notices);
    if (!lib.ok()) return lib.status().WithContext("loading skill cards (--skills off runs without them)");
    session->skills_ = std::move(lib).value();
    session->usage_ = StoreUsageLog(store);
  }
  return session;
}

Optimizer OptimizeSession::MakeOptimizer(ProgressSink& progress) {
  Optimizer optimizer(task_, *proposer_, *executor_, store_, progress);
  optimizer.UseSkills(skills_ ? &*skills_ : nullptr, usage_.get());
  return optimizer;
}

}  // namespace kpilot
