// kpilot optimize TASK: the closed loop, LLM-free by default. TASK is a task folder, a KernelBench
// problem .py or a flashinfer definition .json (docs/pytorch.md).
#include <unistd.h>

#include <cmath>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/cli.h"
#include "core/fs.h"
#include "device/device.h"
#include "optimize/optimizer.h"
#include "report/report.h"
#include "slurm/slurm.h"
#include "generate/generator.h"
#include "session/session.h"
#include "task/loader.h"

namespace kpilot::cli {
namespace {

struct OptimizeArgs {
  std::string task_dir;
  std::string from;
  std::string generator = "params";
  std::string policy = "mcts";
  int budget = 24;
  std::string time;
  int plateau = 0;
  double target = 0;
  std::string objective = "time";
  int drafts = 2;
  int in_flight = 0;  // 0: adaptive
  uint64_t seed = 1;
  std::vector<std::string> workloads;
  std::vector<std::string> skills;  // --skills: "on", "off" or a folder of cards (repeatable)
  std::string arch;
  std::string store_dir = ".kpilot";
  int64_t resume = 0;
  std::string out_dir;
  std::string space_file;
  std::string calibration;
  bool json = false;
  bool report = false;             // --report: the run as one HTML page at the end
  std::string executor = "local";  // local | slurm
  std::string slurm_config;
  std::string compile_on = "local";  // --compile-on local|slurm
  std::string llm_config;
  double max_cost = -1;             // < 0: the LLM config's max_cost_usd (llm:), none otherwise
  int64_t max_tokens = -1;          // < 0: none given (a resumed run keeps its own)
  std::vector<std::string> search;  // --search NAME=VALUE: the tree's constants
  double energy_weight = 0.5;
  bool raw_metrics = false;
  TaskSourceArgs source;           // --python, --workloads FILE.jsonl
  std::string feedback = "tools";  // ablations (docs/bench.md)
  std::string guidance = "proactive";
  std::vector<std::string> tools_dirs;  // --tools DIR: rule-file tools (repeatable)
  std::string memory = "on";
  std::string footprints = "on";
  std::string anticipate = "on";
  std::string counters = "on";
  std::string devices = "all";     // GPUs to evaluate on: all (of the first one's model) or indices
  std::string runner = "served";   // served | per-eval (how, not what: not part of the run)
  std::vector<std::string> given;  // the options given that define a run (refused with --resume)
};

class PrintProgress : public ProgressSink {
 public:
  explicit PrintProgress(bool json) : json_(json) {}
  void Event(const nlohmann::json& e) override {
    if (json_) {
      // The final's whole evaluation is in the result on stdout; its progress line marks its end.
      nlohmann::json line = e;
      if (e.value("event", "") == "final") line.erase("evaluation");
      std::cerr << line.dump() << "\n";
      return;
    }
    std::string kind = e.value("event", "");
    if (kind == "evaluated") {
      std::string verdict = e.value("verdict", "");
      std::string result = verdict == "passed" ? fmt::format("{:.3f}×", e.value("speedup", 0.0)) : verdict;
      // What was being worked on: the parent's class and the finding the draft aimed at; for a
      // draft that aimed at none, the new node's own class and top finding.
      std::string why;
      if (!e.value("targeted", "").empty()) {
        why = e.value("parent_bottleneck", "");
        why += (why.empty() ? "aimed at " : ": aimed at ") + e.value("targeted", "");
      } else {
        why = e.value("bottleneck", "");
        if (!e.value("finding", "").empty()) why += (why.empty() ? "" : ", ") + e.value("finding", "");
      }
      double incumbent = e.value("best", 0.0);
      std::cerr << fmt::format("[{}/{}] node {} ← {}: {} → {}{}{}\n", e.value("evaluations", 0), e.value("budget", 0),
                               e.value("node", 0), e.value("parent", -1), e.value("params", ""), result,
                               incumbent > 0 ? fmt::format("  (incumbent {:.3f}×)", incumbent) : "",
                               why.empty() ? "" : "  [" + why + "]");
    } else if (kind == "promote") {
      std::cerr << fmt::format("        promoted node {} ({})\n", e.value("node", 0),
                               e.contains("ci") ? fmt::format("paired {:.3f}× over the incumbent, CI [{:.3f}, {:.3f}]",
                                                              e.value("paired_speedup", 0.0), e["ci"][0].get<double>(),
                                                              e["ci"][1].get<double>())
                                                : e.value("reason", ""));
    } else if (kind == "reject" && e.contains("reason")) {
      std::cerr << fmt::format("        kept the incumbent: the paired check of node {} failed: {}\n",
                               e.value("node", 0), e.value("reason", ""));
    } else if (kind == "reject") {
      std::cerr << fmt::format(
          "        kept the incumbent: node {} is {:.3f}× over it, CI [{:.3f}, {:.3f}] not above 1\n",
          e.value("node", 0), e.value("paired_speedup", 0.0), e["ci"][0].get<double>(), e["ci"][1].get<double>());
    } else if (kind == "duplicate") {
      std::cerr << "        skipped a draft whose binary was evaluated already\n";
    } else if (kind == "cancelled") {
      std::cerr << fmt::format("        dropped draft {}: the time limit passed before it reached a GPU\n",
                               e.value("proposal", 0));
    } else if (kind == "stop") {
      std::cerr << "stopped: " << e.value("reason", "") << " after " << e.value("evaluations", 0)
                << " evaluations; re-evaluating the best …\n";
    } else if (kind == "generator_failure") {
      std::cerr << "        the generator made no candidate: " << e.value("reason", "").substr(0, 300) << "\n";
    } else if (kind == "close" && e.value("reason", "").rfind("the generator failed", 0) == 0) {
      std::cerr << fmt::format("        closed node {}: {}\n", e.value("node", 0), e.value("reason", ""));
    } else if (kind == "pipeline") {
      const int gpus = std::max(1, e.value("devices", 1));
      std::cerr << fmt::format(
          "        the evaluation queue{} busy {:.0f}% of the last batch: {} expansions in flight now\n",
          gpus > 1 ? fmt::format("s ({} GPUs) were", gpus) : " was",
          100 * e.value("busy_s", 0.0) / std::max(1e-9, e.value("elapsed_s", 1.0) * gpus), e.value("depth", 0));
    } else if (kind == "counters") {
      std::cerr << "        counter profile, " << CountersGist(e) << "\n";
    } else if (kind == "energy_choice") {
      const double fastest = e.value("fastest_joules", 0.0), chosen = e.value("chosen_joules", 0.0);
      std::cerr << fmt::format(
          "energy: node {} ({:.3f}×) uses {:.1f}% fewer joules a call than the fastest, node {} "
          "({:.3f}×), whose time CI it lies within: it is the best\n",
          e.value("chosen", 0), e.value("chosen_speedup", 0.0), fastest > 0 ? 100 * (1 - chosen / fastest) : 0.0,
          e.value("fastest", 0), e.value("fastest_speedup", 0.0));
    } else if (kind == "warning") {
      std::cerr << "kpilot: warning: " << e.value("message", "") << "\n";
    } else if (kind == "resume") {
      std::cerr << "resuming with " << e.value("nodes", 0) << " recorded nodes\n";
    }
  }

