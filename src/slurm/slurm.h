// Evaluations on a Slurm cluster (docs/slurm.md): kpilot asks the cluster's own scheduler for an
// allocation (sbatch), starts one long-lived `kpilot-runner --serve` per allocation as a job step
// (srun --jobid … --overlap) and sends it requests the way the local served runner gets them; the
// requests and the objects they name travel through a folder both sides see (the config's
// shared_dir). Compiling, the search and the store stay on the submitting host.
//
// Three parts: the config (a TOML file, every error naming the file, line, key and fix); the pure
// pieces (sbatch's and srun's command lines, the keeper script, parsers of sbatch's and squeue's
// output, tested on real output); and the allocation, an RAII handle over the commands run through
// a ProcessRunner and waits on a Clock, so it is tested with doubles as well as on a real cluster.
//
// An allocation whose kpilot dies without cancelling it (kill -9) ends itself: its batch script
// (the keeper) exits once kpilot's heartbeat file has not been touched for kMissedBeats beats.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "core/subprocess.h"
#include "exec/executor.h"
#include "harness/harness.h"

namespace kpilot::slurm {

struct SlurmConfig {
  std::string partition;  // "" = the cluster's default partition
  std::string account;
  std::string gres;                       // e.g. "gpu:1": each allocation's generic resources
  std::string time_limit = "01:00:00";    // sbatch --time
  std::vector<std::string> sbatch_extra;  // further sbatch options, e.g. ["--constraint=h100"]
  // A folder every node sees at the same path: request folders and the objects they name go here.
  // "" = the system's temporary folder, which only a single-host cluster shares.
  std::filesystem::path shared_dir;
  int workers = 1;  // allocations, each with one served runner (one evaluation queue each)
  // --compile-on slurm: one allocation on these nodes ("" = the cluster's default partition), no
  // gres, compile_cpus cores, running that many compilers at once, each a job step.
  std::string compile_partition;
  int compile_cpus = 8;
  double start_timeout_s = 600;   // an allocation still not running after this is an error
  double heartbeat_s = 10;        // how often kpilot touches the heartbeat file
  std::string sbatch = "sbatch";  // the commands, found on PATH unless absolute
  std::string srun = "srun";
  std::string squeue = "squeue";
  std::string scancel = "scancel";
  std::filesystem::path file;  // where it was read from ("" when built in code)
};

// Reads FILE's [slurm] table. A missing file, a TOML error, an unknown key or a value of the wrong
// type or range is InvalidInput: "FILE:LINE: KEY: what; fix", every problem of the file at once.
Result<SlurmConfig> LoadSlurmConfig(const std::filesystem::path& file);
Result<SlurmConfig> ParseSlurmConfig(const std::string& text, const std::string& file_name);

// ---- Pure pieces ------------------------------------------------------------------------------

inline constexpr int kMissedBeats = 6;

// The batch script of an allocation: it sleeps while `heartbeat` was touched within
// kMissedBeats × heartbeat_s, and exits (ending the allocation) once it was not.
std::string KeeperScript(const std::filesystem::path& heartbeat, double heartbeat_s);
// sbatch's command line for one allocation running `script` (a file on the shared folder).
std::vector<std::string> SbatchArgv(const SlurmConfig& c, const std::string& job_name,
                                    const std::filesystem::path& script, const std::filesystem::path& log);
// The job step that runs one command inside allocation `job_id`, sharing its resources.
std::vector<std::string> StepWrapper(const SlurmConfig& c, int64_t job_id);

// `sbatch --parsable` prints "JOBID" or "JOBID;CLUSTER".
Result<int64_t> ParseSbatchJobId(const std::string& out);

enum class JobState {
  kPending,
  kConfiguring,
  kRunning,
  kCompleting,
  kCompleted,
  kCancelled,
  kFailed,
  kTimeout,
  kNodeFail,
  kPreempted,
  kOutOfMemory,
  kBootFail,
  kDeadline,
  kUnknown
};
const char* JobStateName(JobState s);  // squeue's names: "PENDING", "RUNNING", …
JobState ParseJobState(const std::string& name);
bool IsFinished(JobState s);  // the allocation is gone (or going) for good

struct JobInfo {
  JobState state = JobState::kUnknown;
  std::string reason;  // squeue's %r: why it pends ("Resources", "PartitionNodeLimit", …), "None" when running
  std::string nodes;   // %N: the node list once it runs
};
// The squeue format kpilot asks for, and its parser; nullopt for a line that is not one.
inline constexpr char kSqueueFormat[] = "%T|%r|%N";
std::optional<JobInfo> ParseSqueueLine(const std::string& line);

// A pending reason that will never clear by waiting (a partition's node limit, a node that does not
// exist, an invalid account): the allocation is refused rather than waited for.
bool PendsForever(const std::string& reason);

// ---- The allocation -------------------------------------------------------------------------

class Allocation {
 public:
  // Submits one allocation and waits (on `clock`, polling squeue) until it runs. Errors, each
  // before any evaluation: sbatch or squeue not found (Unavailable, with the fix), a job the
  // scheduler rejects (InvalidInput with sbatch's message, e.g. an invalid partition), a job that
  // pends for a reason that never clears (InvalidInput naming the reason), one that ends before
  // running (Unavailable: its node failed, say) and one still pending after start_timeout_s
  // (Unavailable). A job that was submitted is
  // cancelled on every error. `work_dir` (on the shared folder) holds its script, log and heartbeat.
  static Result<std::unique_ptr<Allocation>> Start(ProcessRunner& processes, Clock& clock, const SlurmConfig& config,
                                                   const std::string& job_name, const std::filesystem::path& work_dir);
  ~Allocation();  // Cancel()
  Allocation(const Allocation&) = delete;
  Allocation& operator=(const Allocation&) = delete;

