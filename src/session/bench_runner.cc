// kpilot bench's problems run for real (docs/bench.md): each problem loaded, optimized through an
// OptimizeSession — or, with --eval-only or --eval-reference, its candidate evaluated — on the GPU
// it was given, then timed against torch.compile from the store's baseline cache or afresh.
#include "session/bench_runner.h"

#include <algorithm>
#include <chrono>
#include <mutex>

#include "core/text.h"
#include "device/device.h"
#include "optimize/optimizer.h"
#include "pytorch/pytorch.h"
#include "task/loader.h"

namespace kpilot {
namespace {

using nlohmann::json;

// The first native candidate of a task folder (candidates/*.cu for cuda, *.cpp for host).
std::filesystem::path FirstCandidate(const Task& task) {
  std::vector<std::filesystem::path> found;
  std::string ext = task.backend == Backend::kCuda ? ".cu" : ".cpp";
  std::error_code ec;
  for (auto& e : std::filesystem::directory_iterator(task.dir / "candidates", ec))
    if (e.path().extension() == ext) found.push_back(e.path());
  std::sort(found.begin(), found.end());
  return found.empty() ? std::filesystem::path() : found.front();
}

// The name a Trace gives the candidate: a Solution JSON's own `name`, else the file's stem.
std::string SolutionName(const std::filesystem::path& candidate) {
  if (candidate.extension() == ".json")
    if (auto text = ReadFile(candidate); text.ok()) {
      json j = json::parse(*text, nullptr, false);
      if (j.is_object() && j.contains("name") && j["name"].is_string()) return j["name"].get<std::string>();
    }
  return candidate.stem().string();
}

// flashinfer: one Trace record per workload of the final evaluation of `solution`.
json FlashInferTraces(const Task& task, const Evaluation& e, const std::string& solution) {
  json out = json::array();
  const char* failed = e.verdict.kind == VerdictKind::kCompileError ? "COMPILE_ERROR"
                       : e.verdict.kind == VerdictKind::kTimeout    ? "TIMEOUT"
                       : e.verdict.kind == VerdictKind::kIncorrect  ? "INCORRECT_NUMERICAL"
                                                                    : "RUNTIME_ERROR";
  for (const auto& w : task.workloads) {
    TraceInput in;
    in.definition = task.name;
    in.workload = w.record.empty() ? json{{"uuid", w.name}} : json::parse(w.record, nullptr, false);
    in.solution = solution;
    bool bad = false;
    for (const auto& c : e.run.checks)
      if (c.workload == w.name) {
        in.max_abs_error = std::max(in.max_abs_error, c.max_abs_error);
        in.max_rel_error = std::max(in.max_rel_error, c.max_rel_error);
        bad |= !c.ok;
      }
    const WorkloadTiming* t = nullptr;
    for (const auto& x : e.timings)
      if (x.workload == w.name) t = &x;
    in.status = e.verdict.passed() && t && !bad ? "PASSED" : bad ? "INCORRECT_NUMERICAL" : failed;
    if (in.status != "PASSED") in.log = e.verdict.summary;
    if (t) {
      in.latency_ms = t->candidate_reported_ms > 0 ? t->candidate_reported_ms : t->candidate.median;
      in.reference_latency_ms = t->baseline_reported_ms > 0 ? t->baseline_reported_ms : t->baseline.median;
    }
    const RunReport report = e.run.Report();
    in.environment = {{"hardware", report.gpu_name}, {"libs", {{"torch", report.torch_version}}}};
    in.timestamp = UtcNow();
    out.push_back(TraceRecord(in));
  }
  return out;
}

// Adds one torch worker run's step seconds to the problem's.
void AddSteps(const RunReport& report, ProblemResult* r) {
  if (report.import_torch_s <= 0) return;  // not a torch worker run
  r->seconds.python_start += report.python_start_s;
  r->seconds.import_torch += report.import_torch_s;
  r->seconds.setup += report.setup_s;
  r->seconds.compile += report.compile_s;
  r->seconds.lock_wait += report.lock_wait_s;
  r->seconds.checks += report.check_s;
  r->seconds.timing += report.timing_s;
  r->seconds.evaluations += 1;
}

// Catches the optimizer's run id from its first event, so the bench can record it at once.
class RunIdSink : public ProgressSink {
 public:
  explicit RunIdSink(std::function<void(int64_t)> started) : started_(std::move(started)) {}
  void Event(const json& e) override {
    if (!told_ && e.contains("run")) {
      told_ = true;
      started_(e["run"].get<int64_t>());
    }
  }

 private:
  std::function<void(int64_t)> started_;
  bool told_ = false;
};

// The real side effects of a problem: load it, optimize (or evaluate) it on `device`, and read its
// eager and torch.compile speedups.
class LiveRunner : public ProblemRunner {
 public:
  LiveRunner(Store& store, const json& config, InstallLayout layout, std::ostream* notices,
             RunnerChannelFactory channels, ProcessRunner* compile_processes, int compile_threads)
      : store_(store),
        config_(config),
        layout_(std::move(layout)),
        notices_(notices),
        channels_(std::move(channels)),
        compile_processes_(compile_processes),
        compile_threads_(compile_threads) {}

