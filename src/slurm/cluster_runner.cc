// ClusterRunner (slurm.h): a served runner as a job step of its own allocation.
#include <cmath>
#include <ostream>

#include <fmt/format.h>

#include "core/fs.h"
#include "slurm/slurm.h"

namespace kpilot::slurm {

Result<ProcessResult> StepProcessRunner::Run(const ProcessSpec& spec) {
  ProcessSpec step = spec;
  step.argv = wrapper_;
  if (spec.cwd) step.argv.push_back("--chdir=" + spec.cwd->string());
  // srun killed at the timeout may leave its step running: the step's own limit ends it.
  if (spec.timeout_s > 0)
    step.argv.push_back(fmt::format("--time={}", static_cast<int>(std::ceil(spec.timeout_s / 60)) + 1));
  step.argv.insert(step.argv.end(), spec.argv.begin(), spec.argv.end());
  return base_.Run(step);
}

// The channel's runner of tasks with a Python reference: the factory's, its worker started as a
// job step; a worker that ended without a result while the allocation ended is no verdict.
class ClusterRunner::AllocationPython : public PythonTaskRunner {
 public:
  AllocationPython(ClusterRunner& owner, std::unique_ptr<PythonTaskRunner> inner)
      : owner_(owner), inner_(std::move(inner)) {}
  Result<RunResult> Run(const Task& task, const PythonSubject& candidate, const PythonSubject& baseline,
                        const EvalOptions& options) override {
    auto run = inner_->Run(task, candidate, baseline, options);
    const bool no_result = !run.ok() || run->status == "runtime_error" || run->status == "timeout";
    if (no_result)
      if (auto lost = owner_.Lost()) return *lost;
    return run;
  }

 private:
  ClusterRunner& owner_;
  std::unique_ptr<PythonTaskRunner> inner_;
};

Result<std::unique_ptr<ClusterRunner>> ClusterRunner::Start(ProcessRunner& processes, Clock& clock,
                                                            const SlurmConfig& config,
                                                            const std::filesystem::path& runner_exe,
                                                            const std::string& job_name,
                                                            const PythonRunnerFactory& python) {
  const std::filesystem::path root =
      config.shared_dir.empty() ? std::filesystem::temp_directory_path() : config.shared_dir;
  auto work = TempDir::CreateIn(root, "kpilot-slurm-");
  if (!work.ok())
    return work.status().WithContext("the Slurm config's shared_dir " + root.string() +
                                     " (a folder every node sees at the same path)");
  std::unique_ptr<ClusterRunner> c(new ClusterRunner());
  c->work_.emplace(std::move(work).value());
  auto a = Allocation::Start(processes, clock, config, job_name, c->work_->path());
  if (!a.ok()) return a.status();
  c->allocation_ = std::move(a).value();
  CancelOnSignal::Register(c->allocation_->job_id(), config.scancel);
  ServedRunnerOptions o;
  o.wrapper = c->allocation_->step_wrapper();
  o.requests_root = c->work_->path();
  c->runner_ = std::make_unique<ServedRunner>(runner_exe, o);
  if (python) {
    c->steps_ = std::make_unique<StepProcessRunner>(processes, c->allocation_->step_wrapper());
    auto made = python(*c->steps_, c->work_->path());
    if (!made.ok()) return made.status();
    c->python_ = std::make_unique<AllocationPython>(*c, std::move(made).value());
  }
  c->beat_ = std::thread([raw = c.get(), every = config.heartbeat_s] { raw->BeatLoop(every); });
  return c;
}

ClusterRunner::~ClusterRunner() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (beat_.joinable()) beat_.join();
  runner_.reset();  // ends the job step (srun is killed with its process group)
  if (allocation_) CancelOnSignal::Unregister(allocation_->job_id());
  allocation_.reset();  // scancel
}

void ClusterRunner::BeatLoop(double every_s) {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    (void)allocation_->Beat();
    stop_cv_.wait_for(lock, std::chrono::duration<double>(every_s), [&] { return stopping_; });
  }
}

std::string ClusterRunner::Where() const { return fmt::format("slurm job {} on {}", job_id(), nodes()); }

Result<RunnerOutcome> ClusterRunner::Run(const RunRequest& request) {
  auto out = runner_->Run(request);
  // A runner that could not start or printed no result may have lost its allocation: then the
  // cluster, not the candidate, ended the evaluation, and there is no verdict to give.
  const bool no_result = !out.ok() || out->process.exit_code != 0 || out->process.timed_out;
  if (no_result)
    if (auto lost = Lost()) return *lost;
  return out;
}

std::optional<Status> ClusterRunner::Lost() {
  // Not running any more: ended, or requeued by the scheduler after its node failed.
  auto info = allocation_->Query();
  if (!info.ok() || info->state == JobState::kRunning) return std::nullopt;
  return Status::Unavailable(
      fmt::format("allocation {} on {} ended during the evaluation ({}): nothing was measured; evaluate again",
                  job_id(), nodes().empty() ? "its node" : nodes(), JobStateName(info->state)));
}

RunnerChannelFactory ClusterChannels(const SlurmConfig& config, const std::filesystem::path& runner_exe,
                                     const std::string& job_prefix, std::ostream* notices, PythonRunnerFactory python) {
  return [=](size_t queue) -> Result<std::unique_ptr<RunnerChannel>> {
    auto c = ClusterRunner::Start(SystemProcessRunner(), SystemClock(), config, runner_exe,
                                  job_prefix + "-" + std::to_string(queue), python);
    if (!c.ok()) return c.status();
    if (notices)
      *notices << fmt::format("kpilot: evaluation queue {} runs in allocation {} on {}\n", queue, (*c)->job_id(),
                              (*c)->nodes());
    return std::unique_ptr<RunnerChannel>(std::move(c).value());
  };
}

}  // namespace kpilot::slurm