  int64_t job_id() const { return job_id_; }
  const std::string& nodes() const { return nodes_; }
  // srun's argv prefix for a step in this allocation (StepWrapper).
  std::vector<std::string> step_wrapper() const { return StepWrapper(config_, job_id_); }
  // Touches the heartbeat file; the caller does so every heartbeat_s while it uses the allocation.
  Status Beat();
  // The allocation's state now (squeue; a job squeue no longer lists has ended).
  Result<JobInfo> Query();
  // scancel; idempotent.
  Status Cancel();

 private:
  Allocation(ProcessRunner& processes, SlurmConfig config, std::filesystem::path work_dir)
      : processes_(processes), config_(std::move(config)), work_dir_(std::move(work_dir)) {}
  ProcessRunner& processes_;
  const SlurmConfig config_;
  const std::filesystem::path work_dir_;
  int64_t job_id_ = 0;
  std::string nodes_;
  bool cancelled_ = false;
};

// Allocations to cancel if kpilot is interrupted (SIGINT, SIGTERM, SIGHUP): the first Register
// installs handlers whose watcher thread runs scancel for every registered job, then ends the
// process by the same signal. Every Allocation is registered from sbatch's answer until it is
// cancelled. kill -9 cannot be caught: the keeper's heartbeat ends those allocations.
class CancelOnSignal {
 public:
  static void Register(int64_t job_id, const std::string& scancel);
  static void Unregister(int64_t job_id);
};

// An allocation held while kpilot uses it: a fresh folder for it on the shared folder, the
// allocation started and waited for, registered with CancelOnSignal, and its heartbeat (a thread
// touching the file every heartbeat_s). Destruction stops the heartbeat and cancels.
class HeldAllocation {
 public:
  static Result<std::unique_ptr<HeldAllocation>> Start(ProcessRunner& processes, Clock& clock,
                                                       const SlurmConfig& config, const std::string& job_name);
  ~HeldAllocation();
  HeldAllocation(const HeldAllocation&) = delete;
  HeldAllocation& operator=(const HeldAllocation&) = delete;
  Allocation& allocation() { return *allocation_; }
  const Allocation& allocation() const { return *allocation_; }
  const std::filesystem::path& work_dir() const { return work_->path(); }
  std::string Where() const;  // "slurm job ID on NODE"
  // Unavailable "allocation ID on NODE ended during `during` (STATE): nothing was measured; …"
  // once it no longer runs (ended, or requeued after its node failed); nullopt while it runs.
  std::optional<Status> Lost(const std::string& during);

