#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <sstream>

#include "core/fs.h"
#include "core/random.h"
#include "harness/harness.h"

namespace kpilot {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

RunTensor ToRunTensor(const Task& task, const TensorSpec& spec, const Workload& w, bool is_output) {
  RunTensor t;
  t.name = spec.name;
  t.dtype = spec.dtype;
  t.shape = task.ShapeOf(spec, w);
  t.init = spec.init;
  if (is_output) t.tolerance = task.ToleranceOf(spec);
  return t;
}

// The scrubbed environment every runner gets, plus `extra` (NAME=VALUE).
std::vector<std::string> RunnerEnvironment(const std::vector<std::string>& extra) {
  std::vector<std::string> env = ScrubbedEnvironment();
  // OpenMP threads that spin while idle steal the core their partner needs on a loaded machine
  // and make host timings erratic; a user's own setting wins.
  if (!std::getenv("OMP_WAIT_POLICY")) env.push_back("OMP_WAIT_POLICY=passive");
  for (const auto& e : extra) env.push_back(e);
  return env;
}

Result<RunResult> ParseRunnerResult(const nlohmann::json& j) {
  return j.is_discarded() ? Result<RunResult>(Status::Internal("no JSON")) : RunResultFromJson(j);
}

}  // namespace

Result<std::vector<const Workload*>> SelectWorkloads(const Task& task, const std::vector<std::string>& names) {
  for (const auto& name : names)
    if (!task.FindWorkload(name)) {
      std::string known;
      for (const auto& w : task.workloads) known += (known.empty() ? "" : ", ") + w.name;
      return Status::InvalidInput("--workload " + name + ": task " + task.name +
                                  " has no such workload (it has: " + known + ")");
    }
  std::vector<const Workload*> selected;
  for (const auto& w : task.workloads)
    if (names.empty() || std::find(names.begin(), names.end(), w.name) != names.end()) selected.push_back(&w);
  return selected;
}

std::vector<uint64_t> EvaluationSeeds(const EvalOptions& opt) {
  if (!opt.seeds.empty()) return opt.seeds;
  std::vector<uint64_t> seeds;
  while (static_cast<int>(seeds.size()) < kSeedsPerEvaluation) {
    const uint64_t s = SecureRandom64() & ((uint64_t{1} << 48) - 1);
    if (s != 0 && std::find(seeds.begin(), seeds.end(), s) == seeds.end()) seeds.push_back(s);
  }
  return seeds;
}

std::string TorchDevice(const EvalOptions& opt) {
  if (!opt.torch_device.empty()) return opt.torch_device;
  if (const char* env = std::getenv("KPILOT_TORCH_DEVICE"); env && *env) return env;
  return "cuda:" + std::to_string(opt.device);
}

bool NeedsGpu(const Task& task) {
  if (task.backend != Backend::kCuda) return false;
  return task.reference.kind != ReferenceKind::kPython || TorchDevice(EvalOptions{}) != "cpu";
}

std::string GpuLockDir() {
  const char* dir = std::getenv("KPILOT_LOCK_DIR");
  return dir && *dir ? dir : "/tmp";
}

std::vector<std::string> SandboxHiddenPaths(const Task& task) {
  std::vector<std::string> hide;
  if (!task.dir.empty()) hide.push_back(task.dir.string());
  if (const char* home = std::getenv("HOME"); home && *home && std::string(home) != "/") hide.push_back(home);
  return hide;
}

void AddSandboxPath(const std::filesystem::path& path, std::vector<std::string>* list) {
  if (path.empty() || path == path.root_path()) return;
  if (std::find(list->begin(), list->end(), path.string()) == list->end()) list->push_back(path.string());
}

void HideObjectOrigin(const std::filesystem::path& object, std::vector<std::string>* hide) {
  const std::filesystem::path cache = object.parent_path().parent_path();
  AddSandboxPath(cache, hide);
  std::error_code ec;
  if (std::filesystem::exists(cache.parent_path() / "kpilot.db", ec)) AddSandboxPath(cache.parent_path(), hide);
}

