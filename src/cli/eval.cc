// kpilot eval TASK CANDIDATE: compile, check and time one candidate; record it in the store. TASK
// is a task folder, a KernelBench problem .py or a flashinfer definition .json (docs/pytorch.md).
#include <algorithm>
#include <iostream>

#include <fmt/format.h>

#include "cli/cli.h"
#include "core/fs.h"
#include "core/sha256.h"
#include "core/text.h"
#include "device/device.h"
#include "harness/harness.h"
#include "pytorch/pytorch.h"
#include "slurm/slurm.h"
#include "store/store.h"
#include "task/formula.h"
#include "task/loader.h"

namespace kpilot::cli {
namespace {

struct EvalArgs {
  std::string task_dir;
  std::string candidate;
  std::vector<std::string> workloads;
  std::string backend;
  std::vector<std::string> defines;
  bool json = false;
  std::string store_dir = ".kpilot";
  bool no_store = false;
  bool compile_only = false;
  bool no_time = false;
  double timeout_s = 120;
  std::string arch;
  std::string timing = "default";
  bool energy = false;
  int device = 0;
  bool no_sandbox = false;
  std::string executor = "local";    // local | slurm
  std::string slurm_config;          // --slurm-config FILE ([slurm] table, docs/slurm.md)
  std::string compile_on = "local";  // --compile-on local|slurm
  std::vector<uint64_t> seeds;
  TaskSourceArgs source;           // --python, --workloads FILE.jsonl
  std::string baseline = "eager";  // PyTorch tasks: eager | compile
};

// The CI half-width of the reported statistic, relative to it.
std::string Pct(const SampleSummary& s, const std::string& statistic) {
  if (statistic == "mean")
    return s.mean > 0 ? fmt::format("{:.1f}%", 100 * (s.mean_ci.hi - s.mean_ci.lo) / 2 / s.mean) : "-";
  return s.median > 0 ? fmt::format("{:.1f}%", 100 * s.RelativeHalfWidth()) : "-";
}

void PrintTable(const Evaluation& e, const std::string& stored) {
  std::string params;
  for (const auto& [k, v] : e.params) params += fmt::format(" {}={}", k, v);
  std::cout << fmt::format("task       {} ({})\n", e.task, BackendName(e.backend));
  std::cout << fmt::format("candidate  {}{}\n", e.candidate, params.empty() ? "" : "  params:" + params);
  std::cout << fmt::format("verdict    {} — {}\n", VerdictName(e.verdict.kind), e.verdict.summary);
  if (!e.verdict.passed() && e.verdict.evidence.contains("log_excerpt"))
    std::cout << "compiler log (from the first error):\n"
              << e.verdict.evidence["log_excerpt"].get<std::string>() << "\n";
  if (!e.timings.empty()) {
    const std::string stat = e.timings.front().statistic;
    std::cout << fmt::format("\n{:<14} {:>24} {:>24} {:>24}\n", "workload", "candidate (" + stat + " ± CI)",
                             fmt::format("{} ({} ± CI)", e.baseline, stat), "speedup [95% CI]");
    for (const auto& t : e.timings)
      std::cout << fmt::format(
          "{:<14} {:>24} {:>24} {:>24}\n", t.workload,
          FormatMs(t.candidate_reported_ms) + " ± " + Pct(t.candidate, t.statistic),
          FormatMs(t.baseline_reported_ms) + " ± " + Pct(t.baseline, t.statistic),
          fmt::format("{:.3f}× [{:.3f}, {:.3f}] n={}", t.speedup.ratio, t.speedup.ci.lo, t.speedup.ci.hi, t.speedup.n));
    std::cout << fmt::format("geomean speedup over {}: {:.3f}× [{:.3f}, {:.3f}]\n", e.baseline, e.speedup_geomean,
                             e.speedup_geomean_ci.lo, e.speedup_geomean_ci.hi);
  }
  if (!e.compile.resources.empty()) {
    std::cout << fmt::format("\n{:<40} {:>5} {:>8} {:>7} {:>10}\n", "kernel (ptxas)", "regs", "smem B", "stack B",
                             "spill st/ld");
    for (const auto& r : e.compile.resources)
      std::cout << fmt::format("{:<40} {:>5} {:>8} {:>7} {:>10}\n", r.name.substr(0, 40), r.registers, r.shared_bytes,
                               r.stack_bytes, fmt::format("{}/{}", r.spill_stores, r.spill_loads));
  }
  if (e.backend == Backend::kCuda && !e.compile.sass_status.empty())
    std::cout << "SASS       " << e.compile.sass_status << "\n";
  std::cout << fmt::format("\ntime       compile {:.2f} s{}  run {:.2f} s  total {:.2f} s\n", e.compile_s,
                           e.compile.cache_hit ? " (cache hit)" : "", e.run_s, e.total_s);
  for (const auto& t : e.timings)
    if (t.joules_per_call > 0)
      std::cout << fmt::format("energy     {}: candidate {:.4f} mJ/call at {:.0f} W, {} {:.4f} mJ/call at {:.0f} W\n",
                               t.workload, t.joules_per_call * 1e3, t.watts, e.baseline,
                               t.baseline_joules_per_call * 1e3, t.baseline_watts);
  for (const auto& w : e.run.warnings) std::cout << "warning    " << w << "\n";
  std::cout << "sandbox    " << SandboxSummary(e.run.sandbox) << "\n";
  for (const auto& d : e.run.sandbox.denied) std::cout << "sandbox    denied " << d << "\n";
  for (const auto& w : e.run.sandbox.warnings) std::cout << "sandbox    warning: " << w << "\n";
  if (e.run.leftover_processes_killed > 0)
    std::cout << fmt::format("sandbox    killed {} process(es) the candidate left behind\n",
                             e.run.leftover_processes_killed);
  if (!stored.empty()) std::cout << "stored     " << stored << "\n";
}

// Records the evaluation; returns "evaluation N in DIR".
Result<std::string> Record(Store& store, const Task& task, const Evaluation& e) {
  auto toml = ReadFile(task.dir / "task.toml");
  TaskRecord tr;
  tr.name = task.name;
  tr.dir = task.dir.string();
  tr.definition_sha = task.reference.kind == ReferenceKind::kPython ? ProblemSha(task)
                      : toml.ok()                                   ? Sha256Hex(*toml)
                                                                    : "";
  auto task_id = store.AddTask(tr);
  if (!task_id.ok()) return task_id.status();
  auto source = ReadFile(e.candidate);
  if (!source.ok()) return source.status();
  auto source_blob = store.PutBlob(*source);
  if (!source_blob.ok()) return source_blob.status();
  CandidateRecord cr;
  cr.task_id = *task_id;
  cr.source_path = e.candidate;
  cr.source_blob = *source_blob;
  cr.params_json = nlohmann::json(e.params).dump();
  auto cand_id = store.AddCandidate(cr);
  if (!cand_id.ok()) return cand_id.status();
  EvaluationRecord er;
  er.candidate_id = *cand_id;
  er.backend = std::string(BackendName(e.backend));
  er.verdict = std::string(VerdictName(e.verdict.kind));
  er.speedup = e.speedup_geomean;
  nlohmann::json full = ToJson(e);
  auto result_blob = store.PutBlob(full.dump(2));
  if (!result_blob.ok()) return result_blob.status();
  er.result_blob = *result_blob;
  if (!e.compile.log.empty()) {
    auto b = store.PutBlob(e.compile.log);
    if (!b.ok()) return b.status();
    er.log_blob = *b;
  }
  if (!e.compile.resources.empty()) {
    auto b = store.PutBlob(full["compile"]["resources"].dump(2));
    if (!b.ok()) return b.status();
    er.ptxas_blob = *b;
  }
  if (!e.compile.sass.empty()) {
    auto b = store.PutBlob(e.compile.sass);
    if (!b.ok()) return b.status();
    er.sass_blob = *b;
  }
  auto eval_id = store.AddEvaluation(er);
  if (!eval_id.ok()) return eval_id.status();
  return fmt::format("evaluation {} in {}", *eval_id, store.dir().string());
}

int RunEval(const EvalArgs& a) {
  auto task = LoadTaskArg(a.task_dir, a.source);
  if (!task.ok()) return Fail(task.status());
  auto python = MakePythonTaskRunner(*task, a.source.python);
  if (!python.ok()) return Fail(python.status());
  if (!a.backend.empty() && a.backend != BackendName(task->backend))
    return Fail(Status::InvalidInput("--backend " + a.backend + ": task " + task->name + " is a " +
                                     std::string(BackendName(task->backend)) + " task"));
  if (!std::filesystem::exists(a.candidate)) return Fail(Status::NotFound(a.candidate + ": no such candidate file"));
  // -D is checked against the candidate's own kpilot-params block when the task declares none.
  if (Status s = AdoptCandidateParams(&task.value(), a.candidate); !s.ok()) return Fail(s);
  auto params = ParseDefines(*task, a.defines);
  if (!params.ok()) return Fail(params.status());

  EvalOptions opt;
  opt.workloads = a.workloads;
  opt.params = *params;
  opt.time = !a.no_time;
  opt.timeout_s = a.timeout_s;
  opt.compile.cuda_arch = a.arch;
  opt.energy = a.energy;
  opt.sandbox = !a.no_sandbox;
  opt.seeds = a.seeds;
  opt.device = a.device;
  opt.timing.mode = *ParseTimingMode(a.timing);
  opt.python_baseline = a.baseline;
  std::optional<GpuInfo> gpu;
  // --executor slurm: the GPU is the node's; this machine only compiles, for the GPU --arch names.
  const bool on_cluster = a.executor == "slurm";
  const bool compiles_cuda =
      task->reference.kind != ReferenceKind::kPython || std::filesystem::path(a.candidate).extension() == ".cu";
  if (on_cluster && task->backend == Backend::kCuda && compiles_cuda && a.arch.empty() && !a.compile_only)
    return Fail(Status::InvalidInput(
        "--executor slurm compiles here for the nodes' GPUs: name them with --arch, e.g. --arch sm_90a"));
  if (NeedsGpu(*task) && !on_cluster) {
    auto found = GpuAtIndex(SystemGpuProbe(), a.device);
    if (found.ok()) gpu = *found;
    if (a.device < 0) return Fail(Status::InvalidInput(fmt::format("--device {}: not a device index", a.device)));
    if (found.status().code() == StatusCode::kInvalidInput) return Fail(found.status());
    if (opt.compile.cuda_arch.empty() && gpu) opt.compile.cuda_arch = gpu->Arch();
    if (!gpu && !a.compile_only)
      return Fail(Status::Unavailable(
          "task " + task->name + " needs the cuda backend, but this machine has " + found.status().message() +
          "; run it on a machine with an NVIDIA GPU, or add "
          "--compile-only to check that the candidate compiles and see its resource report"));
  }

  auto workspace = OpenWorkspace(a.store_dir, a.no_store);
  if (!workspace.ok()) return Fail(workspace.status());
  Store* store_ptr = workspace->store.get();
  auto compiler = StartCompileOn(a.compile_on, a.slurm_config, "kpilot-compile-" + task->name, a.json);
  if (!compiler.ok()) return Fail(compiler.status());
  auto toolchain = MakeSystemToolchain(workspace->cache_dir, IncludeDir(),
                                       *compiler ? static_cast<ProcessRunner&>(**compiler) : SystemProcessRunner());

  bool native_candidate = std::filesystem::path(a.candidate).extension() == ".cu" ||
                          std::filesystem::path(a.candidate).extension() == ".cpp";
  if (a.compile_only && !native_candidate)
    return Fail(Status::InvalidInput("--compile-only: " + a.candidate +
                                     " is not a native .cu/.cpp candidate; there is "
                                     "nothing to compile"));
  if (a.compile_only) {
    if (!a.json) std::cerr << "kpilot: compiling " << a.candidate << " …\n";
    auto c = toolchain->Compile(a.candidate, *params, opt.compile);
    if (!c.ok()) return Fail(c.status());
    Evaluation e;
    e.task = task->name;
    e.candidate = a.candidate;
    e.params = *params;
    e.backend = task->backend;
    e.compile = *c;
    e.compile_s = c->seconds;
    e.total_s = c->seconds;
    if (c->ok) {
      e.verdict.kind = VerdictKind::kPassed;
      e.verdict.summary = "compiled (not run: --compile-only)";
    } else {
      e.verdict = CompileErrorVerdict(*c);
    }
    if (a.json)
      std::cout << ToJson(e).dump(2) << "\n";
    else
      PrintTable(e, "");
    return c->ok ? kExitOk : kExitNotPassed;
  }

  if (!a.json)
    std::cerr << "kpilot: evaluating " << a.candidate << " on " << task->name << " (compile, check "
              << (opt.seeds.empty() ? kSeedsPerEvaluation : static_cast<int>(opt.seeds.size()))
              << " seeds per workload, time) …\n";
  if (gpu) opt.calibration = LoadCalibration(store_ptr, *gpu);
  Evaluator evaluator(*toolchain, SystemProcessRunner(), RunnerPath(), python->get());
  // --executor slurm: the evaluation runs as a job step of an allocation of its own.
  std::unique_ptr<slurm::ClusterRunner> cluster;
  if (a.executor == "slurm") {
    if (a.slurm_config.empty())
      return Fail(
          Status::InvalidInput("--executor slurm needs --slurm-config FILE (a [slurm] table: partition, gres, "
                               "shared_dir, …; docs/slurm.md)"));
    auto config = slurm::LoadSlurmConfig(a.slurm_config);
    if (!config.ok()) return Fail(config.status());
    if (!a.json) std::cerr << "kpilot: asking Slurm for an allocation …\n";
    auto started = slurm::ClusterRunner::Start(
        SystemProcessRunner(), SystemClock(), *config, RunnerPath(), "kpilot-eval-" + task->name,
        task->reference.kind == ReferenceKind::kPython ? ClusterPythonWorkers(a.source.python) : nullptr);
    if (!started.ok()) return Fail(started.status());
    cluster = std::move(started).value();
    if (!a.json) std::cerr << fmt::format("kpilot: allocation {} runs on {}\n", cluster->job_id(), cluster->nodes());
  }
  auto e = evaluator.Evaluate(*task, a.candidate, opt, cluster.get());
  if (!e.ok()) return Fail(e.status());
  // PyTorch tasks: the eager and torch.compile baselines, this run's cached and the other read back.
  nlohmann::json torch_baselines;
  if (task->reference.kind == ReferenceKind::kPython && e->verdict.passed() && !e->timings.empty()) {
    auto b = TorchBaselines(store_ptr, *task, *e, opt.timing.mode);
    if (b.ok())
      torch_baselines = *b;
    else
      std::cerr << "kpilot: warning: could not cache the baseline timings: " << b.status().message() << "\n";
  }
  if (store_ptr && gpu && e->run.calibration_measured && e->run.calibration.valid()) {
    Status s = SaveCalibration(*store_ptr, *gpu, e->run.calibration, nlohmann::json::object());
    if (!s.ok()) std::cerr << "kpilot: warning: could not cache the GPU calibration: " << s.message() << "\n";
  }
  std::string stored;
  if (store_ptr) {
    auto rec = Record(*store_ptr, *task, *e);
    if (!rec.ok()) return Fail(rec.status().WithContext("recording the evaluation in " + store_ptr->dir().string()));
    stored = *rec;
  }
  if (a.json) {
    nlohmann::json j = ToJson(*e);
    if (!stored.empty()) j["stored"] = stored;
    if (cluster) j["slurm"] = {{"job", cluster->job_id()}, {"nodes", cluster->nodes()}};
    if (*compiler) j["slurm"]["compile"] = {{"job", (*compiler)->job_id()}, {"nodes", (*compiler)->nodes()}};
    if (!torch_baselines.is_null()) {
      j["baselines"] = torch_baselines;
      for (const char* b : {"eager", "compile"})
        j[std::string("speedup_vs_") + b] =
            torch_baselines[b].is_null() ? nlohmann::json() : torch_baselines[b]["speedup"];
    }
    std::cout << j.dump(2) << "\n";
  } else {
    PrintTable(*e, stored);
    if (cluster) std::cout << fmt::format("slurm      job {} on {}\n", cluster->job_id(), cluster->nodes());
    for (const char* b : {"eager", "compile"})
      if (!torch_baselines.is_null() && !torch_baselines[b].is_null())
        std::cout << fmt::format("vs {:<8} {:.3f}×{}\n", b, torch_baselines[b]["speedup"].get<double>(),
                                 torch_baselines[b]["cached"].get<bool>() ? " (cached baseline time, unpaired)" : "");
  }
  return e->verdict.passed() ? kExitOk : kExitNotPassed;
}

}  // namespace

Result<ParamValues> ParseDefines(const Task& task, const std::vector<std::string>& defines) {
  ParamValues params;
  for (const auto& d : defines) {
    size_t eq = d.find('=');
    if (eq == std::string::npos || eq == 0)
      return Status::InvalidInput("-D " + d + ": expected NAME=VALUE, e.g. -D BLOCK=256");
    params[d.substr(0, eq)] = d.substr(eq + 1);
  }
  if (Status s = CheckParams(task, params); !s.ok()) return Status::InvalidInput("-D " + s.message());
  return params;
}

void AddEvalCommand(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<EvalArgs>();
  auto* cmd = app.add_subcommand("eval", "Compile, check and time one candidate against a task's reference");
  cmd->add_option("task", a->task_dir,
                  "Task folder (holding task.toml), KernelBench problem .py or flashinfer-bench definition .json")
      ->required();
  cmd->add_option("candidate", a->candidate,
                  "Candidate source: .cpp for host tasks, .cu for cuda tasks; for PyTorch tasks also a KernelBench "
                  "ModelNew .py or a flashinfer Solution .json")
      ->required();
  AddTaskSourceOptions(cmd, &a->source);
  cmd->add_option("--baseline", a->baseline,
                  "PyTorch tasks: what speedups are measured against — eager (the reference) or compile (torch.compile "
                  "of it); both are cached in the store per problem, GPU and torch version")
      ->check(CLI::IsMember({"eager", "compile"}))
      ->capture_default_str();
  cmd->add_option("--workload", a->workloads, "Only these workloads (repeatable)");
  cmd->add_option("--backend", a->backend, "Expected backend (host|cuda); must match the task")
      ->check(CLI::IsMember({"host", "cuda"}));
  cmd->add_option("-D", a->defines, "Tunable parameter NAME=VALUE (repeatable)");
  cmd->add_flag("--json", a->json, "Print the full evaluation as JSON");
  cmd->add_option("--store", a->store_dir, "Store folder")->capture_default_str();
  cmd->add_flag("--no-store", a->no_store, "Do not record this evaluation");
  cmd->add_flag("--compile-only", a->compile_only, "Only compile and report resources (works without a GPU)");
  cmd->add_flag("--no-time", a->no_time, "Check correctness only, skip timing");
  cmd->add_option("--timeout", a->timeout_s, "Wall-clock limit of the run in seconds")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--arch", a->arch, "CUDA target, e.g. sm_90a (default: the visible GPU's, else sm_90a)");
  cmd->add_option("--timing", a->timing,
                  "Timing procedure (cuda and PyTorch tasks): default | kernelbench | flashinfer (the last two also "
                  "turn kpilot's exploit checks off for PyTorch tasks)")
      ->check(CLI::IsMember({"default", "kernelbench", "flashinfer"}))
      ->capture_default_str();
  cmd->add_flag("--energy", a->energy, "Measure joules per call with NVML (cuda; adds ≥ 2 s per workload)");
  cmd->add_option("--device", a->device, "CUDA device index")->capture_default_str();
  cmd->add_option("--executor", a->executor, "local | slurm: where the evaluation runs (docs/slurm.md)")
      ->check(CLI::IsMember({"local", "slurm"}))
      ->capture_default_str();
  cmd->add_option("--slurm-config", a->slurm_config, "The [slurm] config file for --executor slurm");
  AddCompileOnFlag(cmd, &a->compile_on);
  cmd->add_flag("--no-sandbox", a->no_sandbox,
                "Run the candidate unconfined (docs/threat-model.md; for profilers such as ncu that must reach "
                "the process); leftover processes are still killed");
  cmd->add_option("--seed", a->seeds,
                  "Input seed of a correctness trial (repeatable), e.g. to reproduce a recorded evaluation; "
                  "default: 3 drawn afresh for each evaluation");
  cmd->callback([a, exit_code]() { *exit_code = RunEval(*a); });
}

}  // namespace kpilot::cli
