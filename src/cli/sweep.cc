// kpilot sweep TASK CANDIDATE: evaluate a task's whole tunable space and store every
// configuration with every timing sample in a space file (docs/sweep.md). TASK may be
// PyTorch-defined (docs/pytorch.md): its space is then the candidate's kpilot-params block, and
// each configuration is checked and timed by the torch worker. The sweep itself is
// sweep/sweep.h; this file parses the flags, assembles what the sweep runs with (store, compile
// cache, toolchain, runner, torch worker) and prints its progress and summary.

#include <algorithm>
#include <iostream>

#include <fmt/format.h>

#include "cli/cli.h"
#include "slurm/slurm.h"
#include "core/subprocess.h"
#include "device/device.h"
#include "sweep/sweep.h"
#include "task/loader.h"
#include "toolchain/toolchain.h"

namespace kpilot::cli {
namespace {

using nlohmann::json;

struct SweepArgs {
  std::string task_dir;
  std::string candidate;
  std::string workload;
  int jobs = 0;
  int batch = 32;
  std::string out;
  size_t cap = 100000;
  double max_seconds = 0.5;
  double timeout_s = 0;  // per configuration; 0 = derived from max_seconds
  double stop_after_s = 0;
  std::string store_dir = ".kpilot";
  std::string arch;
  std::string executor = "local";  // local | slurm
  std::string slurm_config;
  std::string compile_on = "local";  // --compile-on local|slurm
  int device = 0;
  bool dry_run = false;
  bool compile_only = false;
  bool json = false;
  TaskSourceArgs source;  // --python, --workloads FILE.jsonl
};

// Progress lines on stderr; with --json only the journal's warning.
class ProgressLines : public SweepObserver {
 public:
  ProgressLines(std::string task, bool quiet) : task_(std::move(task)), quiet_(quiet) {}

  void Opened(const std::filesystem::path& out, size_t configs, size_t resumed) override {
    if (quiet_) return;
    std::cerr << fmt::format("kpilot: {} configurations of {} in {}{}\n", configs, task_, out.string(),
                             resumed ? fmt::format(" ({} already evaluated there, resuming)", resumed) : "");
  }
  void JournalLinesSkipped(const std::filesystem::path& journal, size_t lines) override {
    std::cerr << fmt::format(
        "kpilot: {} unreadable line(s) in {} skipped (a write cut short); those "
        "configurations run again\n",
        lines, journal.string());
  }
  void CompileStarted(size_t configs, int threads) override {
    if (!quiet_) std::cerr << fmt::format("kpilot: compiling {} configurations on {} threads\n", configs, threads);
  }
  void Compiled(size_t compiled, size_t total, size_t errors, double elapsed_s) override {
    size_t step = std::max<size_t>(1, total / 20);  // about twenty lines per sweep
    if (!quiet_ && (compiled % step == 0 || compiled == total))
      std::cerr << fmt::format("kpilot: compiled {}/{} ({} compile errors, {:.0f} s)\n", compiled, total, errors,
                               elapsed_s);
  }
  void BatchEvaluated(size_t objects, double batch_s, const SweepProgress& p) override {
    if (quiet_) return;
    std::cerr << fmt::format(
        "kpilot: evaluated {} objects in {:.1f} s; {}/{} configurations done, {:.0f} s{}\n", objects, batch_s, p.done,
        p.total, p.elapsed_s,
        p.best ? fmt::format("; best {:.3f}× ({})", p.best->speedup, ParamsText(p.best->params)) : "");
  }