 private:
  bool json_;
};

int RunOptimize(const OptimizeArgs& a) {
  if (a.resume > 0 && !a.given.empty())
    return Fail(Status::InvalidInput(fmt::format(
        "--resume {0} continues run {0} with the options it was started with, so {1} cannot be given with it "
        "(kpilot show {0} --json lists them under options); leave {2} out, or start a new run from its best "
        "(kpilot export {0} DIR, then kpilot optimize TASK --from DIR/SOURCE)",
        a.resume, fmt::join(a.given, ", "), a.given.size() > 1 ? "them" : "it")));
  auto store = Store::Open(a.store_dir);
  if (!store.ok()) return Fail(store.status());
  OptimizeOptions o;
  Task task;
  if (a.resume > 0) {
    auto run = (*store)->GetRun(a.resume);
    if (!run.ok()) return Fail(run.status());
    if (!run->has_value()) return Fail(Status::NotFound(fmt::format("run {} is not in {}", a.resume, a.store_dir)));
    auto stored = OptimizeOptionsFromJson(nlohmann::json::parse((*run)->config_json, nullptr, false));
    if (!stored.ok()) return Fail(stored.status());
    o = *stored;
  } else {
    if (a.task_dir.empty()) return Fail(Status::InvalidInput("kpilot optimize needs TASK (or --resume RUN_ID)"));
    o.task_dir = std::filesystem::absolute(a.task_dir).string();
  }
  auto loaded = LoadTaskArg(o.task_dir, a.source);
  if (!loaded.ok()) return Fail(loaded.status());
  task = *loaded;
  if (a.resume == 0) {
    auto from = StartingCandidate(task, a.from);
    if (!from.ok()) return Fail(from.status());
    o.from = std::filesystem::absolute(*from).string();
  }
  // A task without [params] (KernelBench problems, flashinfer definitions) tunes what the starting
  // candidate declares in its kpilot-params block (docs/task-format.md).
  if (Status s = AdoptCandidateParams(&task, o.from); !s.ok()) return Fail(s);
  if (a.resume == 0) {
    o.generator = a.generator;
    auto policy = ParsePolicy(a.policy);
    if (!policy) return Fail(Status::InvalidInput("--policy " + a.policy + ": use mcts, greedy, beam or random"));
    o.search.policy = *policy;
    FitSearchToGenerator(&o);
    for (const auto& kv : a.search) {  // after the generator's defaults: what is given wins
      const size_t eq = kv.find('=');
      std::string error = eq == std::string::npos ? "expected NAME=VALUE, e.g. widen_alpha=0.5"
                                                  : SetSearchConstant(kv.substr(0, eq), kv.substr(eq + 1), &o.search);
      if (!error.empty()) return Fail(Status::InvalidInput("--search " + kv + ": " + error));
    }
    o.budget = a.budget;
    auto t = ParseDuration(a.time, "--time");
    if (!t.ok()) return Fail(t.status());
    o.time_limit_s = *t;
    o.plateau = a.plateau;
    o.target_fraction = a.target;
    o.objective = *ParseObjective(a.objective);  // checked by the flag's IsMember
    o.energy_weight = a.energy_weight;
    o.drafts_per_expansion = a.drafts;
    o.pipeline_depth = a.in_flight;
    o.seed = a.seed;
    o.workloads = a.workloads;
    o.arch = a.arch;
    if (!a.space_file.empty()) o.space_file = std::filesystem::absolute(a.space_file).string();
    if (!a.calibration.empty()) {
      if (a.space_file.empty())
        return Fail(Status::InvalidInput("--calibration " + a.calibration +
                                         " only goes with --space (a live run measures the GPU it runs on)"));
      o.space_calibration = std::filesystem::absolute(a.calibration).string();
    }
    if (!a.llm_config.empty()) o.llm_config = std::filesystem::absolute(a.llm_config).string();
    o.raw_metrics = a.raw_metrics;
    Status ablations = ApplyAblationFlags(a.feedback, a.guidance, a.memory, &o);
    for (const auto& d : a.tools_dirs) o.tool_dirs.push_back(std::filesystem::absolute(d).string());
    if (!ablations.ok()) return Fail(ablations);
    o.footprints = a.footprints == "on";
    o.anticipate = a.anticipate == "on";
    o.counters = a.counters == "on";
    for (const auto& v : a.skills) {
      if (v == "on" || v == "off")
        o.skills = v == "on";
      else if (std::filesystem::is_directory(v))
        o.skill_dirs.push_back(std::filesystem::absolute(v).string());
      else
        return Fail(Status::InvalidInput("--skills " + v +
                                         ": not a folder of skill cards — give a folder holding "
                                         "<id>/SKILL.md, or on / off"));
    }
  }
  // The spending cap: --max-cost, else (llm:) the LLM config's; a resumed run keeps its own
  // unless --max-cost raises it.
  if (a.max_cost >= 0) o.max_cost_usd = a.max_cost;
  if (a.max_tokens >= 0) o.max_tokens = a.max_tokens;
  // A space run's clock is simulated, and --time counts real seconds.
  if (!o.space_file.empty() && o.time_limit_s > 0)
    return Fail(Status::InvalidInput("--time cannot limit a space run (its clock is simulated); use --budget"));
  // --executor slurm: every evaluation on the cluster (docs/slurm.md); compiles stay here.
  std::optional<slurm::SlurmConfig> cluster;
  if (a.executor == "slurm") {
    if (a.slurm_config.empty())
      return Fail(Status::InvalidInput("--executor slurm needs --slurm-config FILE (docs/slurm.md)"));
    if (!o.space_file.empty()) return Fail(Status::InvalidInput("--executor slurm and --space exclude each other"));
    if (task.backend == Backend::kCuda && o.arch.empty())
      return Fail(
          Status::InvalidInput("--executor slurm compiles here for the nodes' GPUs: name them with --arch, "
                               "e.g. --arch sm_90a"));
    auto config = slurm::LoadSlurmConfig(a.slurm_config);
    if (!config.ok()) return Fail(config.status());
    cluster = *config;
  }
  if (NeedsGpu(task) && o.space_file.empty() && !cluster) {
    std::string why;
    auto gpus = SystemGpuProbe().List(&why);
    if (gpus.empty())
      return Fail(Status::Unavailable("task " + task.name + " needs a GPU (" + why +
                                      "); run kpilot optimize on a "
                                      "machine with an NVIDIA GPU"));
    // One exclusive evaluation queue per GPU the run uses (also on resume: the machine decides).
    auto chosen = ChooseDevices(gpus, a.devices);
    if (!chosen.ok()) return Fail(chosen.status());
    if (task.reference.kind == ReferenceKind::kPython && chosen->size() > 1) {
      // The torch worker is one process on one device.
      std::cerr << "kpilot: a PyTorch-defined task evaluates through one torch worker: GPU " << chosen->front()
                << " only\n";
      chosen->resize(1);
    }
    o.devices = *chosen;
    o.device = chosen->front();
    if (o.arch.empty())
      for (const auto& g : gpus)
        if (g.index == o.device) o.arch = g.Arch();
  }
  bool llm = o.generator.rfind("llm:", 0) == 0;
  if (llm && a.resume == 0 && a.max_cost < 0) {
    auto config = LoadGeneratorConfig(o.llm_config);
    if (!config.ok()) return Fail(config.status());
    o.max_cost_usd = config->max_cost_usd;
  }
  SessionSettings settings;
  settings.layout = Layout();
  settings.python = a.source.python;
  settings.reuse = a.runner == "served" ? RunnerReuse::kCuda : RunnerReuse::kNone;
  settings.notices = &std::cerr;
  if (cluster) {
    settings.channel_queues = cluster->workers;
    settings.channels = slurm::ClusterChannels(
        *cluster, Layout().runner, "kpilot-" + task.name, &std::cerr,
        task.reference.kind == ReferenceKind::kPython ? ClusterPythonWorkers(a.source.python) : nullptr);
  }
  auto compiler = StartCompileOn(a.compile_on, a.slurm_config, "kpilot-compile-" + task.name, a.json);
  if (!compiler.ok()) return Fail(compiler.status());
  if (*compiler) {
    settings.compile_processes = compiler->get();
    settings.compile_threads = (*compiler)->cpus();
  }
  auto session = OptimizeSession::Open(task, o, **store, settings);
  if (!session.ok()) return Fail(session.status());
  PrintProgress progress(a.json);
  Optimizer optimizer = (*session)->MakeOptimizer(progress);
  if (!a.json)
    std::cerr << fmt::format("kpilot: optimizing {} from {} with the {} generator, {} policy, budget {} evaluations\n",
                             task.name, std::filesystem::path(o.from).filename().string(), o.generator,
                             PolicyName(o.search.policy), o.budget)
              << (o.space_file.empty()
                      ? ""
                      : "kpilot: serving evaluations from " + o.space_file + " (nothing is compiled or run)\n")
              << (o.devices.size() > 1
                      ? fmt::format("kpilot: evaluating on GPUs {}, one queue each\n", fmt::join(o.devices, ","))
                      : "");
  Optimizer::ResumeOverrides overrides;
  if (a.max_cost >= 0) overrides.max_cost_usd = a.max_cost;
  if (a.max_tokens >= 0) overrides.max_tokens = a.max_tokens;
  if (!o.devices.empty()) overrides.devices = o.devices;
  auto res = a.resume > 0 ? optimizer.Resume(a.resume, overrides) : optimizer.Run(o);
  if (!res.ok()) return Fail(res.status());

  std::string out_dir =
      !a.out_dir.empty() ? a.out_dir : ((*store)->dir() / "runs" / std::to_string(res->run_id) / "best").string();
  Status ex = ExportRun(**store, res->run_id, out_dir);
  if (!ex.ok()) return Fail(ex);
  // --report: the run as one HTML page (kpilot report RUN_ID writes the same).
  std::string report_page;
  if (a.report) {
    auto w = report::WriteReport(**store, res->run_id, (*store)->dir() / "reports");
    if (!w.ok()) return Fail(w.status());
    report_page = w->page.string();
  }
  const Evaluation& f = res->final;
  if (a.json) {
    nlohmann::json j = {{"run", res->run_id},
                        {"stop_reason", StopReasonName(res->stop_reason)},
                        {"evaluations", res->evaluations},
                        {"promotion_checks", res->promotion_checks},
                        {"duplicates", res->duplicates},
                        {"cancelled", res->cancelled},
                        {"best_node", res->best_node},
                        {"best_params", res->best_params},
                        {"exported_to", out_dir},
                        {"report", report_page},
                        {"busy_share", res->busy_share},
                        {"checks_timing_share", res->checks_timing_share},
                        {"pipeline_depth", res->pipeline_depth},
                        {"devices", o.devices},
                        {"counter_profiles", res->counter_profiles},
                        {"counters_s", res->counters_s},
                        {"anticipated", res->anticipated},
                        {"final", ToJson(f)},
                        {"generator",
                         {{"name", o.generator},
                          {"requests", res->spend.requests},
                          {"input_tokens", res->spend.input_tokens},
                          {"output_tokens", res->spend.output_tokens},
                          {"cost_usd", res->spend.cost_usd},
                          {"priced", res->spend.priced},
                          {"max_cost_usd", o.max_cost_usd},
                          {"max_tokens", o.max_tokens}}},
                        {"objective", ObjectiveName(o.objective)}};
    std::cout << j.dump(2) << "\n";
  } else {
    std::string params;
    for (const auto& [k, v] : res->best_params) params += fmt::format(" {}={}", k, v);
    std::cout << fmt::format(
        "run        {} ({}, {} evaluations, {} promotion checks, {} duplicates skipped{})\n", res->run_id,
        StopReasonName(res->stop_reason), res->evaluations, res->promotion_checks, res->duplicates,
        res->cancelled > 0 ? fmt::format(", {} drafts dropped at the time limit", res->cancelled) : std::string());
    std::cout << fmt::format("best       node {}: {}{}\n", res->best_node, res->best_source_name,
                             params.empty() ? " (defaults)" : params);
    std::cout << fmt::format("verdict    {} — {}\n", VerdictName(f.verdict.kind), f.verdict.summary);
    for (const auto& t : f.timings)
      std::cout << fmt::format("{:<10} {:.4f} ms vs {} {:.4f} ms: {:.3f}× [{:.3f}, {:.3f}]\n", t.workload,
                               t.candidate.median, f.baseline, t.baseline.median, t.speedup.ratio, t.speedup.ci.lo,
                               t.speedup.ci.hi);
    std::cout << fmt::format("speedup    {:.3f}× over {} (geomean, CI [{:.3f}, {:.3f}])\n", f.speedup_geomean,
                             f.baseline, f.speedup_geomean_ci.lo, f.speedup_geomean_ci.hi);
    if (o.objective != Objective::kTime) {
      const double ratio = JoulesRatio(f);
      std::cout << (ratio > 0
                        ? fmt::format("energy     {:.3f}× fewer joules per call than {} (geomean; --objective {})\n",
                                      ratio, f.baseline, ObjectiveName(o.objective))
                        : fmt::format("energy     not measured (NVML energy unavailable); --objective {} chose by "
                                      "time\n",
                                      ObjectiveName(o.objective)));
    }
    std::cout << fmt::format(
        "pipeline   evaluation queue{} busy {:.0f}% of the run{} ({} expansions in flight at the end)\n",
        res->devices > 1 ? fmt::format("s of {} GPUs", res->devices) : "", 100 * res->busy_share,
        res->checks_timing_share > 0 ? fmt::format(", checks and timing proper {:.0f}%", 100 * res->checks_timing_share)
                                     : "",
        res->pipeline_depth);
    if (res->anticipated > 0)
      std::cout << fmt::format("compiles   {} configs compiled ahead on idle cores, as the generator anticipated\n",
                               res->anticipated);
    if (res->counter_profiles > 0)
      std::cout << fmt::format("counters   {} new bests profiled with counters ({:.1f} s of GPU time)\n",
                               res->counter_profiles, res->counters_s);
    if (res->spend.requests > 0)
      std::cout << fmt::format("generator  {} requests, {} input + {} output tokens, US${:.4f}{}\n",
                               res->spend.requests, res->spend.input_tokens, res->spend.output_tokens,
                               res->spend.cost_usd,
                               res->spend.priced ? "" : " (some model had no configured price: counted as 0)");
    std::cout << "written    " << out_dir << " (source, params.json, report.json)\n";
    if (!report_page.empty()) std::cout << "report     " << report_page << "\n";
  }
  return f.verdict.passed() ? kExitOk : kExitNotPassed;
}

}  // namespace

void AddOptimizeCommand(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<OptimizeArgs>();
  auto* cmd = app.add_subcommand("optimize", "Search for a faster candidate (MCTS over kernel versions)");
  cmd->add_option("task", a->task_dir,
                  "Task folder, KernelBench problem .py or flashinfer-bench definition .json (for a file, the default "
                  "--from is the first .cu in <its folder>/candidates/<its stem>/)");
  AddTaskSourceOptions(cmd, &a->source);
  cmd->add_option("--from", a->from,
                  "Starting candidate (default: the task's first candidates/ file). A task without [params] tunes the "
                  "params the candidate declares in a /* kpilot-params */ block");
  cmd->add_option(
         "--generator", a->generator,
         "params | folder:DIR | llm:PROVIDER:MODEL[@BASE_URL] (PROVIDER openai, anthropic or openai-compatible, "
         "e.g. llm:openai-compatible:qwen2.5-coder:7b@http://127.0.0.1:11434/v1) | command:CMDLINE (an agent CLI "
         "run in a prepared workspace with YOUR permissions, e.g. 'command:codex exec --full-auto -'); "
         "see docs/generators.md")
      ->capture_default_str();
  cmd->add_option("--llm-config", a->llm_config,
                  "TOML config of the llm:/command: generators (default: ~/.config/kpilot/llm.toml when present)");
  cmd->add_option("--max-cost", a->max_cost,
                  "Stop the run once the generator has spent this many US dollars (0 = no cap; default: max_cost_usd "
                  "of the LLM config, 2.00)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-tokens", a->max_tokens,
                  "Stop the run once the generator has used this many tokens, input and output together (0 = no cap, "
                  "the default); with --resume, a new cap")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--raw-metrics", a->raw_metrics,
                "llm:/command: also see raw numbers (registers, times, finding evidence), not only the guidance");
  cmd->add_option("--feedback", a->feedback,
                  "Ablation: what the generator sees of the profile — none, raw (measured numbers only) or tools "
                  "(findings with guidance); docs/bench.md")
      ->check(CLI::IsMember({"none", "raw", "tools"}))
      ->capture_default_str();
  cmd->add_option(
         "--guidance", a->guidance,
         "Ablation: proactive (guidance in every prompt) or on-request (llm: gets it only by calling get_profile)")
      ->check(CLI::IsMember({"proactive", "on-request"}))
      ->capture_default_str();
  cmd->add_option("--memory", a->memory, "Ablation: on | off — the search-memory summary given to the generator")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  cmd->add_option("--footprints", a->footprints,
                  "Ablation: on | off — the params generator compiles its best-ranked configs first and ranks them "
                  "again with their registers, spills and shared memory (cuda; docs/search.md)")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  cmd->add_option("--anticipate", a->anticipate,
                  "Ablation: on | off — compile ahead, on idle cores, the configs the generator anticipates for "
                  "good nodes (with --footprints on; docs/search.md)")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  cmd->add_option("--counters", a->counters,
                  "on | off — profile each new best's kernels, when the search first expands it and the final best's, "
                  "with the counters its class's tools need (CUPTI, else ncu), and steer its next drafts by "
                  "those findings (live cuda runs; docs/search.md)")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  cmd->add_option("--devices", a->devices,
                  "GPUs to evaluate on, one exclusive queue each: all (every GPU of the first one's model) or "
                  "indices such as 0,1")
      ->capture_default_str();
  cmd->add_option("--runner", a->runner,
                  "served | per-eval — cuda evaluations go to one kpilot-runner per GPU kept across them (its CUDA "
                  "context made once), or each starts a runner of its own (docs/search.md)")
      ->check(CLI::IsMember({"served", "per-eval"}))
      ->capture_default_str();
  cmd->add_option("--policy", a->policy, "mcts | greedy | beam | random")->capture_default_str();
  cmd->add_option(
      "--search", a->search,
      "NAME=VALUE: one of the tree's constants (repeatable): exploration, max_weight, widen_c, widen_alpha, "
      "asymmetry, failure_reward, prune_window, regress_margin, beam_width (defaults and why: "
      "docs/search.md, Constants)");
  cmd->add_option("--budget", a->budget, "Candidate evaluations, the starting one included")->capture_default_str();
  cmd->add_option("--time", a->time, "Wall-clock limit, e.g. 30m");
  cmd->add_option("--plateau", a->plateau, "Stop after this many evaluations without a promotion (0 = off)");
  cmd->add_option("--target", a->target, "Stop at this fraction of the roofline ceiling (0 = off)");
  cmd->add_option("--objective", a->objective,
                  "time | energy (the fewest joules among candidates within the fastest's time CI) | mix (speedup "
                  "weighed with the energy saving by --energy-weight); energy and mix need NVML on a cuda task")
      ->check(CLI::IsMember({"time", "energy", "mix"}))
      ->capture_default_str();
  cmd->add_option("--energy-weight", a->energy_weight,
                  "--objective mix: score = log(speedup) + W · log(baseline joules / candidate joules), W in (0, 10]")
      ->capture_default_str();
  cmd->add_option("--drafts", a->drafts, "Drafts per expansion (compiled in parallel)")->capture_default_str();
  cmd->add_option("--in-flight", a->in_flight,
                  "Expansions in flight: the next batches compile while the GPU evaluates (more keeps the GPU busier, "
                  "the tree further behind its results). 0 (default): adaptive, from 3 up to 4 while the GPU is "
                  "measured idle; space runs stay at 2")
      ->check(CLI::Range(0, 16))
      ->capture_default_str();
  cmd->add_option("--seed", a->seed, "Random seed")->capture_default_str();
  cmd->add_option("--workload", a->workloads, "Only these workloads (repeatable)");
  cmd->add_option("--skills", a->skills,
                  "Skill cards: a folder of <id>/SKILL.md cards to add (repeatable), or off to offer none (ablation); "
                  "on by default, with the built-in and user cards");
  cmd->add_option("--tools", a->tools_dirs,
                  "Folder of rule files (*.toml) with more profiling tools, whose ids skill cards may name as "
                  "triggers (repeatable; the task's folder and ~/.config/kpilot/tools are read too)");
  cmd->add_option("--arch", a->arch, "CUDA target (default: the visible GPU's)");
  cmd->add_option("--store", a->store_dir, "Store folder")->capture_default_str();
  cmd->add_option("--resume", a->resume, "Continue an interrupted run");
  cmd->add_option("--out", a->out_dir, "Where to write the best candidate (default: STORE/runs/ID/best)");
  cmd->add_option("--space", a->space_file, "Serve evaluations from a kpilot sweep space file instead of running them");
  cmd->add_option("--calibration", a->calibration,
                  "With --space: the GPU's ceilings (kpilot calibrate --json output) for the roofline class, "
                  "when the space file records none");
  cmd->add_flag("--json", a->json, "JSON result on stdout, progress as JSON lines on stderr");
  cmd->add_option("--executor", a->executor, "local | slurm: where evaluations run (docs/slurm.md)")
      ->check(CLI::IsMember({"local", "slurm"}))
      ->capture_default_str();
  cmd->add_option("--slurm-config", a->slurm_config, "The [slurm] config file for --executor slurm");
  AddCompileOnFlag(cmd, &a->compile_on);
  cmd->add_flag("--report", a->report, "At the end, write the run as one HTML page (STORE/reports/run-ID.html)");
  cmd->callback([a, cmd, exit_code]() {
    // Everything but --resume, --store, --out, --json, --max-cost, --max-tokens, --devices, --runner and the
    // task-source options (--python, --workloads FILE) defines the run.
    for (const char* name :
         {"task",       "--from",      "--generator", "--llm-config", "--raw-metrics", "--feedback",
          "--guidance", "--tools",     "--memory",    "--footprints", "--anticipate",  "--counters",
          "--policy",   "--search",    "--budget",    "--time",       "--plateau",     "--energy-weight",
          "--target",   "--objective", "--drafts",    "--in-flight",  "--seed",        "--workload",
          "--skills",   "--arch",      "--space",     "--calibration"})
      if (cmd->count(name) > 0) a->given.push_back(name == std::string("task") ? "TASK" : name);
    *exit_code = RunOptimize(*a);
  });
}

}  // namespace kpilot::cli