Status StageObjects(RunRequest& request, const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  std::vector<std::string*> objects = {&request.reference_object, &request.baseline_object, &request.candidate_object};
  for (auto& o : request.sweep_objects) objects.push_back(&o);
  std::error_code ec;
  fs::create_directories(dir / "objects", ec);
  if (ec) return Status::Internal("creating " + (dir / "objects").string() + ": " + ec.message());
  std::map<std::string, std::string> staged;  // original → copy (reference and baseline are often one)
  for (std::string* o : objects) {
    if (o->empty()) continue;
    if (auto it = staged.find(*o); it != staged.end()) {
      *o = it->second;
      continue;
    }
    const fs::path from(*o);
    // A missing object stays named as it is: loading it is the runner's to report.
    if (!fs::exists(from, ec)) continue;
    // Cache entries are <cache>/<key>/object.so: the key keeps copies apart.
    const fs::path to =
        dir / "objects" /
        (std::to_string(staged.size()) + "-" + from.parent_path().filename().string() + "-" + from.filename().string());
    fs::create_hard_link(from, to, ec);
    if (ec) {
      ec.clear();
      fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
      if (ec) return Status::Internal("copying " + from.string() + " for the runner: " + ec.message());
    }
    staged[*o] = to.string();
    HideObjectOrigin(from, &request.sandbox_hide);
    *o = to.string();
  }
  return Status::Ok();
}

Verdict CompileErrorVerdict(const CompileOutput& c) {
  Verdict v;
  v.kind = VerdictKind::kCompileError;
  v.summary = c.timed_out ? "the compiler timed out" : "the candidate does not compile: " + c.first_error;
  v.evidence = {
      {"first_error", c.first_error}, {"log_excerpt", CompileLogExcerpt(c.log, 2000)}, {"timed_out", c.timed_out}};
  return v;
}

Workload DrawWorkload(const Task& task) {
  Workload w = task.workloads.front();
  w.name = "drawn";
  w.flops = w.min_bytes = 0;
  w.line = 0;
  for (const auto& [axis, range] : task.draw_axes) {
    const uint64_t draw = SecureRandom64();
    const uint64_t span = static_cast<uint64_t>(range.second - range.first) + 1;
    w.axes[axis] = range.first + static_cast<int64_t>(draw % span);
    w.name += " " + axis + "=" + std::to_string(w.axes[axis]);
  }
  return w;
}

std::optional<Verdict> NarrowTensorCoreVerdict(const Task& task, const CompileOutput& compiled) {
  if (compiled.sass.empty()) return std::nullopt;
  std::optional<DType> cp = task.compute_precision;
  if (!cp && !task.outputs.empty()) cp = task.outputs.front().dtype;
  if (!cp || (*cp != DType::kF32 && *cp != DType::kF64)) return std::nullopt;
  for (const auto& in : task.inputs)
    if (IsFloat(in.dtype) && in.dtype != DType::kF32 && in.dtype != DType::kF64) return std::nullopt;
  std::vector<std::string> ops = NarrowTensorCoreOps(ParseSass(compiled.sass));
  if (ops.empty()) return std::nullopt;
  Verdict v;
  v.kind = VerdictKind::kIncorrect;
  v.summary = "lowered precision: the task computes in " + std::string(DTypeName(*cp)) +
              " but the candidate's SASS runs tensor-core instructions on narrower operands (" + ops.front() +
              (ops.size() > 1 ? ", and " + std::to_string(ops.size() - 1) + " more" : "") + ")";
  v.evidence = {{"narrow_tensor_core_ops", ops}, {"compute_precision", DTypeName(*cp)}};
  return v;
}