 private:
  std::string task_;
  bool quiet_;
};

int PrintDryRun(const Sweep& sweep, const SweepArgs& a) {
  const std::string& name = sweep.task().name;
  if (a.json)
    std::cout
        << json{{"task", name}, {"valid", sweep.size()}, {"combinations", sweep.combinations()}, {"cap", a.cap}}.dump(2)
        << "\n";
  else
    std::cout << fmt::format("{}: {} valid configurations of {} combinations{}\n", name, sweep.size(),
                             sweep.combinations(),
                             sweep.size() >= a.cap ? fmt::format(" (capped at --cap {})", a.cap) : "");
  return kExitOk;
}

int PrintSummary(const SweepSummary& s, const std::string& task, bool as_json) {
  if (as_json) {
    json best = json::array();
    for (const SweepBest& b : s.best) {
      json e = b.entry;
      e.erase("candidate_ms"), e.erase("baseline_ms");
      best.push_back(std::move(e));
    }
    std::cout << json{{"out", s.out.string()},
                      {"configs", s.configs},
                      {"by_status", s.by_status},
                      {"complete", s.complete},
                      {"best", best}}
                     .dump(2)
              << "\n";
  } else {
    std::string counts;
    for (const auto& [status, n] : s.by_status) counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, status);
    std::cout << fmt::format("space      {} configurations of {} ({}) in {}\n", s.configs, task, counts,
                             s.out.string());
    for (const SweepBest& b : s.best)
      std::cout << fmt::format("{:>9.3f}×  {:.4f} ms  {}\n", b.speedup, b.median_ms, ParamsText(b.params));
    if (s.stopped || !s.complete)
      std::cout << "incomplete: run the same command again to evaluate the rest (the file is resumed)\n";
  }
  return s.complete ? kExitOk : kExitNotPassed;
}

int RunSweep(const SweepArgs& a, Task task) {
  SweepOptions options;
  options.candidate = a.candidate;
  options.workload = a.workload;
  options.jobs = a.jobs;
  if (a.compile_on == "slurm" && a.jobs == 0 && !a.slurm_config.empty())
    if (auto c = slurm::LoadSlurmConfig(a.slurm_config); c.ok()) options.jobs = c->compile_cpus;
  options.batch = a.batch;
  options.out = a.out;
  options.cap = a.cap;
  options.max_seconds = a.max_seconds;
  options.timeout_s = a.timeout_s;
  options.stop_after_s = a.stop_after_s;
  options.arch = a.arch;
  options.device = a.device;
  options.compile_only = a.compile_only;
  // --executor slurm: batches run in allocations on the cluster's nodes (docs/slurm.md); the
  // compiles stay here, for the nodes' GPU that --arch names.
  std::optional<slurm::SlurmConfig> cluster;
  if (a.executor == "slurm") {
    if (a.slurm_config.empty())
      return Fail(Status::InvalidInput("--executor slurm needs --slurm-config FILE (docs/slurm.md)"));
    if (task.reference.kind == ReferenceKind::kPython)
      return Fail(Status::InvalidInput("--executor slurm sweeps native tasks (task.toml); " + task.name +
                                       " has a Python reference: sweep it with --executor local"));
    if (task.backend == Backend::kCuda && a.arch.empty())
      return Fail(Status::InvalidInput(
          "--executor slurm compiles here for the nodes' GPUs: name them with --arch, e.g. --arch sm_90a"));
    auto config = slurm::LoadSlurmConfig(a.slurm_config);
    if (!config.ok()) return Fail(config.status());
    cluster = *config;
  }
  options.needs_gpu = NeedsGpu(task) && !cluster;
  options.runs_elsewhere = cluster.has_value();
  ProgressLines progress(task.name, a.json);
  auto planned = Sweep::Plan(std::move(task), std::move(options), &progress);
  if (!planned.ok()) return Fail(planned.status());
  Sweep& sweep = **planned;
  if (a.dry_run) return PrintDryRun(sweep, a);
  if (Status s = sweep.ChooseGpu(SystemGpuProbe()); !s.ok()) return Fail(s);
  if (Status s = sweep.Open(SystemProcessRunner()); !s.ok()) return Fail(s);

  auto workspace = OpenWorkspace(a.store_dir, false);
  if (!workspace.ok()) return Fail(workspace.status());
  auto compiler = StartCompileOn(a.compile_on, a.slurm_config, "kpilot-sweep-compile-" + sweep.task().name, a.json);
  if (!compiler.ok()) return Fail(compiler.status());
  auto toolchain = MakeSystemToolchain(workspace->cache_dir, IncludeDir(),
                                       *compiler ? static_cast<ProcessRunner&>(**compiler) : SystemProcessRunner());
  SweepEnv env;
  env.toolchain = toolchain.get();
  env.processes = &SystemProcessRunner();
  env.runner = RunnerPath();
  Store* store = workspace->store.get();
  if (sweep.gpu()) env.calibration = LoadCalibration(store, *sweep.gpu());
  env.calibration_measured = [store, &sweep](const Calibration& c) {
    if (store && sweep.gpu()) (void)SaveCalibration(*store, *sweep.gpu(), c, json::object());
  };
  std::unique_ptr<PythonTaskRunner> python;
  if (!a.compile_only && sweep.task().reference.kind == ReferenceKind::kPython) {
    auto made = MakePythonTaskRunner(sweep.task(), a.source.python);
    if (!made.ok()) return Fail(made.status());
    python = std::move(made).value();
  }
  env.python = python.get();
  if (cluster) {
    env.channel_queues = cluster->workers;
    env.channels = slurm::ClusterChannels(*cluster, RunnerPath(), "kpilot-sweep-" + sweep.task().name, &std::cerr);
  }
  auto summary = sweep.Run(env);
  if (!summary.ok()) return Fail(summary.status());
  return PrintSummary(*summary, sweep.task().name, a.json);
}

}  // namespace

