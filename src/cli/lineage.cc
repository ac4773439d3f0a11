// kpilot lineage TASK_DIR EXPERT --generator …: walk an expert kernel backward through gated
// simplifications and write the accepted steps, reversed, as skill cards (docs/lineage.md).
#include <sys/utsname.h>

#include <iostream>

#include <fmt/format.h>

#include "cli/cli.h"
#include "core/fs.h"
#include "device/device.h"
#include "lineage/lineage.h"
#include "profile/tool.h"
#include "session/session.h"
#include "skills/skills.h"
#include "task/loader.h"

namespace kpilot::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct LineageArgs {
  std::string task_dir;
  std::string expert;
  std::string generator;
  std::string out = "mined-skills";
  int max_steps = 10;
  int max_rejections = 6;
  int trials = 3;
  double round_trip_min = lineage::kRoundTripMinRatio;
  bool json = false;
  std::string store_dir = ".kpilot";
  std::string llm_config;
  double max_cost = -1;
  std::vector<std::string> workloads;
  std::string vocabulary;
  std::string arch;
  double timeout_s = 120;
  int device = 0;
  std::string admit_on;                      // a held-out task folder ("" = no admission)
  std::string admit_from;                    // its start ("" = its reference)
  std::vector<std::string> admit_workloads;  // its workloads (empty = all)
};

std::string HostPlatform() {
  utsname u{};
  std::string m = uname(&u) == 0 ? u.machine : "host";
  for (auto& c : m)
    if (c == '_') c = '-';
  return m;  // "x86-64", "aarch64"
}

class StderrProgress : public lineage::LineageProgress {
 public:
  void Event(const json& e) override {
    std::string kind = e.value("event", "");
    std::string line;
    if (kind == "start")
      line = fmt::format("lineage of {} on {} with {}", e.value("expert", ""), e.value("task", ""),
                         e.value("generator", ""));
    else if (kind == "expert")
      line = fmt::format("expert: {} ({:.3f}× the task's baseline)", e.value("verdict", ""), e.value("speedup", 0.0));
    else if (kind == "propose")
      line = fmt::format("step {}, attempt {}: asking for one removal …", e.value("step", 0), e.value("attempt", 0));
    else if (kind == "simplified")
      line = fmt::format("  attempt {}: without {} it passes at {:.3f}× the pre-removal speed; confirming …",
                         e.value("attempt", 0), e.value("feature", ""), e.value("speedup", 0.0));
    else if (kind == "rejected")
      line = fmt::format("  attempt {} rejected at {}: {}", e.value("attempt", 0), e.value("stage", ""),
                         e.value("reason", ""));
    else if (kind == "accepted")
      line = fmt::format("  step {} accepted: {} is worth {:.3f}× [{:.3f}, {:.3f}]; round trip {}", e.value("step", 0),
                         e.value("feature", ""), e.value("effect", 0.0), e["ci"][0].get<double>(),
                         e["ci"][1].get<double>(), e["round_trip"].dump()) +
             (e["ci"][1].get<double>() < 1 ? " — slower with it here; its card says so under risks" : "");
    else if (kind == "stop")
      line = fmt::format("stop: {} — {}", e.value("reason", ""), e.value("detail", ""));
    else if (kind == "admit")
      line = fmt::format("admission: applying card {} to {} …", e.value("card", ""), e.value("task", ""));
    else if (kind == "admission")
      line = fmt::format("  card {} {}: {}", e.value("card", ""),
                         e.value("admitted", false) ? "admitted" : "rejected at " + e.value("stage", ""),
                         e.value("reason", ""));
    else if (kind == "card_problem")
      line = "warning: mined card " + e.value("problem", "");
    else
      line = e.dump();
    std::cerr << "kpilot: " << line << "\n";
  }
};

json StepJson(const lineage::Step& s) {
  return {{"step", s.index},
          {"feature", s.proposal.feature},
          {"mechanism", s.proposal.mechanism},
          {"locus", s.proposal.locus},
          {"effect", s.effect},
          {"ci", {s.effect_ci.lo, s.effect_ci.hi}},
          {"round_trip", s.round_trip},
          {"from", s.after_name},
          {"to", s.before_name}};
}