Result<RunRequest> BuildRunRequest(const Task& task, const EvalOptions& opt) {
  RunRequest req;
  req.backend = task.backend;
  req.scalars = task.scalars;
  auto selected = SelectWorkloads(task, opt.workloads);
  if (!selected.ok()) return selected.status();
  auto add = [&](const Workload& w, bool timed) {
    RunWorkload rw;
    rw.name = w.name;
    rw.timed = timed;
    for (const auto& in : task.inputs) rw.inputs.push_back(ToRunTensor(task, in, w, false));
    for (const auto& out : task.outputs) rw.outputs.push_back(ToRunTensor(task, out, w, true));
    for (const auto& s : task.scalars) {
      auto it = w.scalar_values.find(s.name);
      rw.scalar_values.push_back(it == w.scalar_values.end() ? s.value : it->second);
    }
    rw.flops = w.flops;
    rw.min_bytes = w.min_bytes;
    req.workloads.push_back(std::move(rw));
  };
  for (const Workload* wp : *selected) add(*wp, true);
  if (opt.draw && !task.draw_axes.empty() && !task.workloads.empty()) add(DrawWorkload(task), false);
  req.seeds = EvaluationSeeds(opt);
  req.time = opt.time;
  req.timing = opt.timing;
  req.timeout_s = opt.timeout_s;
  req.sandbox = opt.sandbox;
  req.address_space_bytes = opt.address_space_bytes;
  req.device = opt.device;
  req.energy = opt.energy;
  req.libraries = task.libraries;
  req.compute_precision = task.compute_precision;
  req.calibration = opt.calibration;
  req.lock_dir = GpuLockDir();
  req.sandbox_hide = SandboxHiddenPaths(task);
  return req;
}

Evaluator::Evaluator(Toolchain& toolchain, ProcessRunner& processes, std::filesystem::path runner_exe,
                     PythonTaskRunner* python)
    : toolchain_(toolchain), processes_(processes), runner_exe_(std::move(runner_exe)), python_(python) {}

Result<Evaluator::FixedObjects> Evaluator::CompileFixed(const Task& task, const EvalOptions& opt) {
  // The reference and baseline are the task's: a failure to compile them is the task's fault.
  CompileOptions ref_opts = opt.compile;
  ref_opts.want_sass = false;
  auto reference = toolchain_.Compile(task.reference.path, {}, ref_opts);
  if (!reference.ok()) return reference.status();
  if (!reference->ok)
    return Status::InvalidInput("the task's reference " + task.reference.path.string() +
                                " does not compile: " + reference->first_error);
  FixedObjects f{reference->object, reference->object, ""};
  if (opt.baseline_source) {
    auto base = toolchain_.Compile(*opt.baseline_source, opt.baseline_params, ref_opts);
    if (!base.ok()) return base.status();
    if (!base->ok)
      return Status::InvalidInput("the baseline " + opt.baseline_source->string() +
                                  " does not compile: " + base->first_error);
    f.baseline = base->object;
    f.baseline_name = opt.baseline_name;
  } else if (!task.baselines.empty()) {
    auto base = toolchain_.Compile(task.Baseline().path, {}, ref_opts);
    if (!base.ok()) return base.status();
    if (!base->ok)
      return Status::InvalidInput("the task's baseline " + task.Baseline().path.string() +
                                  " does not compile: " + base->first_error);
    f.baseline = base->object;
  }
  return f;
}

Status Evaluator::CompileFixedObjects(const Task& task, const EvalOptions& opt) {
  if (task.reference.kind == ReferenceKind::kPython) return Status::Ok();
  auto fixed = CompileFixed(task, opt);
  return fixed.ok() ? Status::Ok() : fixed.status();
}

