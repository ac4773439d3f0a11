#include "exec/executor.h"

#include <algorithm>
#include <iterator>
#include <map>

#include "core/fs.h"
#include "core/sha256.h"
#include "profile/collect.h"

namespace kpilot {
namespace {

bool Cancelled(const EvalJob& job) { return job.cancelled && job.cancelled->load(); }

}  // namespace

LocalExecutor::LocalExecutor(Toolchain& toolchain, ProcessRunner& processes, std::filesystem::path runner_exe,
                             int compile_threads, PythonTaskRunner* python, std::vector<int> devices, RunnerReuse reuse,
                             RunnerChannelFactory channels)
    : toolchain_(toolchain),
      processes_(processes),
      runner_exe_(runner_exe),
      evaluator_(toolchain, processes, std::move(runner_exe), python),
      reuse_(reuse),
      channels_(std::move(channels)),
      max_footprint_compiles_(std::max(1, compile_threads / 2)),
      queues_(std::max<size_t>(1, devices.size())) {
  for (int i = 0; i < std::max(1, compile_threads); ++i) compilers_.emplace_back([this] { CompileLoop(); });
  if (devices.empty()) devices = {-1};
  for (size_t q = 0; q < devices.size(); ++q) evaluators_.emplace_back([this, d = devices[q], q] { EvalLoop(d, q); });
}

LocalExecutor::~LocalExecutor() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  compile_cv_.notify_all();
  eval_cv_.notify_all();
  for (auto& t : compilers_) t.join();
  for (auto& t : evaluators_) t.join();
}

std::future<EvalJobResult> LocalExecutor::Submit(EvalJob job) {
  auto p = std::make_shared<Pending>();
  p->job = std::move(job);
  p->result.submitted_s = ElapsedSeconds();
  auto future = p->promise.get_future();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (p->job.compile_only) {
      footprint_queue_.push_back(std::move(p));
    } else {
      compile_queue_.push_back(std::move(p));
    }
  }
  compile_cv_.notify_one();
  return future;
}

double LocalExecutor::ElapsedSeconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

int LocalExecutor::Devices() const { return static_cast<int>(queues_); }

int LocalExecutor::EvaluationsReady() const {
  std::lock_guard<std::mutex> lock(mu_);
  return evaluations_ready_;
}

double RunnerChecksAndTimingSeconds(const nlohmann::json& run_details) {
  return ReadRunReport(run_details).ChecksAndTimingSeconds();
}

double LocalExecutor::ChecksAndTimingSeconds() const {
  std::lock_guard<std::mutex> lock(mu_);
  return checks_timing_s_;
}

double LocalExecutor::BusySeconds() const {
  std::lock_guard<std::mutex> lock(mu_);
  const double now = ElapsedSeconds();
  double busy = busy_s_;
  for (const auto& [job, since] : running_) busy += std::max(0.0, now - since);
  return busy;
}

