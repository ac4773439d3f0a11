// HeldAllocation, StepProcessRunner, CompileAllocation and ClusterRunner (slurm.h): allocations kept
// while kpilot uses them, and the processes and served runners it starts in them.
#include <cmath>
#include <ostream>

#include <fmt/format.h>

#include "core/fs.h"
#include "slurm/slurm.h"

namespace kpilot::slurm {

// ---- HeldAllocation ------------------------------------------------------------------------------

Result<std::unique_ptr<HeldAllocation>> HeldAllocation::Start(ProcessRunner& processes, Clock& clock,
                                                              const SlurmConfig& config, const std::string& job_name) {
  const std::filesystem::path root =
      config.shared_dir.empty() ? std::filesystem::temp_directory_path() : config.shared_dir;
  auto work = TempDir::CreateIn(root, "kpilot-slurm-");
  if (!work.ok())
    return work.status().WithContext("the Slurm config's shared_dir " + root.string() +
                                     " (a folder every node sees at the same path)");
  std::unique_ptr<HeldAllocation> h(new HeldAllocation());
  h->work_.emplace(std::move(work).value());
  auto a = Allocation::Start(processes, clock, config, job_name, h->work_->path());
  if (!a.ok()) return a.status();
  h->allocation_ = std::move(a).value();
  h->beat_ = std::thread([raw = h.get(), every = config.heartbeat_s] { raw->BeatLoop(every); });
  return h;
}

HeldAllocation::~HeldAllocation() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (beat_.joinable()) beat_.join();
  allocation_.reset();  // scancel
}

void HeldAllocation::BeatLoop(double every_s) {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    (void)allocation_->Beat();
    stop_cv_.wait_for(lock, std::chrono::duration<double>(every_s), [&] { return stopping_; });
  }
}

std::string HeldAllocation::Where() const {
  return fmt::format("slurm job {} on {}", allocation_->job_id(), allocation_->nodes());
}

std::optional<Status> HeldAllocation::Lost(const std::string& during) {
  auto info = allocation_->Query();
  if (!info.ok() || info->state == JobState::kRunning) return std::nullopt;
  return Status::Unavailable(
      fmt::format("allocation {} on {} ended during {} ({}): nothing was measured; try again", allocation_->job_id(),
                  allocation_->nodes().empty() ? "its node" : allocation_->nodes(), during, JobStateName(info->state)));
}

// ---- Processes in an allocation ------------------------------------------------------------------

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

Result<std::unique_ptr<CompileAllocation>> CompileAllocation::Start(ProcessRunner& processes, Clock& clock,
                                                                    const SlurmConfig& config,
                                                                    const std::string& job_name) {
  SlurmConfig cpu = config;
  cpu.partition = config.compile_partition;
  cpu.gres.clear();
  cpu.sbatch_extra.push_back(fmt::format("--cpus-per-task={}", config.compile_cpus));
  auto held = HeldAllocation::Start(processes, clock, cpu, job_name);
  if (!held.ok()) return held.status().WithContext("the compile allocation (--compile-on slurm)");
  std::unique_ptr<CompileAllocation> c(new CompileAllocation());
  c->held_ = std::move(held).value();
  c->steps_ = std::make_unique<StepProcessRunner>(processes, c->held_->allocation().step_wrapper());
  c->cpus_ = config.compile_cpus;
  return c;
}

Result<ProcessResult> CompileAllocation::Run(const ProcessSpec& spec) {
  auto r = steps_->Run(spec);
  if (!r.ok() || !r->Succeeded())
    if (auto lost = held_->Lost("a compile")) return *lost;
  return r;
}

// ---- ClusterRunner -------------------------------------------------------------------------------

// The channel's runner of tasks with a Python reference: the factory's, its worker started as a
// job step; a worker that ended without a result while the allocation ended is no verdict.
class ClusterRunner::AllocationPython : public PythonTaskRunner {
 public:
  AllocationPython(HeldAllocation& held, std::unique_ptr<PythonTaskRunner> inner)
      : held_(held), inner_(std::move(inner)) {}
  Result<RunResult> Run(const Task& task, const PythonSubject& candidate, const PythonSubject& baseline,
                        const EvalOptions& options) override {
    auto run = inner_->Run(task, candidate, baseline, options);
    const bool no_result = !run.ok() || run->status == "runtime_error" || run->status == "timeout";
    if (no_result)
      if (auto lost = held_.Lost("the evaluation")) return *lost;
    return run;
  }

 private:
  HeldAllocation& held_;
  std::unique_ptr<PythonTaskRunner> inner_;
};

Result<std::unique_ptr<ClusterRunner>> ClusterRunner::Start(ProcessRunner& processes, Clock& clock,
                                                            const SlurmConfig& config,
                                                            const std::filesystem::path& runner_exe,
                                                            const std::string& job_name,
                                                            const PythonRunnerFactory& python) {
  auto held = HeldAllocation::Start(processes, clock, config, job_name);
  if (!held.ok()) return held.status();
  std::unique_ptr<ClusterRunner> c(new ClusterRunner());
  c->held_ = std::move(held).value();
  ServedRunnerOptions o;
  o.wrapper = c->held_->allocation().step_wrapper();
  o.requests_root = c->held_->work_dir();
  c->runner_ = std::make_unique<ServedRunner>(runner_exe, o);
  if (python) {
    c->steps_ = std::make_unique<StepProcessRunner>(processes, c->held_->allocation().step_wrapper());
    auto made = python(*c->steps_, c->held_->work_dir());
    if (!made.ok()) return made.status();
    c->python_ = std::make_unique<AllocationPython>(*c->held_, std::move(made).value());
  }
  return c;
}

ClusterRunner::~ClusterRunner() {
  python_.reset();
  runner_.reset();  // ends the job step (srun is killed with its process group)
  held_.reset();    // the heartbeat stops; scancel
}

std::string ClusterRunner::Where() const { return held_->Where(); }

RunnerLaunch ClusterRunner::Place() const {
  RunnerLaunch launch;
  launch.wrapper = held_->allocation().step_wrapper();
  launch.requests_root = held_->work_dir();
  return launch;
}

Result<RunnerOutcome> ClusterRunner::Run(const RunRequest& request) {
  auto out = runner_->Run(request);
  // A runner that could not start or printed no result may have lost its allocation: then the
  // cluster, not the candidate, ended the evaluation, and there is no verdict to give.
  const bool no_result = !out.ok() || out->process.exit_code != 0 || out->process.timed_out;
  if (no_result)
    if (auto lost = held_->Lost("the evaluation")) return *lost;
  return out;
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