Result<Evaluation> Evaluator::Evaluate(const Task& task, const std::filesystem::path& candidate, const EvalOptions& opt,
                                       RunnerChannel* runner) {
  if (task.reference.kind == ReferenceKind::kPython) return EvaluatePython(task, candidate, opt, runner);
  auto t_start = std::chrono::steady_clock::now();
  Evaluation e;
  e.task = task.name;
  e.candidate = candidate.string();
  e.params = opt.params;
  e.backend = task.backend;
  e.baseline = task.Baseline().name;

  std::string want_ext = task.backend == Backend::kCuda ? ".cu" : ".cpp";
  if (candidate.extension() != want_ext)
    return Status::InvalidInput(candidate.string() + ": task " + task.name + " uses the " +
                                std::string(BackendName(task.backend)) + " backend, so candidates are " + want_ext +
                                " files");
  auto request = BuildRunRequest(task, opt);
  if (!request.ok()) return request.status();

  auto fixed = CompileFixed(task, opt);
  if (!fixed.ok()) return fixed.status();
  if (!fixed->baseline_name.empty()) e.baseline = fixed->baseline_name;
  CompileOptions cand_opts = opt.compile;
  cand_opts.cutlass = cand_opts.cutlass && task.cutlass;
  auto compiled = toolchain_.Compile(candidate, opt.params, cand_opts);
  if (!compiled.ok()) return compiled.status();
  e.compile = *compiled;
  e.compile_s = SecondsSince(t_start);
  if (!compiled->ok) {
    e.verdict = CompileErrorVerdict(*compiled);
    e.total_s = SecondsSince(t_start);
    return e;
  }
  if (auto narrow = NarrowTensorCoreVerdict(task, *compiled)) {
    e.verdict = *narrow;
    e.total_s = SecondsSince(t_start);
    return e;
  }

  request->reference_object = fixed->reference.string();
  request->baseline_object = fixed->baseline.string();
  request->candidate_object = compiled->object.string();

  auto t_run = std::chrono::steady_clock::now();
  auto outcome = runner ? runner->Run(*request) : RunRunnerProcess(processes_, runner_exe_, *request);
  e.run_s = SecondsSince(t_run);
  if (!outcome.ok()) return outcome.status();
  RunResult run = std::move(outcome->result);
  if (run.status == "error") return Status::InvalidInput(run.message);
  e.run = run;
  e.verdict = VerdictFromRun(run);
  if (e.verdict.passed()) SummarizeTimings(run, &e);
  e.total_s = SecondsSince(t_start);
  return e;
}

Result<RunnerOutcome> RunRunnerProcess(ProcessRunner& processes, const std::filesystem::path& runner_exe,
                                       const RunRequest& request, const RunnerLaunch& launch) {
  auto workdir = launch.requests_root.empty() ? TempDir::Create("kpilot-run-")
                                              : TempDir::CreateIn(launch.requests_root, "kpilot-run-");
  if (!workdir.ok()) return workdir.status();
  RunRequest staged = request;
  KPILOT_RETURN_IF_ERROR(StageObjects(staged, workdir->path()));
  std::filesystem::path request_path = workdir->path() / "request.json";
  KPILOT_RETURN_IF_ERROR(WriteFileAtomic(request_path, ToJson(staged).dump()));

  ProcessSpec spec;
  spec.argv = launch.wrapper;
  for (const std::string& arg : {runner_exe.string(), std::string("--request"), request_path.string()})
    spec.argv.push_back(arg);
  spec.cwd = workdir->path();
  spec.env = RunnerEnvironment(launch.extra_env);
  // Backstop only: the runner enforces request.timeout_s itself, from after its wait for the GPU lock.
  spec.timeout_s = request.timeout_s + launch.backstop_s;
  spec.max_output_bytes = 96u << 20;  // above the supervisor's own cap, so a result is never cut
  auto t0 = std::chrono::steady_clock::now();
  auto proc = processes.Run(spec);
  if (!proc.ok()) return proc.status().WithContext("starting kpilot-runner");
  RunnerOutcome out;
  out.wall_s = SecondsSince(t0);
  out.process = std::move(proc).value();
  // ncu prints its CSV around the runner's result line: the result is the line that parses.
  nlohmann::json j = nlohmann::json::parse(out.process.out, nullptr, false);
  if (j.is_discarded() && !launch.wrapper.empty()) {
    std::istringstream lines(out.process.out);
    for (std::string line; std::getline(lines, line);) {
      if (line.empty() || line.front() != '{') continue;
      j = nlohmann::json::parse(line, nullptr, false);
      if (!j.is_discarded()) break;
    }
  }
  auto parsed = ParseRunnerResult(j);
  if (parsed.ok()) {
    out.result = std::move(parsed).value();
  } else {
    // The supervisor always prints a result; without one it was itself killed (the backstop).
    out.result.status = out.process.timed_out ? "timeout" : "runtime_error";
    out.result.message = "kpilot-runner ended without a result (" + out.process.Describe(spec.timeout_s) +
                         "): " + Tail(out.process.err, 500);
  }
  return out;
}

