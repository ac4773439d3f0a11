// The host side of an evaluation: compile reference, baseline and candidate; spawn
// kpilot-runner in a fresh directory; turn its JSON into a Verdict with evidence and paired
// timing statistics.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "core/stats.h"
#include "core/subprocess.h"
#include "runner/protocol.h"
#include "task/task.h"
#include "toolchain/toolchain.h"

namespace kpilot {

enum class VerdictKind { kCompileError, kRuntimeError, kTimeout, kIncorrect, kSuspicious, kPassed };
std::string_view VerdictName(VerdictKind k);                         // "compile_error", …, "passed"
std::optional<VerdictKind> ParseVerdictKind(std::string_view name);  // VerdictName's inverse

// What happened to a candidate, as data. `summary` is one plain sentence; `evidence` holds the
// numbers (log excerpt, max abs/rel error and first bad index, signal, …).
struct Verdict {
  VerdictKind kind = VerdictKind::kRuntimeError;
  std::string summary;
  nlohmann::json evidence = nlohmann::json::object();
  bool passed() const { return kind == VerdictKind::kPassed; }
};

// Timing of one workload. Times in milliseconds; speedup = baseline / candidate, paired.
struct WorkloadTiming {
  std::string workload;
  SampleSummary candidate;
  SampleSummary baseline;
  PairedRatio speedup;
  std::vector<double> candidate_ms;  // every sample
  std::vector<double> baseline_ms;
  std::string method;
  std::string statistic = "median";  // what the procedure reports ("mean" for --timing kernelbench)
  double candidate_reported_ms = 0;  // that statistic of the candidate's samples
  double baseline_reported_ms = 0;
  double joules_per_call = 0;  // --energy (cuda): NVML, candidate and baseline
  double watts = 0;
  double baseline_joules_per_call = 0;
  double baseline_watts = 0;
};

struct Evaluation {
  Verdict verdict;
  std::string task;
  std::string candidate;  // the source path as given
  ParamValues params;
  Backend backend = Backend::kHost;
  std::string baseline;   // name of what speedups are measured against
  CompileOutput compile;  // the candidate's compile
  std::vector<WorkloadTiming> timings;
  double speedup_geomean = 0;   // over workloads; 0 unless passed with timing
  Interval speedup_geomean_ci;  // geometric means of the per-workload CI bounds
  RunResult run;                // the runner's raw result
  double compile_s = 0;         // wall seconds: compiling all objects
  double run_s = 0;             // wall seconds: the runner
  double total_s = 0;
};

nlohmann::json ToJson(const Evaluation& e);
// A confidence interval as [lo, hi].
nlohmann::json ToJson(const Interval& ci);

// The whole Evaluation as a record, and back, exactly. ToJson above is the report; the record
// also keeps what it leaves out (compile log, SASS, object path, the runner's raw result), so
// a finished evaluation journaled by an interrupted search is not run again on --resume.
// EvaluationFromRecord: InvalidInput naming what is malformed.
nlohmann::json RecordJson(const Evaluation& e);
Result<Evaluation> EvaluationFromRecord(const nlohmann::json& j);
nlohmann::json ToJson(const KernelResources& r);                   // every field
KernelResources KernelResourcesFromJson(const nlohmann::json& j);  // throws on a missing field

// Pure: the verdict for a runner result (status "error" is not a verdict: it is returned as a
// non-ok Status by Evaluate, since the task or kpilot is at fault, not the candidate).
Verdict VerdictFromRun(const RunResult& run);
// Pure: per-workload statistics and the geometric mean from the runner's samples.
void SummarizeTimings(const RunResult& run, Evaluation* e);

struct EvalOptions {
  std::vector<std::string> workloads;  // empty = all of the task's workloads
  ParamValues params;                  // -D values for the candidate
  CompileOptions compile;
  // The input seeds of the correctness trials; empty: kSeedsPerEvaluation drawn afresh for each
  // evaluation (EvaluationSeeds), so no candidate can carry answers for seeds known in advance.
  std::vector<uint64_t> seeds;
  bool time = true;
  // The task's [draw] workload: one more, its axes drawn at random for this evaluation, checked
  // and not timed (a candidate hard-wired to the declared shapes fails it).
  bool draw = true;
  TimingConfig timing;
  double timeout_s = 120;  // the runner's wall-clock limit
  bool sandbox = true;
  int64_t address_space_bytes = 16ll << 30;  // host backend RLIMIT_AS
  // The baseline to time against instead of the task's (the search's promotion gate times a
  // challenger against the incumbent this way): a source and its params.
  std::optional<std::filesystem::path> baseline_source;
  ParamValues baseline_params;
  std::string baseline_name = "incumbent";
  // cuda backend
  int device = 0;           // CUDA device index
  bool energy = false;      // NVML joules per call (adds ≥ 2 s per workload)
  Calibration calibration;  // cached ceilings; empty: the runner measures them
  // PyTorch-defined tasks (task.reference.kind == kPython, docs/pytorch.md): what speedups are
  // measured against when there is no baseline_source — "eager" (the reference) or "compile"
  // (torch.compile of it) — and the torch device (see TorchDevice).
  std::string python_baseline = "eager";
  std::string torch_device;
  // PyTorch-defined tasks: correctness trials before the timing (0: the procedure's own, 5 for
  // kernelbench, one per seed otherwise). A baseline measurement of a candidate that has just
  // passed its own evaluation (kpilot bench's torch.compile figure) asks for 1.
  int check_trials = 0;
  // PyTorch-defined tasks: the worker's CPU threads (torch.set_num_threads; 0: torch's default).
  int host_threads = 0;
};

inline constexpr int kSeedsPerEvaluation = 3;
// options.seeds, or kSeedsPerEvaluation seeds from the system's CSPRNG (getrandom, through
// std::random_device), each below 2^48 (inputs derive further seeds by adding to them). They are
// recorded with the evaluation's checks.
std::vector<uint64_t> EvaluationSeeds(const EvalOptions& options);

// The torch device of an evaluation: options.torch_device, else $KPILOT_TORCH_DEVICE (tests
// without a GPU set "cpu"), else "cuda:<options.device>".
std::string TorchDevice(const EvalOptions& options);

// Whether evaluating `task` needs a GPU: a cuda task, unless its reference is Python and the torch
// device is the CPU ($KPILOT_TORCH_DEVICE=cpu, tests).
bool NeedsGpu(const Task& task);

// Where the per-GPU timing locks live (kpilot-gpu-N.lock, taken by kpilot-runner and by the torch
// worker): $KPILOT_LOCK_DIR, else /tmp.
std::string GpuLockDir();

// ---- PyTorch-defined tasks -----------------------------------------------------------------------

// What the torch worker runs as a candidate or a baseline (docs/pytorch.md, "run").
struct PythonSubject {
  std::string kind;              // reference | compile | model_new | native | solution
  std::filesystem::path path;    // model_new, solution: the file (absolute)
  std::filesystem::path object;  // native: the compiled shared object (absolute)
};
nlohmann::json ToJson(const PythonSubject& s);

// The seam through which the Evaluator runs tasks whose reference is a Python program; the
// worker-backed implementation is pytorch/'s WorkerTaskRunner, tests substitute a double.
class PythonTaskRunner {
 public:
  virtual ~PythonTaskRunner() = default;
  // Checks and times `candidate` against `baseline` on `task` as `options` say, and returns the
  // worker's result (status "error" included: the Evaluator turns it into a Status). A non-ok
  // Status only when the worker cannot run at all (no interpreter, no torch).
  virtual Result<RunResult> Run(const Task& task, const PythonSubject& candidate, const PythonSubject& baseline,
                                const EvalOptions& options) = 0;
};

class RunnerChannel;

class Evaluator {
 public:
  // `runner_exe` is the kpilot-runner binary; `python` serves tasks with a Python reference
  // (null: such tasks are InvalidInput). All references are borrowed.
  Evaluator(Toolchain& toolchain, ProcessRunner& processes, std::filesystem::path runner_exe,
            PythonTaskRunner* python = nullptr);