 private:
  HeldAllocation() = default;
  void BeatLoop(double every_s);
  std::optional<TempDir> work_;
  std::unique_ptr<Allocation> allocation_;
  std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::thread beat_;
};

// ---- Processes in an allocation ----------------------------------------------------------------

// Runs each process as a job step of an allocation: `wrapper` (Allocation::step_wrapper) before
// its command line, its folder passed on with --chdir (a folder the node sees at the same path),
// its environment passed on by srun, and a step time limit a minute past its timeout, so a step
// whose srun was killed still ends. Thread-safe when `base` is.
class StepProcessRunner : public ProcessRunner {
 public:
  StepProcessRunner(ProcessRunner& base, std::vector<std::string> wrapper)
      : base_(base), wrapper_(std::move(wrapper)) {}
  Result<ProcessResult> Run(const ProcessSpec& spec) override;

 private:
  ProcessRunner& base_;
  const std::vector<std::string> wrapper_;
};

// --compile-on slurm: the compilers run on a CPU node. One allocation (compile_partition, no
// gres, --cpus-per-task=compile_cpus) held for the run; each compiler run is a job step of it
// (the toolchain's ProcessRunner), in the source's folder and writing into the compile cache, both
// of which the node must see at the same paths. A compiler that ended because the allocation did
// is Unavailable, naming the job: no compile error is made up.
class CompileAllocation : public ProcessRunner {
 public:
  static Result<std::unique_ptr<CompileAllocation>> Start(ProcessRunner& processes, Clock& clock,
                                                          const SlurmConfig& config, const std::string& job_name);
  Result<ProcessResult> Run(const ProcessSpec& spec) override;
  std::string Where() const { return held_->Where(); }
  int64_t job_id() const { return held_->allocation().job_id(); }
  const std::string& nodes() const { return held_->allocation().nodes(); }
  int cpus() const { return cpus_; }

 private:
  CompileAllocation() = default;
  std::unique_ptr<HeldAllocation> held_;
  std::unique_ptr<StepProcessRunner> steps_;
  int cpus_ = 1;
};

// Makes the runner of tasks with a Python reference whose worker runs through `steps` (in an
// allocation), its request folders under `work_root` (on the shared folder).
using PythonRunnerFactory = std::function<Result<std::unique_ptr<PythonTaskRunner>>(
    ProcessRunner& steps, const std::filesystem::path& work_root)>;

// ---- A served runner on the cluster ------------------------------------------------------------

// One served runner in an allocation of its own: the allocation (started and waited for), its
// heartbeat (a thread touching the file every heartbeat_s) and `kpilot-runner --serve` as a job
// step, its request folders on the shared folder. With `python`, tasks with a Python reference run
// their torch worker in the allocation too, one job step per evaluation (python()). An evaluation
// during which the allocation ended (its node died, the scheduler killed or requeued it) is
// Unavailable, naming the job and its state: nothing was measured, so no verdict is made up.
// Destruction stops the runner, the heartbeat, and cancels.
class ClusterRunner : public RunnerChannel {
 public:
  static Result<std::unique_ptr<ClusterRunner>> Start(ProcessRunner& processes, Clock& clock, const SlurmConfig& config,
                                                      const std::filesystem::path& runner_exe,
                                                      const std::string& job_name,
                                                      const PythonRunnerFactory& python = nullptr);
  ~ClusterRunner() override;
  Result<RunnerOutcome> Run(const RunRequest& request) override;
  std::string Where() const override;  // "slurm job ID on NODE"
  PythonTaskRunner* python() override { return python_.get(); }
  RunnerLaunch Place() const override;  // srun's step wrapper, requests on the shared folder
  int64_t job_id() const { return held_->allocation().job_id(); }
  const std::string& nodes() const { return held_->allocation().nodes(); }

 private:
  ClusterRunner() = default;
  class AllocationPython;
  std::unique_ptr<HeldAllocation> held_;
  std::unique_ptr<ServedRunner> runner_;
  std::unique_ptr<StepProcessRunner> steps_;
  std::unique_ptr<PythonTaskRunner> python_;
};

// The channel of each evaluation queue (LocalExecutor's RunnerChannelFactory): a ClusterRunner of
// its own, its job named JOB_PREFIX-QUEUE; `notices` (may be null) is told where each one runs.
RunnerChannelFactory ClusterChannels(const SlurmConfig& config, const std::filesystem::path& runner_exe,
                                     const std::string& job_prefix, std::ostream* notices,
                                     PythonRunnerFactory python = nullptr);

}  // namespace kpilot::slurm