ServedRunner::ServedRunner(std::filesystem::path runner_exe, double backstop_s)
    : ServedRunner(std::move(runner_exe), ServedRunnerOptions{{}, {}, backstop_s}) {}

ServedRunner::ServedRunner(std::filesystem::path runner_exe, ServedRunnerOptions options)
    : runner_exe_(std::move(runner_exe)), options_(std::move(options)) {}

ServedRunner::~ServedRunner() = default;  // the LiveProcess kills the server's group

Result<RunnerOutcome> ServedRunner::Run(const RunRequest& request) {
  std::error_code exists_ec;
  // Again when the folder went away under it (a temporary-folder cleaner, the caller's TMPDIR).
  // A server started before then keeps the view of the file system it started with, where a new
  // folder under a private /tmp does not exist: a fresh server takes the new folder's requests.
  if (!requests_ || !std::filesystem::is_directory(requests_->path(), exists_ec)) {
    auto root = options_.requests_root.empty() ? TempDir::Create("kpilot-serve-")
                                               : TempDir::CreateIn(options_.requests_root, "kpilot-serve-");
    if (!root.ok()) return root.status();
    requests_.emplace(std::move(root).value());
    server_.reset();
  }
  auto workdir = TempDir::CreateIn(requests_->path(), "run-");
  if (!workdir.ok()) return workdir.status();
  RunRequest staged = request;
  KPILOT_RETURN_IF_ERROR(StageObjects(staged, workdir->path()));
  const std::filesystem::path request_path = workdir->path() / "request.json";
  KPILOT_RETURN_IF_ERROR(WriteFileAtomic(request_path, ToJson(staged).dump()));
  auto t0 = std::chrono::steady_clock::now();
  // A server that ended between requests never saw this one: a fresh one may take it.
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!server_ || !server_->running()) {
      server_.reset();
      ProcessSpec spec;
      spec.argv = options_.wrapper;
      spec.argv.push_back(runner_exe_.string());
      spec.argv.push_back("--serve");
      spec.cwd = "/";  // each request runs in its own folder; the server holds none between them
      spec.env = RunnerEnvironment({});
      auto started = LiveProcess::Start(spec);
      if (!started.ok()) return started.status().WithContext("starting kpilot-runner --serve");
      server_ = std::move(started).value();
      ++servers_started_;
    }
    if (server_->WriteLine(request_path.string()).ok()) break;
    const ProcessResult gone = server_->Stop();
    server_.reset();
    if (attempt == 1)
      return Status::Internal(runner_exe_.string() + " --serve ended before it read a request, twice (" +
                              gone.Describe(0) + "): " + Tail(gone.err, 500));
  }
  RunnerOutcome out;
  auto line = server_->ReadLine(request.timeout_s + options_.backstop_s);
  out.wall_s = SecondsSince(t0);
  if (line.ok()) {
    out.process.out = *line;
    out.process.exit_code = 0;
    auto parsed = ParseRunnerResult(nlohmann::json::parse(*line, nullptr, false));
    if (parsed.ok()) {
      out.result = std::move(parsed).value();
      const std::optional<ServedState> served = out.result.Report().served;
      if (!served || !served->ready) server_.reset();  // it exits by itself
      return out;
    }
  }
  // No result: the server died, hung past the backstop or printed something else.
  out.process = server_->Stop();
  server_.reset();
  const bool timed_out = !line.ok() && line.status().code() == StatusCode::kTimeout;
  out.process.timed_out = timed_out;
  out.result.status = timed_out ? "timeout" : "runtime_error";
  out.result.message =
      runner_exe_.string() + " --serve ended without a result (" +
      (line.ok() ? "it printed: " + Tail(*line, 200) : out.process.Describe(request.timeout_s + options_.backstop_s)) +
      "): " + Tail(out.process.err, 500);
  return out;
}

}  // namespace kpilot