  // Evaluates `candidate` (a source file) on `task`. Every candidate failure is a Verdict in
  // the Evaluation; a non-ok Status means the task, options or machine are at fault (unknown
  // workload, a reference that does not compile, a missing compiler, a runner that cannot start).
  // Tasks with a Python reference take a native `.cu` (compiled here; `.cpp` when the torch device
  // is the cpu), a KernelBench `ModelNew` `.py` or a flashinfer Solution `.json`, and run through
  // the PythonTaskRunner.
  // `runner` (borrowed, may be null) takes the runner request of a native reference's task in
  // place of a kpilot-runner started for it alone (a ServedRunner keeps one across evaluations).
  Result<Evaluation> Evaluate(const Task& task, const std::filesystem::path& candidate, const EvalOptions& options,
                              RunnerChannel* runner = nullptr);

  // Compiles what Evaluate compiles besides the candidate — the task's reference and the
  // baseline that `options` names — with the same options, so that Evaluate finds them in the
  // compile cache. The executor runs it beside a draft's compile: otherwise the first evaluation
  // compiled the reference while it held the GPU (1.1 s on the H200; docs/results.md, "Where
  // short runs leave the GPU idle"). Errors are Evaluate's; a task with a Python reference
  // compiles nothing here.
  Status CompileFixedObjects(const Task& task, const EvalOptions& options);