int RunLineage(const LineageArgs& a) {
  auto task = LoadTask(a.task_dir);
  if (!task.ok()) return Fail(task.status());
  auto expert = ReadFile(a.expert);
  if (!expert.ok()) return Fail(expert.status());
  if (a.max_steps < 1 || a.max_rejections < 1 || a.trials < 1)
    return Fail(Status::InvalidInput("--max-steps, --max-rejections and --trials must be at least 1"));
  if (!(a.round_trip_min > 0 && a.round_trip_min <= 1))
    return Fail(Status::InvalidInput("--round-trip-min must be in (0, 1], e.g. 0.99"));
  const InstallLayout layout = Layout();
  auto vocabulary =
      lineage::LoadFeatureVocabulary(a.vocabulary.empty() ? layout.skills_dir / "README.md" : fs::path(a.vocabulary));
  if (!vocabulary.ok()) return Fail(vocabulary.status());
  // The held-out task and its start are checked before the walk spends anything.
  std::optional<lineage::HeldOutTask> held_out;
  if (!a.admit_on.empty()) {
    auto h = lineage::LoadHeldOutTask(*task, a.admit_on, a.admit_from);
    if (!h.ok()) return Fail(h.status());
    held_out = std::move(h).value();
  } else if (!a.admit_from.empty() || !a.admit_workloads.empty()) {
    return Fail(Status::InvalidInput("--admit-from and --admit-workload need --admit-on HELD_OUT_TASK_DIR"));
  }

  EvalOptions opt;
  opt.workloads = a.workloads;
  opt.timeout_s = a.timeout_s;
  opt.compile.cuda_arch = a.arch;
  opt.device = a.device;
  std::string device, platform;
  std::optional<GpuInfo> gpu_info;
  if (task->backend == Backend::kCuda) {
    std::string why;
    auto gpus = SystemGpuProbe().List(&why);
    if (gpus.empty())
      return Fail(Status::Unavailable("task " + task->name +
                                      " needs the cuda backend, but this machine has no usable GPU (" + why +
                                      "); run kpilot lineage on a machine with an NVIDIA GPU"));
    if (a.device < 0 || a.device >= static_cast<int>(gpus.size()))
      return Fail(Status::InvalidInput(fmt::format("--device {}: this machine has {} GPU(s)", a.device, gpus.size())));
    const GpuInfo& gpu = gpus[static_cast<size_t>(a.device)];
    gpu_info = gpu;
    if (opt.compile.cuda_arch.empty()) opt.compile.cuda_arch = gpu.Arch();
    device = gpu.name + " (" + opt.compile.cuda_arch + ")";
    platform = opt.compile.cuda_arch;
  } else {
    platform = HostPlatform();
    device = "host " + platform;
  }

  auto store = Store::Open(a.store_dir);
  if (!store.ok()) return Fail(store.status());
  if (gpu_info) opt.calibration = LoadCalibration(store->get(), *gpu_info);
  auto session = LineageSession::Open(a.generator, a.llm_config, a.max_cost, **store, layout);
  if (!session.ok()) return Fail(session.status());
  std::cerr << "kpilot: the lineage generator (" << (*session)->generator().Describe()
            << ") receives the task (task.toml, its description, the reference source), the ABI header, the expert "
               "kernel and each simplification of it, and the draft skill cards\n";
  auto measure = lineage::MakeHarnessMeasure((*session)->evaluator(), *task, opt, device, platform);
  std::unique_ptr<lineage::LineageMeasure> held_measure;
  if (held_out) {
    EvalOptions hopt = opt;
    hopt.workloads = a.admit_workloads;
    held_measure = lineage::MakeHarnessMeasure((*session)->evaluator(), held_out->task, hopt, device, platform);
  }

  lineage::MiningOptions mo;
  lineage::LineageOptions& lo = mo.walk;
  lo.max_steps = a.max_steps;
  lo.max_rejections = a.max_rejections;
  lo.trials = a.trials;
  lo.round_trip_min = a.round_trip_min;
  lo.prompts_dir = layout.prompts_dir;
  lo.prompts_override = (*session)->prompts_override();
  auto abi = ReadFile(layout.include_dir / "kpilot" / "kernel.h");
  if (!abi.ok()) return Fail(abi.status());
  lo.abi_header = *abi;
  lo.kpilot_version = "kpilot " KPILOT_VERSION;
  lo.expert_name = fs::path(a.expert).filename().string();
  lo.generator_spec = a.generator;
  for (const auto& t : BuiltinTools()) lo.known_findings.insert(t->id());
  mo.out = a.out;
  auto finding_ids = KnownFindingIds({layout.example_tools});
  if (!finding_ids.ok()) return Fail(finding_ids.status());
  mo.finding_ids = *finding_ids;
  mo.held_out = held_out ? &*held_out : nullptr;
  mo.held_out_measure = held_measure.get();

  StderrProgress progress;
  lineage::LineageWalk walk(*task, *vocabulary, (*session)->generator(), *measure, store->get(),
                            &(*session)->transcripts(), progress);
  auto mined = walk.Mine(*expert, mo);
  if (!mined.ok()) return Fail(mined.status());
  const lineage::LineageResult& res = mined->walk;

  json cards_json = json::array(), rejected_json = json::array();
  for (const auto& p : mined->written) cards_json.push_back(p.string());
  for (const auto& p : mined->rejected) rejected_json.push_back(p.string());
  if (a.json) {
    json steps = json::array();
    for (const auto& s : res.steps) steps.push_back(StepJson(s));
    json rejected = json::array();
    for (const auto& at : res.attempts)
      if (!at.accepted && at.stage != "naive")
        rejected.push_back({{"attempt", at.attempt}, {"step", at.step}, {"stage", at.stage}, {"reason", at.reason}});
    json j = {{"run", res.run_id},
              {"task", task->name},
              {"expert", lo.expert_name},
              {"expert_speedup", res.expert.speedup},
              {"stop_reason", res.stop_reason},
              {"stop_detail", res.stop_detail},
              {"attempts", res.attempts.size()},
              {"steps", steps},
              {"rejected", rejected},
              {"expert_features", res.expert_features},
              {"naive_features", res.naive_features},
              {"cards", cards_json},
              {"rejected_cards", rejected_json},
              {"admission", mined->admission},
              {"card_problems", mined->card_problems},
              {"out", a.out},
              {"generator",
               {{"input_tokens", res.spent.input_tokens},
                {"output_tokens", res.spent.output_tokens},
                {"cost_usd", res.spent.cost_usd},
                {"priced", res.spent.priced}}}};
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << fmt::format("lineage run {} of {} on {}: {} step(s) accepted in {} attempt(s); stopped: {} ({})\n",
                             res.run_id, lo.expert_name, task->name, res.steps.size(), res.attempts.size(),
                             res.stop_reason, res.stop_detail);
    for (const auto& s : res.steps)
      std::cout << fmt::format("  step {}: {} ({:.3f}× [{:.3f}, {:.3f}]) at {}\n", s.index, s.proposal.feature,
                               s.effect, s.effect_ci.lo, s.effect_ci.hi, s.proposal.locus);
    for (const auto& p : mined->written) std::cout << "  card " << p.string() << "\n";
    for (const auto& ad : mined->admissions)
      std::cout << fmt::format("  {} {} on {}: {}\n", ad.admitted ? "admitted" : "rejected", ad.card_id,
                               held_out->task.name, ad.reason);
    for (const auto& p : mined->rejected) std::cout << "  rejected card " << p.string() << "\n";
  }
  return mined->written.empty() ? kExitNotPassed : kExitOk;
}

}  // namespace

