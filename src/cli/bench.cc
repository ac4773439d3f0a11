// kpilot bench SUITE: every problem of a suite optimized (or evaluated with --eval-only), timed
// against eager and torch.compile, recorded as it finishes, reported per level (docs/bench.md).
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "bench/bench.h"
#include "session/bench_runner.h"
#include "cli/cli.h"
#include "slurm/slurm.h"
#include "core/text.h"
#include "device/device.h"
#include "optimize/optimizer.h"
#include "generate/generator.h"
#include "pytorch/pytorch.h"
#include "task/loader.h"

namespace kpilot::cli {
namespace {

using nlohmann::json;

struct BenchArgs {
  std::string suite;
  std::string levels;     // "1,2"
  std::string problems;   // glob
  std::string eval_only;  // CANDIDATES_DIR
  bool eval_reference = false;
  bool no_compile_baseline = false;
  int per_gpu = 1;                     // problems in flight on each GPU
  std::string torch_threads = "auto";  // --torch-threads: auto | N (0: torch's default)
  std::string devices;                 // --devices: the GPUs problems run on (empty: every visible one)
  std::string executor = "local";      // local | slurm
  std::string slurm_config;
  std::string compile_on = "local";  // --compile-on local|slurm
  std::string generator = "params";
  std::string arch;  // --arch: the CUDA target of the GPUs the problems run on
  int budget = 8;
  std::string policy = "mcts";
  std::string feedback = "tools", guidance = "proactive", memory = "on", skills = "on";
  std::string timing = "default";
  double max_seconds = 2.0;  // timing cap per workload per evaluation
  int drafts = 2;
  uint64_t seed = 1;
  std::string llm_config;
  TaskSourceArgs source;  // --python
  std::string store_dir = ".kpilot";
  int64_t resume = 0;
  std::string out;
  bool json = false;
  std::string markdown;
};

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

class PrintBenchProgress : public BenchProgress {
 public:
  explicit PrintBenchProgress(bool as_json) : json_(as_json) {}
  void Started(const BenchProblem& p, int device) override {
    if (json_)
      std::cerr << json{{"event", "problem_start"}, {"problem", p.id}, {"device", device}}.dump() << "\n";
    else
      std::cerr << fmt::format("kpilot: {} started{}\n", p.id, device >= 0 ? fmt::format(" on GPU {}", device) : "");
  }
  void Finished(const ProblemResult& r, int done, int total) override {
    const double left = SecondsLeft(r.finished_at_s, ++finished_, total - done);
    if (json_) {
      json j = ToJson(r);
      j.erase("traces");
      j["event"] = "problem";
      j["done"] = done;
      j["total"] = total;
      j["seconds_left"] = left;
      std::cerr << j.dump() << "\n";
      return;
    }
    std::string what = !r.error.empty() ? "error: " + Gist(r.error, 200)
                       : !r.correct()
                           ? r.verdict + (r.message.empty() ? "" : ": " + Gist(r.message, 200))
                           : fmt::format("{:.3f}× eager{}", r.speedup_eager,
                                         r.compile_measured ? fmt::format(", {:.3f}× compile", r.speedup_compile) : "");
    std::cerr << fmt::format("[{}/{}] {}: {} ({} evaluations, {:.0f} s; {} elapsed{})\n", done, total, r.id, what,
                             r.evaluations, r.wall_s, FormatSeconds(r.finished_at_s),
                             left > 0 ? ", about " + FormatSeconds(left) + " left" : "");
    for (const auto& f : r.reference_findings)
      std::cerr << "        reference " << ReferenceFlawName(f.flaw) << ": " << f.evidence.substr(0, 300) << "\n";
    for (const auto& w : r.warnings) std::cerr << "        " << w.substr(0, 300) << "\n";
  }

