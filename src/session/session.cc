// Assembling an optimize run's parts (session.h).
#include "session/session.h"

#include <thread>

#include <fmt/format.h>

#include "core/subprocess.h"
#include "exec/space_executor.h"
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

class StoreArchive : public TranscriptArchive {
 public:
  explicit StoreArchive(Store& store) : store_(store) {}

  bool Archive(int64_t run_id, int64_t parent, const llm::Exchange& e) override {
    nlohmann::json usage = {{"input_tokens", e.usage.input_tokens},
                            {"output_tokens", e.usage.output_tokens},
                            {"cost_usd", e.usage.cost_usd},
                            {"priced", e.usage.priced}};
    nlohmann::json whole = {{"endpoint", e.endpoint}, {"request", e.request_json}, {"response", e.response_json},
                            {"status", e.status},     {"attempts", e.attempts},    {"seconds", e.seconds},
                            {"usage", usage},         {"error", e.error}};
    auto blob = store_.PutBlob(whole.dump(2));
    if (!blob.ok()) return false;
    nlohmann::json event = {{"parent", parent},       {"endpoint", e.endpoint}, {"blob", *blob},  {"status", e.status},
                            {"attempts", e.attempts}, {"seconds", e.seconds},   {"usage", usage}, {"error", e.error}};
    return store_.AddRunEvent(run_id, "transcript", event.dump()).ok();
  }

 private:
  Store& store_;
};

// What every generator of a session is given: the shipped files, the sandbox for agents, and
// the store for transcripts.
GeneratorSetup BaseGeneratorSetup(Store& store, const InstallLayout& layout) {
  GeneratorSetup gen;
  gen.include_dir = layout.include_dir;
  gen.prompts_dir = layout.prompts_dir;
  gen.transcripts = StoreTranscriptArchive(store);
  gen.store_dir = store.dir();
  gen.sandbox_runner = layout.runner;
  gen.kpilot = layout.kpilot;
  return gen;
}

Result<std::unique_ptr<Generator>> MakeRunGenerator(const Task& task, const OptimizeOptions& o, Store& store,
                                                    const InstallLayout& layout) {
  GeneratorSetup gen = BaseGeneratorSetup(store, layout);
  gen.llm_config = o.llm_config;
  gen.raw_metrics = o.raw_metrics;
  gen.max_cost_usd = o.generator.rfind("llm:", 0) == 0 ? o.max_cost_usd : -1;
  return MakeGenerator(o.generator, task, gen);
}

}  // namespace

std::shared_ptr<TranscriptArchive> StoreTranscriptArchive(Store& store) {
  return std::make_shared<StoreArchive>(store);
}

OptimizeSession::~OptimizeSession() = default;

Result<std::unique_ptr<OptimizeSession>> OptimizeSession::Open(const Task& task, const OptimizeOptions& o, Store& store,
                                                               const SessionSettings& s) {
  std::unique_ptr<OptimizeSession> session(new OptimizeSession(task, store));
  if (!s.evaluate_only) {
    auto generator = MakeRunGenerator(task, o, store, s.layout);
    if (!generator.ok()) return generator.status();
    session->generator_ = std::move(generator).value();
  }

  if (!o.space_file.empty()) {
    auto space = SpaceExecutor::Open(o.space_file, task, o.seed);
    if (!space.ok()) return space.status();
    if (!o.space_calibration.empty()) {
      auto calibration = ReadCalibrationFile(o.space_calibration);
      if (!calibration.ok()) return calibration.status().WithContext("--calibration");
      std::string warning = (*space)->SetCalibration(*calibration);
      if (!warning.empty() && s.notices) *s.notices << "kpilot: warning: " << warning << "\n";
    }
    session->executor_ = std::move(space).value();
  } else {
    session->toolchain_ = MakeSystemToolchain(store.dir() / "cache", s.layout.include_dir,
                                              s.compile_processes ? *s.compile_processes : SystemProcessRunner());
    if (task.reference.kind == ReferenceKind::kPython) {
      auto worker = FindPythonWorker(s.python, s.layout.python_package);
      if (!worker.ok()) return worker.status();
      worker->sandbox_runner = s.layout.runner;
      session->python_ = std::make_unique<WorkerTaskRunner>(SystemProcessRunner(), *worker);
    }
    const int threads =
        s.compile_threads > 0 ? s.compile_threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    // With channels, each queue's evaluations go to its channel, on device 0 of wherever it runs.
    const std::vector<int> devices = s.channels ? std::vector<int>(std::max(1, s.channel_queues), 0) : o.devices;
    session->executor_ = std::make_unique<LocalExecutor>(*session->toolchain_, SystemProcessRunner(), s.layout.runner,
                                                         threads, session->python_.get(), devices, s.reuse, s.channels);
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
  Optimizer optimizer(task_, *generator_, *executor_, store_, progress);
  optimizer.UseSkills(skills_ ? &*skills_ : nullptr, usage_.get());
  return optimizer;
}

LineageSession::~LineageSession() = default;

Result<std::unique_ptr<LineageSession>> LineageSession::Open(const std::string& generator,
                                                             const std::string& llm_config, double max_cost_usd,
                                                             Store& store, const InstallLayout& layout) {
  std::unique_ptr<LineageSession> session(new LineageSession());
  GeneratorSetup gen = BaseGeneratorSetup(store, layout);
  gen.llm_config = llm_config;
  gen.max_cost_usd = max_cost_usd;
  gen.store_dir = fs::absolute(store.dir());  // an agent runs in a workspace of its own, elsewhere
  session->transcripts_ = std::make_shared<RunTranscripts>(gen.transcripts);
  auto made = lineage::MakeLineageGenerator(generator, gen, session->transcripts_, &session->prompts_override_);
  if (!made.ok()) return made.status();
  session->generator_ = std::move(made).value();
  session->toolchain_ = MakeSystemToolchain(store.dir() / "cache", layout.include_dir);
  session->evaluator_ = std::make_unique<Evaluator>(*session->toolchain_, SystemProcessRunner(), layout.runner);
  return session;
}

}  // namespace kpilot