  ProblemResult Run(const BenchProblem& p, int device, int64_t resume_run,
                    const std::function<void(int64_t)>& started) override {
    ProblemResult r;
    Status s = RunOne(p, device, resume_run, started, &r);
    if (!s.ok()) r.error = s.message();
    return r;
  }

 private:
  Status RunOne(const BenchProblem& p, int device, int64_t resume_run, const std::function<void(int64_t)>& started,
                ProblemResult* r) {
    LoadTaskOptions source;
    source.python = config_.value("python", "");
    source.pythonpath = layout_.python_package;
    const auto load_start = std::chrono::steady_clock::now();
    auto loaded = LoadAnyTask(SystemProcessRunner(), p.path, source);
    r->seconds.load = std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
    if (!loaded.ok()) return loaded.status();
    Task task = *loaded;
    auto options = OptimizeOptionsFromJson(config_.at("optimize"));
    if (!options.ok()) return options.status();
    OptimizeOptions o = *options;
    o.task_dir = p.path.string();
    o.device = std::max(device, 0);
    // --eval-reference: the problem's own file is the candidate, which the harness evaluates as
    // the reference itself (a check of kpilot on the suite: it passes, its speedup's CI holds 1).
    const bool eval_reference = config_.value("eval_reference", false);
    std::string eval_only = eval_reference ? p.path.string() : config_.value("eval_only", "");
    if (eval_reference) {
      o.from = p.path.string();
    } else if (!eval_only.empty()) {
      auto c = FindEvalCandidate(eval_only, p);
      if (!c.ok()) return c.status();
      o.from = c->string();
    } else {
      std::filesystem::path from = !p.native.empty()      ? p.native
                                   : !p.model_new.empty() ? p.model_new
                                                          : FirstCandidate(task);
      if (from.empty())
        return Status::InvalidInput("no starting candidate for " + p.id + " — add candidates/" + p.stem +
                                    "/native.cu (or candidates/*.cu|.cpp in a task folder)");
      o.from = from.string();
    }
    KPILOT_RETURN_IF_ERROR(AdoptCandidateParams(&task, o.from));
    if (o.arch.empty() && NeedsGpu(task))
      if (auto gpu = GpuAtIndex(SystemGpuProbe(), o.device); gpu.ok()) o.arch = gpu->Arch();
    // The params generator has nothing to search in a start that declares no params (e.g. a
    // definition's hand-written native kernel): the start is evaluated as it is, and said so.
    const bool untunable = eval_only.empty() && o.generator == "params" && task.params.empty();
    SessionSettings settings;
    settings.layout = layout_;
    settings.evaluate_only = !eval_only.empty() || untunable;
    settings.python = source.python;
    settings.notices = notices_;
    settings.channels = channels_;
    settings.compile_processes = compile_processes_;
    settings.compile_threads = compile_threads_;
    Result<std::unique_ptr<OptimizeSession>> session = Status::Internal("not opened");
    {
      std::lock_guard<std::mutex> lock(session_mu_);
      session = OptimizeSession::Open(task, o, store_, settings);
    }
    if (!session.ok()) return session.status();
    Executor& executor = (*session)->executor();
    Evaluation final;
    ParamValues best_params;  // the best candidate's -D values (the compile baseline times it with them)
    if (untunable)
      r->warnings.push_back("the starting candidate " + std::filesystem::path(o.from).filename().string() +
                            " declares no tunable params (no kpilot-params block): evaluated as it is — give it "
                            "a params block, or --generator llm:…|command:… to search");
    if (!eval_only.empty() || untunable) {
      EvalJob job;
      job.task = &task;
      job.source = o.from;
      job.options = BaseEvalOptions(o);
      EvalJobResult done = executor.Submit(std::move(job)).get();
      if (!done.status.ok()) return done.status;
      final = done.evaluation;
      r->evaluations = 1;
      r->candidate = o.from;
      r->where = done.where;
    } else {
      KPILOT_RETURN_IF_ERROR(Optimize(o, **session, resume_run, started, r, &final, &best_params));
    }
    r->verdict = std::string(VerdictName(final.verdict.kind));
    if (!final.verdict.passed()) r->message = final.verdict.summary;
    r->speedup_eager = final.verdict.passed() ? final.speedup_geomean : 0;
    for (const auto& t : final.timings) {
      const bool passed = final.verdict.passed();
      WorkloadScore w{t.workload, passed, passed ? t.speedup.ratio : 0};
      if (passed) {
        w.ci_lo = t.speedup.ci.lo;
        w.ci_hi = t.speedup.ci.hi;
      }
      w.candidate_ms = t.candidate_reported_ms > 0 ? t.candidate_reported_ms : t.candidate.median;
      w.eager_ms = t.baseline_reported_ms > 0 ? t.baseline_reported_ms : t.baseline.median;
      r->workloads.push_back(w);
    }
    const RunReport report = final.run.Report();
    AddSteps(report, r);
    r->out_of_memory = report.out_of_memory;
    for (const auto& f : report.reference_flaws) {
      if (auto flaw = ParseReferenceFlaw(f.flaw))
        r->reference_findings.push_back({*flaw, f.evidence});
      else
        r->warnings.push_back("the worker reported a reference flaw kpilot does not know: " + f.flaw);
    }
    for (const auto& w : final.run.warnings) r->warnings.push_back(w);
    if (task.format == TaskFormat::kFlashInfer) r->traces = FlashInferTraces(task, final, SolutionName(r->candidate));
    // A torch.compile figure that cannot be had (torch < 2.0, an op inductor cannot compile) leaves
    // the problem's eager result standing: it is counted as not fast against torch.compile.
    if (final.verdict.passed() && task.reference.kind == ReferenceKind::kPython &&
        config_.value("compile_baseline", true))
      if (Status c = CompileBaseline(task, o, executor, final, best_params, r); !c.ok())
        r->warnings.push_back(c.message());
    r->gpu_s = executor.BusySeconds();
    return Status::Ok();
  }