void LocalExecutor::CompileLoop() {
  for (;;) {
    std::shared_ptr<Pending> p;
    {
      std::unique_lock<std::mutex> lock(mu_);
      // Compile-only jobs take at most half the compile threads: the rest stay free for drafts
      // bound for evaluation that arrive while they run.
      auto footprint_ok = [&] { return !footprint_queue_.empty() && footprints_compiling_ < max_footprint_compiles_; };
      compile_cv_.wait(
          lock, [&] { return !compile_queue_.empty() || footprint_ok() || (stopping_ && footprint_queue_.empty()); });
      if (!compile_queue_.empty()) {
        p = std::move(compile_queue_.front());
        compile_queue_.pop_front();
      } else if (!footprint_queue_.empty()) {
        // The first compile-only job someone waits for, else the newest.
        auto it = std::find_if(footprint_queue_.begin(), footprint_queue_.end(),
                               [](const auto& q) { return !q->job.waited_for || q->job.waited_for->load(); });
        if (it == footprint_queue_.end()) it = std::prev(footprint_queue_.end());
        p = std::move(*it);
        footprint_queue_.erase(it);
      } else {
        return;
      }
      if (Cancelled(p->job)) {
        if (p->job.compile_only)
          p->result.status = Status::Unavailable("the compile-only job was cancelled before it ran");
        p->result.skipped = p->result.cancelled = true;
        p->promise.set_value(std::move(p->result));
        continue;
      }
      ++compiling_;
      if (p->job.compile_only) ++footprints_compiling_;
    }
    // Compile ahead of the device queue; the evaluation's own compile is then a cache hit.
    // A job's compiler is killed when the job is cancelled mid-compile.
    if (p->job.cancelled) p->job.options.compile.cancel = p->job.cancelled;
    // Compilers yield the cores to the runner timing on a GPU (kCompileNice).
    p->job.options.compile.nice = std::max(p->job.options.compile.nice, kCompileNice);
    // SASS is not on the way to the GPU: a compile-only job's result does not carry it, and a
    // draft takes only the SASS that is ready with its object (made beside its compile, or
    // cached); the rest is extracted while it is evaluated (Pending::sass_deferred). A counter
    // profile's tools read it before they run, so its job keeps it inline (a cache hit by then).
    // Compile-only jobs do not make their SASS beside too: measured on the H200, no result then
    // waited for SASS, but the extra compiles slowed the drafts' (median 2.31 s against 1.99 s on
    // row_softmax) and the GPU was no busier (docs/results.md, "SASS beside the compile").
    CompileOptions with_sass = p->job.options.compile;
    with_sass.sass_inline = true;
    const bool defer_sass = !p->job.compile_only && !p->job.counter_tools && with_sass.want_sass;
    if (p->job.compile_only) p->job.options.compile.want_sass = false;
    if (defer_sass) p->job.options.compile.sass_inline = false;
    p->result.compile_start_s = ElapsedSeconds();
    // The reference and baseline too, beside the draft (cache hits but the first time), so that
    // the evaluation does not compile them while it holds the GPU. A failure here is the
    // evaluation's to report.
    // They are the run's, not the job's: a cancelled job does not stop them.
    std::future<Status> fixed;
    if (!p->job.compile_only)
      fixed = std::async(std::launch::async, [this, &p, o = p->job.options]() mutable {
        o.compile.cancel = nullptr;
        return evaluator_.CompileFixedObjects(*p->job.task, o);
      });
    auto compiled = toolchain_.Compile(p->job.source, p->job.params, p->job.options.compile);
    if (fixed.valid()) (void)fixed.get();
    p->result.compile_end_s = ElapsedSeconds();
    p->result.compile_s = p->result.compile_end_s - p->result.compile_start_s;
    // A job cancelled while it compiled ends here, whatever its compile gave, and is not admitted
    // (its object is not taken as evaluated).
    const bool cancelled = Cancelled(p->job);
    bool admitted = !p->job.compile_only && !cancelled;
    // Its report is all a compile-only job gives: a compile that could not run (cancelled, no
    // compiler) is an error, not a source that fails to compile.
    if (p->job.compile_only && !compiled.ok()) p->result.status = compiled.status();
    if (compiled.ok() && compiled->ok) {
      p->result.compiled = true;
      p->result.resources = compiled->resources;
      auto bytes = ReadFile(compiled->object);
      if (bytes.ok()) p->result.object_sha = Sha256Hex(*bytes);
      if (admitted && p->job.admit) admitted = p->job.admit(p->result.object_sha);
    }
    // A source that did not compile has no SASS to wait for.
    const bool sass_later =
        defer_sass && admitted && compiled.ok() && compiled->ok && compiled->sass_status == kSassLater;
    const std::filesystem::path source = p->job.source;
    const ParamValues params = p->job.params;
    {
      std::lock_guard<std::mutex> lock(mu_);
      --compiling_;
      if (p->job.compile_only) {
        --footprints_compiling_;
        compile_cv_.notify_one();  // a thread may wait for this slot
      }
      // The evaluation thread may be waiting for the last compile to finish before it exits.
      eval_cv_.notify_all();
      if (!admitted) {
        p->result.skipped = true;
        p->result.cancelled = cancelled;
        p->promise.set_value(std::move(p->result));
        continue;
      }
      if (sass_later) {
        p->sass_deferred = true;
        p->parts_left = 2;
      }
      ++evaluations_ready_;
      if (p->job.ahead)
        eval_queue_.push_front(p);
      else
        eval_queue_.push_back(p);
    }
    if (!sass_later) continue;
    // A cache hit when the entry has its SASS; otherwise cuobjdump runs now, beside the runner.
    auto sass = toolchain_.Compile(source, params, with_sass);
    {
      std::lock_guard<std::mutex> finish(p->finish_mu);
      if (sass.ok()) {
        p->sass = std::move(sass->sass);
        p->sass_status = std::move(sass->sass_status);
      } else {
        p->sass_status = "unavailable: " + sass.status().message();
      }
      p->sass_end_s = ElapsedSeconds();
    }
    FinishPart(p);
  }
}