 private:
  bool json_;
  int finished_ = 0;  // problems this slice finished so far (RunBench calls Finished under its lock)
};

// flashinfer suites: each definition's Trace records under OUT/traces/<op_type>/<name>.jsonl.
Status WriteTraces(const std::filesystem::path& out, const std::vector<ProblemResult>& results) {
  for (const auto& r : results) {
    if (r.traces.empty()) continue;
    std::string text;
    for (const auto& t : r.traces) text += t.dump() + "\n";
    KPILOT_RETURN_IF_ERROR(WriteFileAtomic(out / "traces" / (r.id + ".jsonl"), text));
  }
  return Status::Ok();
}

// Where a bench's report goes: OUT/report.json (+ traces/ for flashinfer suites) and, when given,
// a Markdown copy.
struct ReportSink {
  std::string suite;
  SuiteFormat format;
  int64_t id;
  std::filesystem::path out;
  std::string markdown;
};

struct WrittenReport {
  BenchReport report;
  json content;                // report.json
  std::filesystem::path path;  // report.json
};

// Writes the report of `results`; `partial` = {done, total} marks one written while the bench
// still runs.
Result<WrittenReport> WriteReport(const ReportSink& sink, const std::vector<ProblemResult>& results,
                                  std::optional<std::pair<int, int>> partial) {
  BenchReport report = Summarize(sink.suite, sink.format, results, ContestScore);
  if (sink.format == SuiteFormat::kFlashInfer) KPILOT_RETURN_IF_ERROR(WriteTraces(sink.out, results));
  json j = ToJson(report);
  j["bench"] = sink.id;
  if (partial) j["partial"] = {{"done", partial->first}, {"total", partial->second}};
  std::filesystem::path path = sink.out / "report.json";
  KPILOT_RETURN_IF_ERROR(WriteFileAtomic(path, j.dump(2) + "\n"));
  if (!sink.markdown.empty()) {
    std::string md = ReportMarkdown(report);
    if (partial)
      md = fmt::format(
               "> Partial: {} of {} problems finished; the bench is still running or was interrupted "
               "(kpilot bench --resume {}).\n\n",
               partial->first, partial->second, sink.id) +
           md;
    KPILOT_RETURN_IF_ERROR(WriteFileAtomic(sink.markdown, md));
  }
  return WrittenReport{std::move(report), std::move(j), path};
}

// Prints progress and rewrites the report after every finished problem, so a bench that is
// killed (a time limit, a lost machine) leaves the figures of what it finished, marked partial.
// RunBench calls Finished under its lock.
class ReportAsYouGo : public BenchProgress {
 public:
  ReportAsYouGo(ReportSink sink, const std::vector<BenchProblem>& problems, const std::vector<ProblemResult>& prior,
                bool as_json)
      : sink_(std::move(sink)), problems_(problems), print_(as_json) {
    for (const auto& r : prior) results_[r.id] = r;
  }
  void Started(const BenchProblem& p, int device) override { print_.Started(p, device); }
  void Finished(const ProblemResult& r, int done, int total) override {
    print_.Finished(r, done, total);
    results_[r.id] = r;
    if (done >= total) return;          // the final report follows
    std::vector<ProblemResult> so_far;  // in suite order, earlier slices' problems included
    for (const auto& p : problems_)
      if (results_.count(p.id)) so_far.push_back(results_.at(p.id));
    auto wrote = WriteReport(sink_, so_far, std::make_pair(done, total));
    if (!wrote.ok())
      std::cerr << "kpilot: warning: could not write the partial report: " << wrote.status().message() << "\n";
  }