void AddLineageCommand(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<LineageArgs>();
  auto* cmd =
      app.add_subcommand("lineage", "Mine skill cards from an expert kernel by walking it back to the naive form");
  cmd->add_option("task_dir", a->task_dir, "Task folder (holding task.toml)")->required();
  cmd->add_option("expert", a->expert, "The expert kernel (it must pass the harness)")->required();
  cmd->add_option("--generator", a->generator, "llm:PROVIDER:MODEL[@BASE_URL] | command:CMDLINE (docs/generators.md)")
      ->required();
  cmd->add_option("--out", a->out, "Skills folder the cards are written to (<id>/SKILL.md)")->capture_default_str();
  cmd->add_option("--max-steps", a->max_steps, "Stop after this many accepted steps")->capture_default_str();
  cmd->add_option("--max-rejections", a->max_rejections, "Stop after this many rejected attempts in a row")
      ->capture_default_str();
  cmd->add_option("--trials", a->trials, "Round-trip trials (paired evaluations) per step")->capture_default_str();
  cmd->add_option("--round-trip-min", a->round_trip_min,
                  "The rebuilt kernel must reach this share of the pre-removal speed in every trial")
      ->capture_default_str();
  cmd->add_flag("--json", a->json, "Print a JSON summary on stdout");
  cmd->add_option("--store", a->store_dir, "Store folder")->capture_default_str();
  cmd->add_option("--llm-config", a->llm_config,
                  "TOML config of the generator (default: ~/.config/kpilot/llm.toml when present)");
  cmd->add_option("--max-cost", a->max_cost, "Spending cap in US dollars (llm:; default: the config's max_cost_usd)");
  cmd->add_option("--workload", a->workloads, "Only these workloads (repeatable)");
  cmd->add_option("--vocabulary", a->vocabulary,
                  "A skills README with the '## Feature vocabulary' table (default: skills/README.md)");
  cmd->add_option("--arch", a->arch, "CUDA target, e.g. sm_90a (default: the GPU's)");
  cmd->add_option("--timeout", a->timeout_s, "Wall-clock limit of each evaluation in seconds")->capture_default_str();
  cmd->add_option("--device", a->device, "CUDA device index")->capture_default_str();
  cmd->add_option(
      "--admit-on", a->admit_on,
      "Held-out task folder: each mined card is applied to its start by the generator and admitted only when "
      "the result is correct and faster (paired CI above 1); the others go to OUT/rejected/");
  cmd->add_option("--admit-from", a->admit_from, "The held-out task's start kernel (default: its reference)");
  cmd->add_option("--admit-workload", a->admit_workloads, "Only these workloads of the held-out task (repeatable)");
  cmd->callback([a, exit_code]() { *exit_code = RunLineage(*a); });
}

}  // namespace kpilot::cli