void LocalExecutor::FinishPart(const std::shared_ptr<Pending>& p) {
  {
    std::lock_guard<std::mutex> lock(p->finish_mu);
    if (--p->parts_left > 0) return;
  }
  Evaluation& e = p->result.evaluation;
  p->result.sass_end_s = p->sass_end_s;
  if (p->sass_deferred && p->result.status.ok() && !p->result.skipped && e.compile.ok) {
    e.compile.sass = std::move(p->sass);
    e.compile.sass_status = std::move(p->sass_status);
  }
  if (p->job.on_done && p->result.status.ok() && !p->result.skipped) p->job.on_done(p->result);
  p->promise.set_value(std::move(p->result));
}

void LocalExecutor::EvalLoop(int device, size_t queue) {
  // This queue's served runners, one per GPU its jobs name (one, unless device is -1).
  std::map<int, std::unique_ptr<ServedRunner>> served;
  std::unique_ptr<RunnerChannel> channel;  // with channels_: this queue's
  Status channel_error = Status::Ok();
  // A channel that cannot be made for the moment (Unavailable: an allocation whose node failed)
  // is asked for again, up to three times; any other error is final for the job.
  auto make_channel = [&]() -> Status {
    Status last = Status::Ok();
    for (int attempt = 0; attempt < 3; ++attempt) {
      auto made = channels_(queue);
      if (made.ok()) {
        channel = std::move(made).value();
        return Status::Ok();
      }
      last = made.status();
      if (last.code() != StatusCode::kUnavailable) break;
    }
    return last;
  };
  for (;;) {
    std::shared_ptr<Pending> p;
    {
      std::unique_lock<std::mutex> lock(mu_);
      eval_cv_.wait(lock,
                    [&] { return !eval_queue_.empty() || (stopping_ && compile_queue_.empty() && compiling_ == 0); });
      if (eval_queue_.empty()) return;
      p = std::move(eval_queue_.front());
      eval_queue_.pop_front();
      if (Cancelled(p->job)) {
        --evaluations_ready_;
        p->result.skipped = p->result.cancelled = true;
      } else {
        p->result.eval_start_s = ElapsedSeconds();
        running_[p.get()] = p->result.eval_start_s;
      }
    }
    if (p->result.cancelled) {
      FinishPart(p);
      continue;
    }
    if (device >= 0) p->job.options.device = device;
    p->result.device = device;
    const Backend backend = p->job.task->backend;
    RunnerChannel* runner = nullptr;
    if (channels_) {
      if (!channel) channel_error = make_channel();
      runner = channel.get();
    } else if (reuse_ == RunnerReuse::kAll || (reuse_ == RunnerReuse::kCuda && backend == Backend::kCuda)) {
      auto& slot = served[p->job.options.device];
      if (!slot) slot = std::make_unique<ServedRunner>(runner_exe_);
      runner = slot.get();
    }
    const Task& task = *p->job.task;
    const Workload* w = task.workloads.empty()             ? nullptr
                        : p->job.options.workloads.empty() ? &task.workloads.back()
                                                           : task.FindWorkload(p->job.options.workloads.back());
    // A counter job whose caller has the candidate's evaluation already profiles it at once.
    const std::shared_ptr<const Evaluation>& have = p->job.counters_of;
    std::error_code ec;
    const bool same_gpu = p->job.counters_of_device < 0 || device < 0 || p->job.counters_of_device == device;
    p->result.evaluation_reused = p->job.counter_tools && have && same_gpu && w && CounterProfileCanTake(*have, *w) &&
                                  std::filesystem::exists(have->compile.object, ec);
    auto evaluate = [&] {
      return evaluator_.Evaluate(
          task, p->job.source,
          [&] {
            EvalOptions o = p->job.options;
            o.params = p->job.params;
            o.compile.cancel = nullptr;  // on its GPU, an evaluation runs to its end
            return o;
          }(),
          runner);
    };
    Result<Evaluation> e = p->result.evaluation_reused ? Result<Evaluation>(*have)
                           : channels_ && !channel     ? Result<Evaluation>(channel_error)
                                                       : evaluate();
    // A channel whose runner was lost (its allocation ended) gave no verdict: a new channel takes
    // the evaluation once more.
    if (channels_ && channel && !e.ok() && e.status().code() == StatusCode::kUnavailable) {
      channel.reset();
      const Status made = make_channel();
      if (made.ok()) {
        runner = channel.get();
        e = evaluate();
      } else {
        e = made.WithContext(e.status().message() + "; then");
      }
    }
    if (e.ok() && p->job.counter_tools) {
      if (!e->verdict.passed()) {
        // Not Unavailable: the profiler is not at fault, and the next best is profiled as usual.
        p->result.counters_status = Status::InvalidInput("the candidate did not pass this time: " + e->verdict.summary);
      } else if (!w) {
        p->result.counters_status = Status::InvalidInput("no workload to profile");
      } else {
        const double t0 = ElapsedSeconds();
        // With a channel, the profile's runner runs where the channel's does (a cluster node).
        auto got = ProfileWithCounters(processes_, runner_exe_, task, *w, p->job.options, *e, *p->job.counter_tools,
                                       p->job.counters, channels_ && runner ? runner->Place() : RunnerLaunch{});
        p->result.counters_s = ElapsedSeconds() - t0;
        if (got.ok())
          p->result.counters = std::move(got).value();
        else
          p->result.counters_status = got.status();
      }
    }
    p->result.eval_end_s = ElapsedSeconds();
    if (runner) p->result.where = runner->Where();
    {
      std::lock_guard<std::mutex> lock(mu_);
      busy_s_ += p->result.eval_end_s - p->result.eval_start_s;
      running_.erase(p.get());
      if (e.ok() && !p->result.evaluation_reused) checks_timing_s_ += RunnerChecksAndTimingSeconds(e->run.details);
      --evaluations_ready_;
    }
    if (e.ok())
      p->result.evaluation = std::move(e).value();
    else
      p->result.status = e.status();
    FinishPart(p);
  }
}