 private:
  ReportSink sink_;
  const std::vector<BenchProblem>& problems_;
  PrintBenchProgress print_;
  std::map<std::string, ProblemResult> results_;
};

// Results in the suite's order (a bench run in slices finishes them out of it).
void InSuiteOrder(const std::vector<BenchProblem>& suite, std::vector<ProblemResult>* results) {
  std::map<std::string, size_t> at;
  for (size_t i = 0; i < suite.size(); ++i) at[suite[i].id] = i;
  std::stable_sort(results->begin(), results->end(), [&](const ProblemResult& a, const ProblemResult& b) {
    auto ia = at.find(a.id), ib = at.find(b.id);
    return (ia == at.end() ? suite.size() : ia->second) < (ib == at.end() ? suite.size() : ib->second);
  });
}

int RunBenchCommand(const BenchArgs& a) {
  auto store = Store::Open(a.store_dir);
  if (!store.ok()) return Fail(store.status());
  json config;
  int64_t id = a.resume;
  std::set<std::string> finished;  // problems a resumed bench has results for
  if (a.resume > 0) {
    auto state = LoadBench(**store, a.resume);
    if (!state.ok()) return Fail(state.status());
    config = state->config;
    for (const auto& r : state->finished) finished.insert(r.id);
    // A bench run in slices (one call per level on a machine lent for minutes): --levels and
    // --problems on --resume choose the next slice; the report covers every finished problem.
    if (!a.levels.empty()) config["levels"] = SplitList(a.levels);
    if (!a.problems.empty()) config["problems"] = a.problems;
  } else {
    if (a.eval_reference && !a.eval_only.empty())
      return Fail(Status::InvalidInput(
          "--eval-reference and --eval-only " + a.eval_only +
          " both say what to evaluate: give --eval-reference (each problem's reference) or --eval-only DIR"));
    if (a.suite.empty()) return Fail(Status::InvalidInput("kpilot bench needs SUITE (or --resume BENCH_ID)"));
    OptimizeOptions o;
    o.generator = a.generator;
    o.arch = a.arch;
    o.budget = a.budget;
    auto policy = ParsePolicy(a.policy);
    if (!policy) return Fail(Status::InvalidInput("--policy " + a.policy + ": use mcts, greedy, beam or random"));
    o.search.policy = *policy;
    FitSearchToGenerator(&o);
    auto timing = ParseTimingMode(a.timing);
    if (!timing) return Fail(Status::InvalidInput("--timing " + a.timing + ": use default, kernelbench or flashinfer"));
    o.timing = *timing;
    o.timing_max_seconds = a.max_seconds;
    o.drafts_per_expansion = a.drafts;
    o.seed = a.seed;
    if (!a.llm_config.empty()) o.llm_config = std::filesystem::absolute(a.llm_config).string();
    if (a.skills == "on" || a.skills == "off")
      o.skills = a.skills == "on";
    else
      return Fail(Status::InvalidInput("--skills " + a.skills + ": use on or off"));
    Status ablations = ApplyAblationFlags(a.feedback, a.guidance, a.memory, &o);
    if (!ablations.ok()) return Fail(ablations);
    if (o.generator.rfind("llm:", 0) == 0) {
      auto llm = LoadGeneratorConfig(o.llm_config);
      if (!llm.ok()) return Fail(llm.status());
      o.max_cost_usd = llm->max_cost_usd;
    }
    config = {{"suite", std::filesystem::absolute(a.suite).string()},
              {"levels", SplitList(a.levels)},
              {"problems", a.problems},
              {"eval_only", a.eval_only.empty() ? "" : std::filesystem::absolute(a.eval_only).string()},
              {"eval_reference", a.eval_reference},
              {"compile_baseline", !a.no_compile_baseline},
              {"python", a.source.python},
              {"optimize", ToJson(o)}};
  }
  auto suite = DiscoverSuite(config.value("suite", ""));
  if (!suite.ok()) return Fail(suite.status());
  auto problems =
      SelectProblems(*suite, config.value("levels", std::vector<std::string>{}), config.value("problems", ""));
  if (!problems.ok()) return Fail(problems.status());
  if (problems->empty())
    return Fail(Status::InvalidInput("--problems " + a.problems + ": no problem of " + suite->name + " matches"));
  if (std::string dir = config.value("eval_only", ""); !dir.empty())
    for (const auto& stray : UnmatchedEvalCandidates(dir, *suite))
      std::cerr << "kpilot: warning: --eval-only " << dir << ": " << stray.string() << " names no problem of "
                << suite->name << " (candidates are matched to problems by stem, e.g. 19_ReLU.py or 19_ReLU/)\n";

  // Where problems run: one at a time on each visible GPU; a suite of host tasks (or PyTorch
  // problems on the cpu torch device, for tests) runs one at a time without one.
  std::string why;
  std::vector<int> devices;
  const std::vector<GpuInfo> gpus = SystemGpuProbe().List(&why);
  for (const auto& g : gpus) devices.push_back(g.index);
  if (!a.devices.empty()) {
    if (a.executor == "slurm")
      return Fail(
          Status::InvalidInput("--devices chooses this machine's GPUs; with --executor slurm the cluster's "
                               "allocations do (the [slurm] workers key)"));
    if (!gpus.empty()) {
      auto chosen = ChooseDevices(gpus, a.devices);
      if (!chosen.ok()) return Fail(chosen.status().WithContext("--devices " + a.devices));
      devices = *chosen;
    }
  }
  // Only problems left to run need a GPU: a finished bench resumed anywhere prints its report.
  bool needs_gpu = false;
  for (const auto& p : *problems) {
    if (finished.count(p.id)) continue;
    if (suite->format != SuiteFormat::kTaskFolders) {
      Task probe;
      probe.backend = Backend::kCuda;
      probe.reference.kind = ReferenceKind::kPython;
      needs_gpu |= NeedsGpu(probe);
    } else {
      auto t = LoadTask(p.path);
      needs_gpu |= !t.ok() || t->backend == Backend::kCuda;
    }
  }
  // --executor slurm: problems in flight on the cluster, one allocation each (docs/slurm.md).
  RunnerChannelFactory channels;
  std::optional<slurm::SlurmConfig> cluster;
  if (a.executor == "slurm") {
    if (a.slurm_config.empty())
      return Fail(Status::InvalidInput("--executor slurm needs --slurm-config FILE (docs/slurm.md)"));
    auto c = slurm::LoadSlurmConfig(a.slurm_config);
    if (!c.ok()) return Fail(c.status());
    cluster = *c;
    // The nodes' GPU, not this machine's (which may have none), is what candidates compile for.
    if (needs_gpu && !config.value("eval_reference", false) &&
        config.value("optimize", nlohmann::json::object()).value("arch", "").empty())
      return Fail(Status::InvalidInput(
          "--executor slurm compiles here for the nodes' GPUs: name them with --arch, e.g. --arch sm_90a"));
    // Python references (KernelBench, flashinfer) run their torch worker in the allocation too.
    channels = slurm::ClusterChannels(*c, Layout().runner, "kpilot-bench", nullptr,
                                      ClusterPythonWorkers(config.value("python", "")));
    needs_gpu = false;  // the nodes have the GPUs
    devices.assign(cluster->workers, -1);
  }
  if (!needs_gpu && !cluster) devices.clear();
  if (needs_gpu && devices.empty())
    return Fail(Status::Unavailable("suite " + suite->name + " needs a GPU (" + why +
                                    "); run kpilot bench on a machine with an NVIDIA GPU"));

  if (id == 0) {
    auto created = CreateBench(**store, *suite, config);
    if (!created.ok()) return Fail(created.status());
    id = *created;
  }
  // --per-gpu N: N problems in flight on each GPU. Their workers take the GPU's lock for building
  // models, checks and timing, so measurements stay one at a time; what comes before (interpreter
  // and torch start, loading the problem, compiling candidates) overlaps.
  std::vector<int> slots;
  for (int k = 0; k < (cluster ? 1 : a.per_gpu); ++k) slots.insert(slots.end(), devices.begin(), devices.end());
  // That overlap shares this host's cores: each problem's torch worker gets its share of them (not
  // stored with the bench; a resume on another host takes that host's). On Slurm each problem has
  // an allocation of its own, so auto leaves torch's default there.
  if (a.torch_threads != "auto")
    config["optimize"]["host_threads"] = std::stoi(a.torch_threads);
  else if (!cluster)
    config["optimize"]["host_threads"] = TorchThreadsPerProblem(std::thread::hardware_concurrency(), slots.size());
  if (!a.json)
    std::cerr << fmt::format(
        "kpilot: bench {} — {} problems of {} ({}), {}, {} — resume with kpilot bench --resume {}\n", id,
        problems->size(), suite->name, SuiteFormatName(suite->format),
        config.value("eval_reference", false) ? std::string("evaluating each problem's reference")
        : config.value("eval_only", "").empty()
            ? fmt::format("{} generator, budget {}", config["optimize"].value("generator", ""),
                          config["optimize"].value("budget", 0))
            : "evaluating " + config.value("eval_only", ""),
        cluster           ? fmt::format("{} problems in flight on Slurm, an allocation each", cluster->workers)
        : devices.empty() ? std::string("one at a time")
        : a.per_gpu == 1  ? fmt::format("{} GPU(s)", devices.size())
                          : fmt::format("{} GPU(s), {} problems in flight on each, {} CPU threads each", devices.size(),
                                        a.per_gpu, config["optimize"].value("host_threads", 0)),
        id);
  auto compiler = StartCompileOn(a.compile_on, a.slurm_config, "kpilot-bench-compile", a.json);
  if (!compiler.ok()) return Fail(compiler.status());
  auto runner = MakeBenchProblemRunner(**store, config, Layout(), &std::cerr, channels, compiler->get(),
                                       *compiler ? (*compiler)->cpus() : 0);
  std::filesystem::path out =
      !a.out.empty() ? std::filesystem::path(a.out) : (*store)->dir() / "bench" / std::to_string(id);
  auto prior = LoadBench(**store, id);
  if (!prior.ok()) return Fail(prior.status());
  const ReportSink sink{suite->name, suite->format, id, out, a.markdown};
  ReportAsYouGo progress(sink, suite->problems, prior->finished, a.json);
  auto results = RunBench(**store, id, *problems, *runner, slots, progress, SystemClock());
  if (!results.ok()) return Fail(results.status());
  InSuiteOrder(suite->problems, &*results);
  auto report = WriteReport(sink, *results, std::nullopt);
  if (!report.ok()) return Fail(report.status());
  if (a.json)
    std::cout << report->content.dump(2) << "\n";
  else
    std::cout << ReportTable(report->report) << "written    " << report->path.string() << "\n";
  return kExitOk;
}

}  // namespace

void AddBenchCommand(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<BenchArgs>();
  auto* cmd = app.add_subcommand(
      "bench", "Optimize (or evaluate) every problem of a suite; report fast_p and speedups per level");
  cmd->add_option("suite", a->suite,
                  "A KernelBench-layout folder (level1/ …), a flashinfer-bench dataset (definitions/ …) or a folder of "
                  "task folders");
  cmd->add_option("--levels", a->levels,
                  "Only these levels, e.g. 1,2 (KernelBench), op types (flashinfer), subfolders");
  cmd->add_option("--problems", a->problems, "Only problems whose name or LEVEL/NAME matches this glob, e.g. '1*_*'");
  cmd->add_option(
      "--eval-only", a->eval_only,
      "Evaluate the candidate given per problem in this folder (<stem>.cu|.py|.json or <stem>/) instead of optimizing");
  cmd->add_flag("--eval-reference", a->eval_reference,
                "Evaluate each problem's own reference as its candidate: a check of kpilot on the suite (every problem "
                "should pass with a speedup near 1)");
  cmd->add_flag("--no-compile-baseline", a->no_compile_baseline,
                "Do not time torch.compile (PyTorch suites): speedups against eager only");
  cmd->add_option("--devices", a->devices,
                  "GPUs the problems run on: all (every GPU of the first one's model) or indices such as 0,1 "
                  "(default: every visible GPU)");
  cmd->add_option("--executor", a->executor, "local | slurm: where evaluations run (docs/slurm.md)")
      ->check(CLI::IsMember({"local", "slurm"}))
      ->capture_default_str();
  cmd->add_option("--slurm-config", a->slurm_config,
                  "The [slurm] config file for --executor slurm (its workers: problems in flight)");
  cmd->add_option("--arch", a->arch,
                  "CUDA target of the GPUs the problems run on (default: the visible GPU's; with --executor slurm, "
                  "name the nodes', e.g. sm_90a)");
  AddCompileOnFlag(cmd, &a->compile_on);
  cmd->add_option("--per-gpu", a->per_gpu,
                  "Problems in flight on each GPU: building models, checks and timing still take the GPU one at a time "
                  "(its lock); starting workers, loading problems and compiling candidates overlap, each torch worker "
                  "with an equal share of the host's cores")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  cmd->add_option("--torch-threads", a->torch_threads,
                  "CPU threads of each problem's torch worker: auto (an equal share of the host's cores when "
                  "problems share it, else torch's default), or a number (0: torch's default)")
      ->check([](const std::string& v) -> std::string {
        if (v == "auto") return "";
        if (!v.empty() && v.size() <= 4 && v.find_first_not_of("0123456789") == std::string::npos) return "";
        return "expected auto or a number of threads from 0 (torch's default) to 9999, not '" + v + "'";
      })
      ->capture_default_str();
  cmd->add_option("--generator", a->generator, "As kpilot optimize: params | folder:DIR | llm:… | command:…")
      ->capture_default_str();
  cmd->add_option("--llm-config", a->llm_config, "TOML config of the llm:/command: generators");
  cmd->add_option("--budget", a->budget, "Candidate evaluations per problem, the starting one included")
      ->capture_default_str();
  cmd->add_option("--policy", a->policy, "mcts | greedy | beam | random")->capture_default_str();
  cmd->add_option("--feedback", a->feedback, "Ablation: none | raw | tools (docs/bench.md)")
      ->check(CLI::IsMember({"none", "raw", "tools"}))
      ->capture_default_str();
  cmd->add_option("--guidance", a->guidance, "Ablation: proactive | on-request")
      ->check(CLI::IsMember({"proactive", "on-request"}))
      ->capture_default_str();
  cmd->add_option("--memory", a->memory, "Ablation: on | off")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  cmd->add_option("--skills", a->skills, "Ablation: on | off")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  cmd->add_option("--timing", a->timing, "default | kernelbench | flashinfer (docs/pytorch.md)")
      ->check(CLI::IsMember({"default", "kernelbench", "flashinfer"}))
      ->capture_default_str();
  cmd->add_option("--max-seconds", a->max_seconds, "Timing cap per workload per evaluation, seconds")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--drafts", a->drafts, "Drafts per expansion")->capture_default_str();
  cmd->add_option("--seed", a->seed, "Random seed")->capture_default_str();
  cmd->add_option("--python", a->source.python, "Python interpreter with torch (default: python3 on PATH)");
  cmd->add_option("--store", a->store_dir, "Store folder")->capture_default_str();
  cmd->add_option("--resume", a->resume,
                  "Continue bench BENCH_ID: finished problems are kept, an interrupted one resumes");
  cmd->add_option("--out", a->out, "Report folder (default: STORE/bench/ID): report.json, flashinfer traces/");
  cmd->add_flag("--json", a->json, "The report as JSON on stdout, progress as JSON lines on stderr");
  cmd->add_option("--markdown", a->markdown, "Also write the report as Markdown to FILE");
  cmd->callback([a, exit_code]() { *exit_code = RunBenchCommand(*a); });
}

}  // namespace kpilot::cli