 private:
  struct FixedObjects {
    std::filesystem::path reference, baseline;
    std::string baseline_name;  // empty: the task's own
  };
  Result<FixedObjects> CompileFixed(const Task& task, const EvalOptions& options);
  Result<Evaluation> EvaluatePython(const Task& task, const std::filesystem::path& candidate,
                                    const EvalOptions& options, RunnerChannel* runner);

  Toolchain& toolchain_;
  ProcessRunner& processes_;
  std::filesystem::path runner_exe_;
  PythonTaskRunner* python_;
};

// How RunRunnerProcess starts kpilot-runner, beyond the request.
struct RunnerLaunch {
  std::vector<std::string> wrapper;    // argv put before the runner (e.g. ncu's command line)
  std::vector<std::string> extra_env;  // NAME=VALUE added to the scrubbed environment
  double backstop_s = 900;             // added to request.timeout_s (the runner enforces that itself)
  // Where its request folder is made ("" = the system's temporary folder): with a wrapper that runs
  // it on another machine (srun), a folder that machine sees at the same path.
  std::filesystem::path requests_root;
};

// What one runner process gave: its result — parsed, or made up as "timeout"/"runtime_error"
// when it printed none — and the process itself (ncu's CSV is in `process.out`).
struct RunnerOutcome {
  RunResult result;
  ProcessResult process;
  double wall_s = 0;
};

// Runs kpilot-runner once on `request`, from a fresh folder holding request.json, with a scrubbed
// environment (plus OMP_WAIT_POLICY=passive unless the user set it). A non-ok Status only when
// the process cannot be started or the request cannot be written.
Result<RunnerOutcome> RunRunnerProcess(ProcessRunner& processes, const std::filesystem::path& runner_exe,
                                       const RunRequest& request, const RunnerLaunch& launch = {});

// Where runner requests go: a kpilot-runner of their own (RunRunnerProcess), or a served one.
class RunnerChannel {
 public:
  virtual ~RunnerChannel() = default;
  // As RunRunnerProcess: a non-ok Status only when no runner can be started or the request
  // cannot be written; every end of the run itself is the outcome's result.
  virtual Result<RunnerOutcome> Run(const RunRequest& request) = 0;
  // Where its runner runs, for the records ("slurm job 12 on gpu-07"); "" for this machine.
  virtual std::string Where() const { return ""; }
  // How a one-shot runner (a counter profile's, beside the served one) runs where this channel's
  // runner runs: the wrapper put before its command line and its request folder's root. {}: here.
  virtual RunnerLaunch Place() const { return {}; }
  // The runner of tasks with a Python reference whose torch worker runs where this channel's
  // runner runs (a Slurm allocation's node), or null: the Evaluator's own, on this machine.
  virtual PythonTaskRunner* python() { return nullptr; }
};

// kpilot-runner --serve (runner/supervisor.h), kept running from one request to the next, so
// that an evaluation costs its checks and timing, not a process start, a CUDA context and a
// CUPTI set-up (about 0.28 s of a 0.5 s evaluation on the H200; docs/results.md, "Served
// runners"). It is started at the first request and again after a result that says "retire"
// (details["served"]["next"]). Each request runs in a fresh folder of its own, with the
// scrubbed environment of RunRunnerProcess. A server that ends or stops answering
// (request.timeout_s + `backstop_s`) is killed with all it started, and the request gets the
// "runtime_error" or "timeout" result a one-shot runner gets when it prints none. One request
// at a time: one per evaluation thread.
// Where and how a served runner starts: `wrapper` is put before its command line (srun's, to run
// it as a job step on a cluster node, slurm/slurm.h), and its request folders go under
// `requests_root` (a folder the node sees too; "" = the system's temporary folder).
struct ServedRunnerOptions {
  std::vector<std::string> wrapper;
  std::filesystem::path requests_root;
  double backstop_s = 900;
};

class ServedRunner : public RunnerChannel {
 public:
  explicit ServedRunner(std::filesystem::path runner_exe, double backstop_s = 900);
  ServedRunner(std::filesystem::path runner_exe, ServedRunnerOptions options);
  ~ServedRunner() override;
  Result<RunnerOutcome> Run(const RunRequest& request) override;
  int servers_started() const { return servers_started_; }

