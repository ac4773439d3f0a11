// kpilot lineage TASK_DIR EXPERT --generator …: walk an expert kernel backward through gated
// simplifications and write the accepted steps, reversed, as skill cards (docs/lineage.md).
#include <sys/utsname.h>

#include <iostream>

#include <fmt/format.h>

#include "cli/cli.h"
#include "core/fs.h"
#include "device/device.h"
#include "harness/harness.h"
#include "lineage/lineage.h"
#include "llm/llm.h"
#include "profile/tool.h"
#include "skills/skills.h"
#include "propose/llm_proposer.h"
#include "task/loader.h"
#include "toolchain/toolchain.h"

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
    if (kind == "start") line = fmt::format("lineage of {} on {} with {}", e.value("expert", ""), e.value("task", ""), e.value("generator", ""));
    else if (kind == "expert") line = fmt::format("expert: {} ({:.3f}× the task's baseline)", e.value("verdict", ""), e.value("speedup", 0.0));
    else if (kind == "propose") line = fmt::format("step {}, attempt {}: asking for one removal …", e.value("step", 0), e.value("attempt", 0));
    else if (kind == "simplified") line = fmt::format("  attempt {}: without {} it passes at {:.3f}× the pre-removal speed; confirming …",
                                                     e.value("attempt", 0), e.value("feature", ""), e.value("speedup", 0.0));
    else if (kind == "rejected") line = fmt::format("  attempt {} rejected at {}: {}", e.value("attempt", 0), e.value("stage", ""), e.value("reason", ""));
    else if (kind == "accepted") line = fmt::format("  step {} accepted: {} is worth {:.3f}× [{:.3f}, {:.3f}]; round trip {}", e.value("step", 0),
                                                   e.value("feature", ""), e.value("effect", 0.0), e["ci"][0].get<double>(),
                                                   e["ci"][1].get<double>(), e["round_trip"].dump()) +
                                       (e["ci"][1].get<double>() < 1 ? " — slower with it here; its card says so under risks" : "");
    else if (kind == "stop") line = fmt::format("stop: {} — {}", e.value("reason", ""), e.value("detail", ""));
    else if (kind == "admit") line = fmt::format("admission: applying card {} to {} …", e.value("card", ""), e.value("task", ""));
    else if (kind == "admission") line = fmt::format("  card {} {}: {}", e.value("card", ""),
                                                     e.value("admitted", false) ? "admitted" : "rejected at " + e.value("stage", ""),
                                                     e.value("reason", ""));
    else line = e.dump();
    std::cerr << "kpilot: " << line << "\n";
  }
};

Result<std::unique_ptr<lineage::LineageGenerator>> MakeGenerator(const LineageArgs& a,
                                                                 std::shared_ptr<RunTranscripts> transcripts,
                                                                 std::string* prompts_override) {
  auto config = LoadGeneratorConfig(a.llm_config);
  if (!config.ok()) return config.status();
  *prompts_override = config->prompts_dir;
  if (a.generator.rfind("llm:", 0) == 0) {
    auto endpoint = llm::ParseLlmSpec(a.generator);
    if (!endpoint.ok()) return endpoint.status();
    if (a.max_cost >= 0) config->max_cost_usd = a.max_cost;
    auto client = llm::MakeChatClient(*endpoint, *config, llm::MakeCurlTransport(), transcripts);
    if (!client.ok()) return client.status();
    return lineage::MakeLlmLineageGenerator(std::shared_ptr<llm::ChatClient>(std::move(client).value()));
  }
  if (a.generator.rfind("command:", 0) == 0) {
    auto o = CommandOptionsFromSpec(a.generator, *config);
    if (!o.ok()) return o.status();
    if (o->argv.empty())
      return Status::InvalidInput("--generator " + a.generator + ": no command — give one or set command_argv in the LLM config");
    if (FindOnPath(o->argv.front()).empty())
      return Status::NotFound("--generator " + a.generator + ": " + o->argv.front() + " is not on PATH (nor an executable path)");
    o->transcripts = transcripts;
    o->sandbox_runner = RunnerPath();
    o->sandbox_hide = {std::filesystem::absolute(a.store_dir).string()};
    return lineage::MakeCommandLineageGenerator(SystemProcessRunner(), std::move(o).value());
  }
  return Status::InvalidInput("--generator " + a.generator +
                              ": kpilot lineage needs a generator that writes code: llm:PROVIDER:MODEL[@BASE_URL] or command:CMDLINE");
}

