// The allocation (slurm.h): sbatch, squeue until it runs, the heartbeat, scancel.
#include <chrono>
#include <fstream>

#include <fmt/format.h>

#include "core/fs.h"
#include "slurm/slurm.h"

namespace kpilot::slurm {
namespace {

namespace fs = std::filesystem;

std::string FirstLines(const std::string& text, size_t max_bytes = 600) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t.size() > max_bytes ? t.substr(0, max_bytes) + " …" : t;
}

// Runs one Slurm command; a command not on PATH is Unavailable naming the config key that sets it.
Result<ProcessResult> RunCommand(ProcessRunner& processes, const SlurmConfig& c, std::vector<std::string> argv,
                                 const char* key) {
  ProcessSpec spec;
  spec.argv = std::move(argv);
  spec.timeout_s = 60;
  auto r = processes.Run(spec);
  if (!r.ok())
    return Status::Unavailable(fmt::format(
        "{} could not be started ({}): install Slurm's client commands (Debian: slurm-client) or set {} = "
        "\"/path/to/{}\" in {}",
        spec.argv.front(), r.status().message(), key, key, c.file.empty() ? "the Slurm config" : c.file.string()));
  if (r->timed_out)
    return Status::Unavailable(
        fmt::format("{} did not answer within {:g} s (is slurmctld reachable?)", spec.argv.front(), spec.timeout_s));
  return r;
}

}  // namespace

Result<std::unique_ptr<Allocation>> Allocation::Start(ProcessRunner& processes, Clock& clock, const SlurmConfig& config,
                                                      const std::string& job_name, const fs::path& work_dir) {
  std::error_code ec;
  fs::create_directories(work_dir, ec);
  if (ec) return Status::InvalidInput("cannot create " + work_dir.string() + " for the allocation: " + ec.message());
  std::unique_ptr<Allocation> a(new Allocation(processes, config, work_dir));
  const fs::path script = work_dir / "keeper.sh", log = work_dir / "keeper.log";
  KPILOT_RETURN_IF_ERROR(a->Beat());
  KPILOT_RETURN_IF_ERROR(WriteFileAtomic(script, KeeperScript(work_dir / "heartbeat", config.heartbeat_s)));
  fs::permissions(script, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec, ec);

  auto submitted = RunCommand(processes, config, SbatchArgv(config, job_name, script, log), "sbatch");
  if (!submitted.ok()) return submitted.status();
  if (submitted->exit_code != 0)
    return Status::InvalidInput(
        fmt::format("the scheduler rejected the allocation: {} (sbatch exit {}; check "
                    "partition, account, gres and time_limit in {})",
                    FirstLines(submitted->err + submitted->out), submitted->exit_code,
                    config.file.empty() ? "the Slurm config" : config.file.string()));
  auto id = ParseSbatchJobId(submitted->out);
  if (!id.ok()) return id.status();
  a->job_id_ = *id;
  // From sbatch's answer on, not once it runs: a signal while the job pends or starts must cancel
  // it too.
  CancelOnSignal::Register(a->job_id_, config.scancel);

  // Until it runs. Any error from here on cancels the job (the destructor).
  const auto deadline =
      clock.Now() + std::chrono::duration_cast<Clock::Duration>(std::chrono::duration<double>(config.start_timeout_s));
  std::string last_reason;
  for (;;) {
    auto info = a->Query();
    if (!info.ok()) return info.status();
    if (info->state == JobState::kRunning) {
      a->nodes_ = info->nodes;
      return a;
    }
    if (IsFinished(info->state)) {
      auto tail = ReadFile(log);
      // Unavailable: a node that failed under it is the cluster's moment, and another try may run.
      return Status::Unavailable(fmt::format("allocation {} ended before it ran ({}{}){}", a->job_id_,
                                             JobStateName(info->state),
                                             info->reason.empty() || info->reason == "None" ? "" : ", " + info->reason,
                                             tail.ok() && !tail->empty() ? ": " + FirstLines(*tail) : ""));
    }
    if (PendsForever(info->reason))
      return Status::InvalidInput(
          fmt::format("allocation {} can never start: the scheduler says {} (check the "
                      "partition's limits against gres, time_limit and sbatch_extra in {})",
                      a->job_id_, info->reason, config.file.empty() ? "the Slurm config" : config.file.string()));
    last_reason = info->reason;
    if (clock.Now() >= deadline)
      return Status::Unavailable(
          fmt::format("allocation {} still pending after {:g} s ({}): raise start_timeout_s or "
                      "ask for fewer resources",
                      a->job_id_, config.start_timeout_s, last_reason));
    clock.SleepFor(std::chrono::milliseconds(500));
  }
}

Allocation::~Allocation() { (void)Cancel(); }

Status Allocation::Beat() {
  const fs::path hb = work_dir_ / "heartbeat";
  std::ofstream f(hb, std::ios::app);
  if (!f) return Status::InvalidInput("cannot write the heartbeat file " + hb.string());
  f.close();
  std::error_code ec;
  fs::last_write_time(hb, fs::file_time_type::clock::now(), ec);
  if (ec) return Status::InvalidInput("cannot touch the heartbeat file " + hb.string() + ": " + ec.message());
  return Status::Ok();
}

Result<JobInfo> Allocation::Query() {
  auto r = RunCommand(
      processes_, config_,
      {config_.squeue, "--noheader", "--jobs=" + std::to_string(job_id_), "--format=" + std::string(kSqueueFormat)},
      "squeue");
  if (!r.ok()) return r.status();
  // A job squeue no longer knows has ended (it prints nothing, or "Invalid job id" once purged).
  if (r->exit_code != 0 || r->out.find_first_not_of(" \n") == std::string::npos) {
    JobInfo gone;
    gone.state = JobState::kCompleted;
    return gone;
  }
  auto info = ParseSqueueLine(r->out.substr(0, r->out.find('\n')));
  if (!info) return Status::Internal("squeue printed a line kpilot cannot read: " + FirstLines(r->out));
  return *info;
}

Status Allocation::Cancel() {
  if (cancelled_ || job_id_ <= 0) return Status::Ok();
  cancelled_ = true;
  CancelOnSignal::Unregister(job_id_);
  auto r = RunCommand(processes_, config_, {config_.scancel, std::to_string(job_id_)}, "scancel");
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) return Status::Internal(fmt::format("scancel {} failed: {}", job_id_, FirstLines(r->err)));
  return Status::Ok();
}

}  // namespace kpilot::slurm