nlohmann::json RecordJson(const EvalJobResult& r) {
  nlohmann::json resources = nlohmann::json::array();
  for (const auto& k : r.resources) resources.push_back(ToJson(k));
  return {{"kpilot_job_record_version", 1},
          {"evaluation", RecordJson(r.evaluation)},
          {"object_sha", r.object_sha},
          {"compile_s", r.compile_s},
          {"compiled", r.compiled},
          {"resources", resources},
          {"eval_start_s", r.eval_start_s},
          {"eval_end_s", r.eval_end_s},
          {"device", r.device}};
}

Result<EvalJobResult> EvalJobResultFromRecord(const nlohmann::json& j) {
  try {
    if (!j.is_object() || j.value("kpilot_job_record_version", 0) != 1)
      return Status::InvalidInput("not an evaluation job record of version 1");
    EvalJobResult r;
    auto e = EvaluationFromRecord(j.at("evaluation"));
    if (!e.ok()) return e.status();
    r.evaluation = std::move(e).value();
    r.object_sha = j.at("object_sha").get<std::string>();
    r.compile_s = j.at("compile_s").get<double>();
    r.compiled = j.at("compiled").get<bool>();
    for (const auto& k : j.at("resources")) r.resources.push_back(KernelResourcesFromJson(k));
    r.eval_start_s = j.at("eval_start_s").get<double>();
    r.eval_end_s = j.at("eval_end_s").get<double>();
    r.device = j.at("device").get<int>();
    return r;
  } catch (const std::exception& ex) {
    return Status::InvalidInput(std::string("an evaluation job record is malformed: ") + ex.what());
  }
}

}  // namespace kpilot
