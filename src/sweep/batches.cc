// The sweep's evaluation: compiled objects in batches, one kpilot-runner process per batch, or
// with SweepEnv::channels one queue per channel (a Slurm allocation each), or the torch worker
// per object; with the recovery docs/sweep.md describes ("Failures inside a batch"): a batch
// whose process died is retried one object per process.
#include <algorithm>
#include <thread>

#include "sweep/space_file.h"
#include "sweep/sweep_run.h"

namespace kpilot {

using nlohmann::json;

namespace {

// Channels a queue makes in a row for one batch before the batch's result is the last failure.
constexpr int kChannelAttempts = 3;

}  // namespace

EvalOptions SweepRun::Options() const {
  EvalOptions opt;
  opt.workloads = {workload_};
  opt.seeds = {kSweepSeed};
  opt.draw = false;  // a space's verdicts stay the same from one sweep to the next
  opt.timing.max_seconds = options_.max_seconds;
  opt.device = options_.device;
  {
    std::lock_guard<std::mutex> io(io_mu_);  // a queue may be storing the ceilings a runner measured
    opt.calibration = calibration_;
  }
  return opt;
}

// The runner's result: what it printed, or what became of it. Through a channel, a channel that
// cannot run the batch (its allocation lost, say) is replaced before the batch is given up on.
RunResult SweepRun::RunRunner(const RunRequest& request, std::unique_ptr<RunnerChannel>* channel, size_t queue) {
  Result<RunnerOutcome> outcome = Status::Internal("no runner was started");
  if (!channel) {
    outcome = RunRunnerProcess(*env_->processes, env_->runner, request);
  } else {
    for (int attempt = 0; attempt < kChannelAttempts; ++attempt) {
      if (!*channel) {
        auto made = env_->channels(queue);
        if (!made.ok()) {
          outcome = made.status();
          continue;
        }
        *channel = std::move(made).value();
      }
      outcome = (*channel)->Run(request);
      if (outcome.ok()) break;
      channel->reset();
    }
  }
  if (outcome.ok()) return std::move(outcome->result);
  RunResult run;
  run.status = "error";
  run.message = outcome.status().message();
  return run;
}

Result<std::vector<std::optional<json>>> SweepRun::EvaluateWithWorker(const std::vector<std::string>& objects) {
  EvalOptions opt = Options();
  opt.timeout_s = 60 + (options_.timeout_s > 0 ? options_.timeout_s : 5 + 3 * options_.max_seconds);
  std::vector<std::optional<json>> out;
  for (const auto& object : objects) {
    auto run = env_->python->Run(task_, {"native", "", object}, {"reference", "", ""}, opt);
    if (!run.ok()) return run.status();
    if (run->status == "error") return Status::InvalidInput(run->message);  // the task's or the machine's fault
    if (run->details.contains("gpu")) header_["gpu"] = run->details["gpu"];
    out.push_back(EvaluatedFields(*run));
  }
  return out;
}

RunRequest SweepRun::Request(const std::vector<std::string>& objects) {
  RunRequest req = *BuildRunRequest(task_, Options());  // the workload was checked in Prepare
  req.reference_object = reference_object_;
  req.baseline_object = baseline_object_;
  req.candidate_object = reference_object_;  // loaded by the runner's setup; the sweep swaps its objects in
  req.sweep_objects = objects;
  // Per object: the check (reference and candidate once) and the timing loop, with room for
  // input generation, warmup and the trace; the runner's setup (context, calibration) once.
  double per_object = options_.timeout_s > 0 ? options_.timeout_s : 5 + 3 * options_.max_seconds;
  req.timeout_s = 60 + per_object * static_cast<double>(objects.size());
  return req;
}

Result<std::vector<std::optional<json>>> SweepRun::EvaluateBatch(const std::vector<std::string>& objects,
                                                                 std::unique_ptr<RunnerChannel>* channel,
                                                                 size_t queue) {
  if (task_.reference.kind == ReferenceKind::kPython) return EvaluateWithWorker(objects);
  std::vector<std::optional<json>> out(objects.size());
  std::vector<size_t> alone;  // objects to retry in a process of their own
  auto run_one = [&](const std::vector<std::string>& batch) -> RunResult {
    RunResult run = RunRunner(Request(batch), channel, queue);
    std::lock_guard<std::mutex> io(io_mu_);
    if (run.calibration_measured && run.calibration.valid() && gpu_) {
      calibration_ = run.calibration;
      header_["calibration"] = ToJson(calibration_);
      if (env_->calibration_measured) env_->calibration_measured(calibration_);
    }
    if (task_.backend == Backend::kCuda && run.details.contains("gpu")) header_["gpu"] = run.details["gpu"];
    return run;
  };
  RunResult run = run_one(objects);
  const json* entries = run.details.contains("sweep") ? &run.details["sweep"] : nullptr;
  if (!entries || entries->size() != objects.size()) {
    // Setup failed (the task's reference or baseline, the GPU): the task's or the machine's fault.
    if (run.status == "error") return Status::InvalidInput(run.message);
    // The process died (a crash, a timeout): alone, that is the object's result; in a batch,
    // every object gets a process of its own.
    if (objects.size() == 1) {
      out[0] = json{{"status", run.status}, {"message", run.message}};
      return out;
    }
    for (size_t i = 0; i < objects.size(); ++i) alone.push_back(i);
  } else {
    for (size_t i = 0; i < objects.size(); ++i) {
      const json& e = (*entries)[i];
      std::string status = e.value("status", "");
      if (status == "not_run") continue;  // after a poisoned context: the next batch
      if (status == "error" && objects.size() > 1) {
        alone.push_back(i);
        continue;
      }
      auto r = RunResultFromJson(e);
      if (!r.ok()) return r.status();
      if (status == "error") return Status::InvalidInput(r->message);  // alone in its process: not the object's doing
      out[i] = EvaluatedFields(*r);
    }
    // A batch that decided nothing is treated like a crash, so the sweep always progresses (the
    // runner stops a batch only after an object's own entry, so this does not happen).
    if (alone.empty() && std::none_of(out.begin(), out.end(), [](const auto& o) { return o.has_value(); })) {
      if (objects.size() == 1)
        out[0] = json{{"status", "runtime_error"}, {"message", run.message}};
      else
        for (size_t i = 0; i < objects.size(); ++i) alone.push_back(i);
    }
  }
  for (size_t i : alone) {
    auto single = EvaluateBatch({objects[i]}, channel, queue);
    if (!single.ok()) return single.status();
    out[i] = (*single)[0];
  }
  return out;
}

Status SweepRun::Evaluate() {
  if (!env_->channels) return EvaluateQueue(nullptr, 0);
  const size_t queues = static_cast<size_t>(std::max(1, env_->channel_queues));
  std::vector<Status> ends(queues);
  std::vector<std::thread> threads;
  for (size_t q = 0; q < queues; ++q)
    threads.emplace_back([this, q, &ends] {
      std::unique_ptr<RunnerChannel> channel;
      ends[q] = EvaluateQueue(&channel, q);
    });
  for (auto& t : threads) t.join();
  for (const auto& s : ends)
    if (!s.ok()) return s;
  return Status::Ok();
}

Status SweepRun::EvaluateQueue(std::unique_ptr<RunnerChannel>* channel, size_t queue) {
  for (;;) {
    std::vector<std::string> batch, shas;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] {
        return !compile_status_.ok() || stopped_ || compilers_running_ == 0 ||
               ready_.size() >= static_cast<size_t>(options_.batch);
      });
      if (!compile_status_.ok()) return compile_status_;
      if (stopped_) return Status::Ok();        // another queue failed (it returns why) or time is up
      if (ready_.empty()) return Status::Ok();  // compiling is done too
      if (options_.stop_after_s > 0 && SecondsSince(start_) > options_.stop_after_s) {
        stopped_ = true;  // the compile threads and the other queues stop too
        cv_.notify_all();
        return Status::Ok();
      }
      while (!ready_.empty() && batch.size() < static_cast<size_t>(options_.batch)) {
        batch.push_back(object_of_[ready_.front()]);
        shas.push_back(ready_.front());
        ready_.pop_front();
      }
    }
    auto t0 = Clock::now();
    auto results = EvaluateBatch(batch, channel, queue);
    if (!results.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      stopped_ = true;
      cv_.notify_all();
      return results.status();
    }
    std::vector<std::string> again;
    for (size_t i = 0; i < batch.size(); ++i) {
      if ((*results)[i])
        Record(shas[i], *(*results)[i]);
      else
        again.push_back(shas[i]);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      ready_.insert(ready_.begin(), again.begin(), again.end());
      cv_.notify_all();
    }
    std::lock_guard<std::mutex> io(io_mu_);
    Status written = Journal(shas);
    if (written.ok())
      written = SaveIfDue().WithContext("writing " + out_.string());
    else
      written = written.WithContext("journaling the results");
    if (!written.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      stopped_ = true;  // the other queues stop too
      cv_.notify_all();
      return written;
    }
    observer_->BatchEvaluated(batch.size() - again.size(), SecondsSince(t0), Progress());
  }
}

}  // namespace kpilot