  Status Optimize(const OptimizeOptions& o, OptimizeSession& session, int64_t resume_run,
                  const std::function<void(int64_t)>& started, ProblemResult* r, Evaluation* final,
                  ParamValues* best_params) {
    RunIdSink sink(started);
    Optimizer optimizer = session.MakeOptimizer(sink);
    auto res = resume_run > 0 ? optimizer.Resume(resume_run) : optimizer.Run(o);
    if (!res.ok() && resume_run > 0) {
      // A run that cannot be continued (it had finished, or its record is damaged) starts over.
      res = optimizer.Run(o);
    }
    if (!res.ok()) return res.status();
    r->run_id = res->run_id;
    r->evaluations = res->evaluations;
    r->requests = res->spend.requests;
    r->input_tokens = res->spend.input_tokens;
    r->output_tokens = res->spend.output_tokens;
    r->cost_usd = res->spend.cost_usd;
    std::filesystem::path best = store_.dir() / "runs" / std::to_string(res->run_id) / "best";
    KPILOT_RETURN_IF_ERROR(ExportRun(store_, res->run_id, best));
    r->candidate = (best / res->best_source_name).string();
    *final = res->final;
    *best_params = res->best_params;
    return Status::Ok();
  }

  // The best against torch.compile: from the baseline cache when this GPU, torch version and
  // procedure timed it before, else timed now (and cached).
  Status CompileBaseline(const Task& task, const OptimizeOptions& o, Executor& executor, const Evaluation& final,
                         const ParamValues& params, ProblemResult* r) {
    auto b = TorchBaselines(&store_, task, final, o.timing);
    if (!b.ok()) return b.status();
    if ((*b)["compile"].is_null()) {
      EvalJob job;
      job.task = &task;
      job.source = r->candidate.empty() ? std::filesystem::path(o.from) : std::filesystem::path(r->candidate);
      job.params = params;
      job.options = BaseEvalOptions(o);
      job.options.python_baseline = "compile";
      job.options.check_trials = 1;  // the candidate has just passed its own evaluation: this one times
      EvalJobResult done = executor.Submit(std::move(job)).get();
      if (!done.status.ok()) return done.status.WithContext("timing torch.compile");
      AddSteps(done.evaluation.run.Report(), r);
      if (!done.evaluation.verdict.passed())
        return Status::Unavailable("no torch.compile figure: " + done.evaluation.verdict.summary);
      b = TorchBaselines(&store_, task, done.evaluation, o.timing);
      if (!b.ok()) return b.status();
    }
    if ((*b)["compile"].is_object()) {
      r->compile_measured = true;
      r->compile_cached = (*b)["compile"].value("cached", false);
      r->speedup_compile = (*b)["compile"].value("speedup", 0.0);
    }
    return Status::Ok();
  }

  Store& store_;
  json config_;
  InstallLayout layout_;
  std::ostream* notices_;
  const RunnerChannelFactory channels_;
  ProcessRunner* const compile_processes_;
  const int compile_threads_;
  std::mutex session_mu_;  // problems run side by side; card notices go to one stream
};

}  // namespace

int TorchThreadsPerProblem(unsigned cpus, size_t in_flight) {
  if (in_flight <= 1) return 0;
  return std::max(1, static_cast<int>(cpus / in_flight));
}

std::unique_ptr<ProblemRunner> MakeBenchProblemRunner(Store& store, const nlohmann::json& config,
                                                      const InstallLayout& layout, std::ostream* notices,
                                                      RunnerChannelFactory channels, ProcessRunner* compile_processes,
                                                      int compile_threads) {
  return std::make_unique<LiveRunner>(store, config, layout, notices, std::move(channels), compile_processes,
                                      compile_threads);
}

}  // namespace kpilot
