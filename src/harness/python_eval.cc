// The Evaluator's path for tasks whose reference is a Python program (KernelBench problems,
// flashinfer-bench definitions: docs/pytorch.md). Native candidates are compiled here as for any
// task; everything else — inputs, the reference, checks, timing — happens in the torch worker
// behind PythonTaskRunner.
#include <chrono>

#include "harness/harness.h"

namespace kpilot {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// What the worker runs for a source file: a native object (.cu; .cpp on the cpu), a KernelBench
// ModelNew (.py) or a flashinfer Solution (.json); the task's own problem or definition file is
// its reference (reference-as-candidate: a check of the harness, speedup ≈ 1). `role` is
// "candidate" or "baseline".
Result<std::string> SubjectKind(const Task& task, const std::filesystem::path& source, bool cpu,
                                const std::string& role) {
  std::error_code ec;
  if (std::filesystem::equivalent(source, task.reference.path, ec)) return std::string("reference");
  std::string ext = source.extension().string();
  std::string native_ext = cpu ? ".cpp" : ".cu";
  std::string other = task.format == TaskFormat::kFlashInfer ? ".json" : ".py";
  std::string accepted =
      "a native " + native_ext + " (the kpilot ABI) or " +
      (task.format == TaskFormat::kFlashInfer ? "a flashinfer Solution .json" : "a KernelBench ModelNew .py");
  if (ext == native_ext) return std::string("native");
  if (ext == ".py" && task.format == TaskFormat::kKernelBench) return std::string("model_new");
  if (ext == ".json" && task.format == TaskFormat::kFlashInfer) return std::string("solution");
  std::string why =
      ext == ".cu" && cpu ? " (the torch device is the cpu, where native candidates are .cpp for g++)" : "";
  return Status::InvalidInput(source.string() + ": the " + role + " of " + std::string(TaskFormatName(task.format)) +
                              " task " + task.name + " must be " + accepted + why);
}

}  // namespace

nlohmann::json ToJson(const PythonSubject& s) {
  nlohmann::json j = {{"kind", s.kind}};
  if (!s.path.empty()) j["path"] = s.path.string();
  if (!s.object.empty()) j["object"] = s.object.string();
  return j;
}

Result<Evaluation> Evaluator::EvaluatePython(const Task& task, const std::filesystem::path& candidate,
                                             const EvalOptions& given, RunnerChannel* runner) {
  auto t_start = std::chrono::steady_clock::now();
  // A channel's own worker runs on its node, whose GPU (the allocation's) is device 0 there.
  PythonTaskRunner* python = runner && runner->python() ? runner->python() : python_;
  EvalOptions opt = given;
  if (python != python_ && opt.device < 0) opt.device = 0;
  if (!python)
    return Status::InvalidInput("task " + task.name + " has a Python reference (" + task.reference.path.string() +
                                "), and this command has no torch worker to run it");
  Evaluation e;
  e.task = task.name;
  e.candidate = candidate.string();
  e.params = opt.params;
  e.backend = task.backend;
  bool cpu = TorchDevice(opt) == "cpu";
  auto kind = SubjectKind(task, candidate, cpu, "candidate");
  if (!kind.ok()) return kind.status();
  auto workloads = SelectWorkloads(task, opt.workloads);
  if (!workloads.ok()) return workloads.status();

  PythonSubject baseline;
  if (opt.baseline_source) {
    auto base_kind = SubjectKind(task, *opt.baseline_source, cpu, "baseline");
    if (!base_kind.ok()) return base_kind.status();
    baseline.kind = *base_kind;
    baseline.path = std::filesystem::absolute(*opt.baseline_source);
    if (baseline.kind == "native") {
      CompileOptions base_opts = opt.compile;
      base_opts.want_sass = false;
      auto base = toolchain_.Compile(*opt.baseline_source, opt.baseline_params, base_opts);
      if (!base.ok()) return base.status();
      if (!base->ok)
        return Status::InvalidInput("the baseline " + opt.baseline_source->string() +
                                    " does not compile: " + base->first_error);
      baseline.object = base->object;
    }
    e.baseline = opt.baseline_name;
  } else if (opt.python_baseline == "eager" || opt.python_baseline.empty()) {
    baseline.kind = "reference";
    e.baseline = "eager";
  } else if (opt.python_baseline == "compile") {
    baseline.kind = "compile";
    e.baseline = "torch.compile";
  } else {
    return Status::InvalidInput("--baseline " + opt.python_baseline + ": use eager or compile");
  }

  PythonSubject subject;
  subject.kind = *kind;
  subject.path = std::filesystem::absolute(candidate);
  if (subject.kind == "native") {
    auto compiled = toolchain_.Compile(candidate, opt.params, opt.compile);
    if (!compiled.ok()) return compiled.status();
    e.compile = *compiled;
    if (!compiled->ok) {
      e.verdict = CompileErrorVerdict(*compiled);
      e.compile_s = e.total_s = SecondsSince(t_start);
      return e;
    }
    if (auto narrow = NarrowTensorCoreVerdict(task, *compiled)) {
      e.verdict = *narrow;
      e.compile_s = e.total_s = SecondsSince(t_start);
      return e;
    }
    subject.object = compiled->object;
  }
  e.compile_s = SecondsSince(t_start);

  auto t_run = std::chrono::steady_clock::now();
  auto run = python->Run(task, subject, baseline, opt);
  e.run_s = SecondsSince(t_run);
  if (!run.ok()) return run.status();
  if (run->status == "error") return Status::InvalidInput(run->message);
  e.run = std::move(run).value();
  e.verdict = VerdictFromRun(e.run);
  if (e.verdict.passed()) SummarizeTimings(e.run, &e);
  e.total_s = SecondsSince(t_start);
  return e;
}

}  // namespace kpilot