void AddSweepCommand(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<SweepArgs>();
  auto* cmd = app.add_subcommand("sweep", "Evaluate every configuration of a task's [params] space into a space file");
  cmd->add_option("task", a->task_dir,
                  "Task folder (holding task.toml), KernelBench problem .py or flashinfer definition .json")
      ->required();
  cmd->add_option("candidate", a->candidate, "Candidate source whose -D params span the space")->required();
  cmd->add_option("--workload", a->workload, "The workload to time (default: the task's first)");
  cmd->add_option("--jobs", a->jobs, "Compile threads (default: every core; one fewer while a cuda sweep evaluates)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--batch", a->batch, "Objects per runner process")->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--out", a->out, "Space file (default: sweep-<task>.json); an existing one is resumed");
  cmd->add_option("--cap", a->cap, "At most this many configurations")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--max-seconds", a->max_seconds, "Timing-loop cap per configuration, in seconds")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--timeout", a->timeout_s,
                  "Wall-clock allowance per configuration inside a batch, in seconds (default: 5 + 3 × --max-seconds)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--stop-after", a->stop_after_s,
                  "Start no new batch after this many seconds (the file is saved; rerun to resume)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--store", a->store_dir, "Store folder (compile cache, GPU calibration)")->capture_default_str();
  cmd->add_option("--arch", a->arch, "CUDA target, e.g. sm_90a (default: the visible GPU's, else sm_90a)");
  cmd->add_option("--executor", a->executor,
                  "local | slurm: where the batches run (slurm: `workers` allocations at once; docs/slurm.md)")
      ->check(CLI::IsMember({"local", "slurm"}))
      ->capture_default_str();
  cmd->add_option("--slurm-config", a->slurm_config, "The [slurm] config file for --executor slurm");
  AddCompileOnFlag(cmd, &a->compile_on);
  cmd->add_option("--device", a->device, "CUDA device index")->capture_default_str();
  cmd->add_flag("--dry-run", a->dry_run, "Only count the valid configurations");
  cmd->add_flag("--compile-only", a->compile_only, "Only compile every configuration (works without a GPU)");
  cmd->add_flag("--json", a->json, "Print the summary as JSON (progress lines are not printed)");
  AddTaskSourceOptions(cmd, &a->source);
  cmd->callback([a, exit_code]() {
    auto task = LoadTaskArg(a->task_dir, a->source);
    if (task.ok() && std::filesystem::exists(a->candidate)) {
      // A task without [params] sweeps the space the candidate declares (docs/task-format.md).
      if (Status s = AdoptCandidateParams(&task.value(), a->candidate); !s.ok()) task = s;
    }
    if (!task.ok()) {
      *exit_code = Fail(task.status());
      return;
    }
    *exit_code = RunSweep(*a, std::move(task).value());
  });
}

}  // namespace kpilot::cli