json StepJson(const lineage::Step& s) {
  return {{"step", s.index},          {"feature", s.proposal.feature}, {"mechanism", s.proposal.mechanism},
          {"locus", s.proposal.locus}, {"effect", s.effect},            {"ci", {s.effect_ci.lo, s.effect_ci.hi}},
          {"round_trip", s.round_trip}, {"from", s.after_name},         {"to", s.before_name}};
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
  auto vocabulary = lineage::LoadFeatureVocabulary(a.vocabulary.empty() ? SkillsDir() / "README.md" : fs::path(a.vocabulary));
  if (!vocabulary.ok()) return Fail(vocabulary.status());
  // The held-out task and its start are checked before the walk spends anything.
  std::optional<Task> held_out;
  std::string admit_start, admit_start_name;
  if (!a.admit_on.empty()) {
    auto h = LoadTask(a.admit_on);
    if (!h.ok()) return Fail(h.status().WithContext("--admit-on"));
    if (h->backend != task->backend)
      return Fail(Status::InvalidInput("--admit-on " + a.admit_on + ": task " + h->name + " is a " +
                                       std::string(BackendName(h->backend)) + " task and " + task->name + " a " +
                                       std::string(BackendName(task->backend)) +
                                       " one; the mined cards can only be admitted on a task of their backend"));
    if (fs::weakly_canonical(h->dir) == fs::weakly_canonical(task->dir))
      return Fail(Status::InvalidInput("--admit-on " + a.admit_on + " is the mined task itself; admission needs a held-out task"));
    fs::path start = a.admit_from.empty() ? h->reference.path : fs::path(a.admit_from);
    auto text = ReadFile(start);
    if (!text.ok()) return Fail(text.status().WithContext("--admit-from"));
    admit_start = *text;
    admit_start_name = start.filename().string();
    held_out = *h;
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
      return Fail(Status::Unavailable("task " + task->name + " needs the cuda backend, but this machine has no usable GPU (" + why +
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

  auto workspace = OpenWorkspace(a.store_dir, false);
  if (!workspace.ok()) return Fail(workspace.status());
  Store* store = workspace->store.get();
  if (gpu_info) opt.calibration = LoadCalibration(store, *gpu_info);
  auto transcripts = std::make_shared<RunTranscripts>(store);
  std::string prompts_override;
  auto generator = MakeGenerator(a, transcripts, &prompts_override);
  if (!generator.ok()) return Fail(generator.status());
  std::cerr << "kpilot: the lineage generator (" << (*generator)->Describe()
              << ") receives the task (task.toml, its description, the reference source), the ABI header, the expert "
                 "kernel and each simplification of it, and the draft skill cards\n";

  auto toolchain = MakeSystemToolchain(workspace->cache_dir, IncludeDir());
  Evaluator evaluator(*toolchain, SystemProcessRunner(), RunnerPath());
  auto measure = lineage::MakeHarnessMeasure(evaluator, *task, opt, device, platform);

  lineage::LineageOptions lo;
  lo.max_steps = a.max_steps;
  lo.max_rejections = a.max_rejections;
  lo.trials = a.trials;
  lo.round_trip_min = a.round_trip_min;
  lo.prompts_dir = PromptsDir();
  lo.prompts_override = prompts_override;
  auto abi = ReadFile(IncludeDir() / "kpilot" / "kernel.h");
  if (!abi.ok()) return Fail(abi.status());
  lo.abi_header = *abi;
  lo.kpilot_version = "kpilot " KPILOT_VERSION;
  lo.expert_name = fs::path(a.expert).filename().string();
  lo.generator_spec = a.generator;
  for (const auto& t : BuiltinTools()) lo.known_findings.insert(t->id());

  StderrProgress progress;
  lineage::LineageWalk walk(*task, *vocabulary, **generator, *measure, store, transcripts.get(), progress);
  auto res = walk.Run(*expert, lo);
  if (!res.ok()) return Fail(res.status());

  lineage::Provenance pv;
  pv.task = task->name;
  pv.device = device;
  pv.platform = platform;
  pv.kpilot_version = lo.kpilot_version;
  pv.run_id = res->run_id;
  pv.language = task->backend == Backend::kCuda ? "cuda" : "cpp";
  auto cards = lineage::CardsFromSteps(res->steps, pv);
  std::string chain = lineage::CheckCardChain(cards, res->naive_features, res->expert_features);
  if (!chain.empty()) return Fail(Status::Internal("the mined cards are inconsistent with the feature states: " + chain));

  // Optional admission: each card applied to the held-out start by the same generator, gated by
  // the harness; the measurement goes into the card's evidence either way.
  std::vector<lineage::Admission> admissions;
  if (held_out && !cards.empty()) {
    EvalOptions hopt = opt;
    hopt.workloads = a.admit_workloads;
    auto held_measure = lineage::MakeHarnessMeasure(evaluator, *held_out, hopt, device, platform);
    lineage::AdmissionOptions ao;
    ao.prompts_dir = lo.prompts_dir;
    ao.prompts_override = lo.prompts_override;
    ao.abi_header = lo.abi_header;
    ao.start_name = admit_start_name;
    auto admitted = lineage::AdmitCards(cards, *held_out, admit_start, **generator, *held_measure, ao, store, res->run_id,
                                        transcripts.get(), progress);
    if (!admitted.ok()) return Fail(admitted.status());
    admissions = *admitted;
    lineage::Provenance hpv = pv;
    hpv.task = held_out->name;
    for (size_t i = 0; i < cards.size(); ++i) lineage::AddAdmissionEvidence(cards[i], admissions[i], hpv, admit_start_name);
  }
  // Each card is checked by the skill library's validation before it is written; a problem is
  // reported, not hidden (a host card's platform is one until the format names host platforms).
  json problems = json::array();
  auto finding_ids = KnownFindingIds({ExampleToolsDir()});
  if (!finding_ids.ok()) return Fail(finding_ids.status());
  for (const auto& c : cards) {
    std::vector<SkillProblem> found;
    ParseSkillCard(lineage::RenderSkillCard(c), fs::path(a.out) / c.id / "SKILL.md", c.id, {*finding_ids}, &found);
    for (const auto& p : found) {
      std::cerr << "kpilot: warning: mined card " << p.ToString() << "\n";
      problems.push_back(p.ToString());
    }
  }
  // Without admission every card goes to --out; with it, the admitted ones do and the others go
  // to --out/rejected/, which loading skips.
  std::vector<lineage::SkillCard> library_cards, rejected_cards;
  for (size_t i = 0; i < cards.size(); ++i)
    (admissions.empty() || admissions[i].admitted ? library_cards : rejected_cards).push_back(cards[i]);
  std::vector<fs::path> written, rejected_written;
  if (!library_cards.empty()) {
    auto w = lineage::WriteCards(library_cards, a.out);
    if (!w.ok()) return Fail(w.status());
    written = *w;
  }
  if (!rejected_cards.empty()) {
    auto w = lineage::WriteCards(rejected_cards, fs::path(a.out) / kRejectedCardsFolder);
    if (!w.ok()) return Fail(w.status());
    rejected_written = *w;
  }
  json cards_json = json::array(), rejected_json = json::array();
  for (const auto& p : written) cards_json.push_back(p.string());
  for (const auto& p : rejected_written) rejected_json.push_back(p.string());
  json admission_json = nullptr;
  if (held_out) {
    json list = json::array();
    for (const auto& ad : admissions)
      list.push_back({{"card", ad.card_id}, {"admitted", ad.admitted}, {"stage", ad.stage}, {"reason", ad.reason},
                      {"speedup", ad.comparison.speedup}, {"ci", {ad.comparison.ci.lo, ad.comparison.ci.hi}},
                      {"path", ((ad.admitted ? fs::path(a.out) : fs::path(a.out) / kRejectedCardsFolder) / ad.card_id / "SKILL.md").string()}});
    admission_json = {{"task", held_out->name}, {"start", admit_start_name}, {"cards", list}};
  }
  (void)store->AddRunEvent(res->run_id, "cards",
                           json{{"out", a.out}, {"cards", cards_json}, {"rejected", rejected_json}, {"admission", admission_json}}.dump());

  if (a.json) {
    json steps = json::array();
    for (const auto& s : res->steps) steps.push_back(StepJson(s));
    json rejected = json::array();
    for (const auto& at : res->attempts)
      if (!at.accepted && at.stage != "naive") rejected.push_back({{"attempt", at.attempt}, {"step", at.step}, {"stage", at.stage}, {"reason", at.reason}});
    json j = {{"run", res->run_id},
              {"task", task->name},
              {"expert", lo.expert_name},
              {"expert_speedup", res->expert.speedup},
              {"stop_reason", res->stop_reason},
              {"stop_detail", res->stop_detail},
              {"attempts", res->attempts.size()},
              {"steps", steps},
              {"rejected", rejected},
              {"expert_features", res->expert_features},
              {"naive_features", res->naive_features},
              {"cards", cards_json},
              {"rejected_cards", rejected_json},
              {"admission", admission_json},
              {"card_problems", problems},
              {"out", a.out},
              {"generator", {{"input_tokens", res->spent.input_tokens}, {"output_tokens", res->spent.output_tokens},
                             {"cost_usd", res->spent.cost_usd}, {"priced", res->spent.priced}}}};
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << fmt::format("lineage run {} of {} on {}: {} step(s) accepted in {} attempt(s); stopped: {} ({})\n", res->run_id,
                             lo.expert_name, task->name, res->steps.size(), res->attempts.size(), res->stop_reason,
                             res->stop_detail);
    for (const auto& s : res->steps)
      std::cout << fmt::format("  step {}: {} ({:.3f}× [{:.3f}, {:.3f}]) at {}\n", s.index, s.proposal.feature, s.effect,
                               s.effect_ci.lo, s.effect_ci.hi, s.proposal.locus);
    for (const auto& p : written) std::cout << "  card " << p.string() << "\n";
    for (size_t i = 0; i < admissions.size(); ++i)
      std::cout << fmt::format("  {} {} on {}: {}\n", admissions[i].admitted ? "admitted" : "rejected", admissions[i].card_id,
                               held_out->name, admissions[i].reason);
    for (const auto& p : rejected_written) std::cout << "  rejected card " << p.string() << "\n";
  }
  return written.empty() ? kExitNotPassed : kExitOk;
}

}  // namespace

void AddLineageCommand(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<LineageArgs>();
  auto* cmd = app.add_subcommand("lineage", "Mine skill cards from an expert kernel by walking it back to the naive form");
  cmd->add_option("task_dir", a->task_dir, "Task folder (holding task.toml)")->required();
  cmd->add_option("expert", a->expert, "The expert kernel (it must pass the harness)")->required();
  cmd->add_option("--generator", a->generator, "llm:PROVIDER:MODEL[@BASE_URL] | command:CMDLINE (docs/generators.md)")->required();
  cmd->add_option("--out", a->out, "Skills folder the cards are written to (<id>/SKILL.md)")->capture_default_str();
  cmd->add_option("--max-steps", a->max_steps, "Stop after this many accepted steps")->capture_default_str();
  cmd->add_option("--max-rejections", a->max_rejections, "Stop after this many rejected attempts in a row")->capture_default_str();
  cmd->add_option("--trials", a->trials, "Round-trip trials (paired evaluations) per step")->capture_default_str();
  cmd->add_option("--round-trip-min", a->round_trip_min,
                  "The rebuilt kernel must reach this share of the pre-removal speed in every trial")
      ->capture_default_str();
  cmd->add_flag("--json", a->json, "Print a JSON summary on stdout");
  cmd->add_option("--store", a->store_dir, "Store folder")->capture_default_str();
  cmd->add_option("--llm-config", a->llm_config, "TOML config of the generator (default: ~/.config/kpilot/llm.toml when present)");
  cmd->add_option("--max-cost", a->max_cost, "Spending cap in US dollars (llm:; default: the config's max_cost_usd)");
  cmd->add_option("--workload", a->workloads, "Only these workloads (repeatable)");
  cmd->add_option("--vocabulary", a->vocabulary, "A skills README with the '## Feature vocabulary' table (default: skills/README.md)");
  cmd->add_option("--arch", a->arch, "CUDA target, e.g. sm_90a (default: the GPU's)");
  cmd->add_option("--timeout", a->timeout_s, "Wall-clock limit of each evaluation in seconds")->capture_default_str();
  cmd->add_option("--device", a->device, "CUDA device index")->capture_default_str();
  cmd->add_option("--admit-on", a->admit_on,
                  "Held-out task folder: each mined card is applied to its start by the generator and admitted only when "
                  "the result is correct and faster (paired CI above 1); the others go to OUT/rejected/");
  cmd->add_option("--admit-from", a->admit_from, "The held-out task's start kernel (default: its reference)");
  cmd->add_option("--admit-workload", a->admit_workloads, "Only these workloads of the held-out task (repeatable)");
  cmd->callback([a, exit_code]() { *exit_code = RunLineage(*a); });
}

}  // namespace kpilot::cli