 private:
  const std::filesystem::path runner_exe_;
  const ServedRunnerOptions options_;
  std::optional<TempDir> requests_;  // the server's request folders live here (its sandbox keeps it)
  std::unique_ptr<LiveProcess> server_;
  int servers_started_ = 0;
};

// Readies `request` for a sandboxed runner working in `dir`: each object it names (reference,
// baseline, candidate, sweep objects) is linked or copied into dir/objects/ and the request
// names the copy (one that does not exist keeps its name: the runner reports it), and the folders the objects came from
// (the compile cache, and the store that holds it) join request.sandbox_hide, so the worker sees neither.
Status StageObjects(RunRequest& request, const std::filesystem::path& dir);

// Adds `path` to `list` (a sandbox's hidden or kept paths) unless it is there already, empty or
// the root.
void AddSandboxPath(const std::filesystem::path& path, std::vector<std::string>* list);
// Adds to `hide` the compile cache `object` came from (<cache>/<key>/object.so) and the store
// that holds that cache, if one does.
void HideObjectOrigin(const std::filesystem::path& object, std::vector<std::string>* hide);

// What a runner's worker must not see of a task's evaluation: the task folder and the user's
// home folder (the objects' own folders are added by StageObjects).
std::vector<std::string> SandboxHiddenPaths(const Task& task);

// Builds the runner request for `task` (pure; exposed for tests).
Result<RunRequest> BuildRunRequest(const Task& task, const EvalOptions& options);

// The task's workloads named in `names` (all when empty), in the task's order; a name the task
// lacks is InvalidInput listing the ones it has.
Result<std::vector<const Workload*>> SelectWorkloads(const Task& task, const std::vector<std::string>& names);

// The compile_error verdict of a compile that failed (summary, first error, log excerpt).
Verdict CompileErrorVerdict(const CompileOutput& compiled);

// The task's first workload with its [draw] axes drawn from the system's CSPRNG, named
// "drawn AXIS=SIZE …" (no roofline: it is checked, not timed).
Workload DrawWorkload(const Task& task);

// Lowered precision seen before anything runs: a task whose work is f32 or f64 (its declared
// compute precision, else its first output's dtype, with no float input narrower than f32) and a
// candidate whose SASS has tensor-core instructions on narrower operands (NarrowTensorCoreOps)
// get an `incorrect` verdict naming them. Nothing when the SASS is not there to read.
std::optional<Verdict> NarrowTensorCoreVerdict(const Task& task, const CompileOutput& compiled);

}  // namespace kpilot
