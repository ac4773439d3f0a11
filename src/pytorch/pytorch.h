// PyTorch-defined tasks (docs/pytorch.md): KernelBench problem files and flashinfer-bench
// definitions loaded into a Task, evaluated by kpilot's Python worker (python/kpilot_torch), and
// reported in those communities' formats (flashinfer Trace JSONL, the contest score).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "core/subprocess.h"
#include "harness/harness.h"
#include "store/store.h"
#include "task/task.h"

namespace kpilot {

// ---- The Python worker -------------------------------------------------------------------------

// The interpreter that runs the worker and where the worker's package lives.
struct PythonWorker {
  std::filesystem::path python;      // an interpreter with torch (checked when first used)
  std::filesystem::path pythonpath;  // the folder holding kpilot_torch/
  // kpilot-runner, which confines `run` requests (the candidate's code runs in them) with
  // `--sandbox`; empty: they run unconfined (tests of the worker's own procedures).
  std::filesystem::path sandbox_runner;
  bool sandbox = true;  // false: --no-sandbox
  // Where the interpreter's bytecode (.pyc) for torch and the worker is kept between runs ("" =
  // none): without it every worker compiles torch's sources again at import (several seconds;
  // more with torch.compile's modules). Filled once by a trusted run that imports those modules
  // and nothing else (PrepareBytecodeCache); workers only read it, inside the sandbox too.
  std::filesystem::path bytecode_cache;
  // Where each request's folder is made ("" = the system's temporary folder). A worker that runs
  // on another machine (a Slurm node, through a ProcessRunner that starts it there) gets a folder
  // both machines see, and every file its request names is copied into the request's folder.
  std::filesystem::path work_root;
};

// kpilot's cache folder: $KPILOT_CACHE_DIR, else $XDG_CACHE_HOME/kpilot, else $HOME/.cache/kpilot
// ("" when none of them is set).
std::filesystem::path KpilotCacheRoot();

// The bytecode cache of `python` under `cache_root` (a folder per interpreter path), or "" when
// there is no cache root. The cache root: $KPILOT_CACHE_DIR, else $XDG_CACHE_HOME/kpilot, else
// $HOME/.cache/kpilot.
std::filesystem::path BytecodeCacheFor(const std::filesystem::path& python);

// Fills worker.bytecode_cache once (a `ready` file marks it; concurrent callers wait on a lock in
// it): the interpreter, unconfined and with no task's code, imports torch, torch.compile's modules
// when present, and the worker's own, writing their bytecode there. An error leaves workers
// compiling at import as before (the caller warns); it is retried by the next process.
Status PrepareBytecodeCache(ProcessRunner& processes, const PythonWorker& worker);
// Whether worker.bytecode_cache is filled for the torch installed now.
bool BytecodeCacheReady(const PythonWorker& worker);

// `python_flag`: --python as given ("" = `python3` on PATH). `package_dir`: the folder holding
// kpilot_torch/ (the CLI's PythonPackageDir(): $KPILOT_PYTHONPATH, ../share/kpilot/python beside
// the binary, the source tree's python/). NotFound when the interpreter is not there (the message
// says to pass --python PATH) or the folder holds no kpilot_torch/worker.py. Torch itself is only
// checked when the worker runs.
Result<PythonWorker> FindPythonWorker(const std::string& python_flag, const std::filesystem::path& package_dir);

// Runs `python -m kpilot_torch.worker MODE request.json` in a fresh folder, with the scrubbed
// environment and PYTHONPATH=<pythonpath>, and returns the JSON object printed on the last line
// of stdout. A reply of status "error" is returned as it is.
// Without a reply:
//   - torch or kpilot_torch cannot be imported → Unavailable: "python3 has no torch — pass
//     --python PATH to an interpreter with torch" (or where the package was looked for);
//   - mode "run": the candidate is at fault (it crashed or hung the worker) → a made-up reply of
//     status "timeout" or "runtime_error" naming the exit and the tail of stderr;
//   - mode "describe" → InvalidInput with the exit and the tail of stderr.
// `timeout_s` bounds the worker's own work; the process gets a backstop beyond it.
// A `run` request with worker.sandbox_runner set runs confined (sandbox/sandbox.h): the problem,
// candidate and objects are copied into its folder, which is all it sees of kpilot's files; the
// reply's "sandbox" holds the report (WorkerTaskRunner::Run turns its denials into the verdict:
// ApplySandboxDenials).
Result<nlohmann::json> RunWorker(ProcessRunner& processes, const PythonWorker& worker, const std::string& mode,
                                 const nlohmann::json& request, double timeout_s);

// The harness's seam for PyTorch-defined tasks, served by the worker: BuildWorkerRequest, then
// RunWorker, then RunResultFromJson. Borrowed ProcessRunner; thread-safe as it is.
class WorkerTaskRunner : public PythonTaskRunner {
 public:
  WorkerTaskRunner(ProcessRunner& processes, PythonWorker worker);
  Result<RunResult> Run(const Task& task, const PythonSubject& candidate, const PythonSubject& baseline,
                        const EvalOptions& options) override;

 private:
  ProcessRunner& processes_;
  PythonWorker worker_;
};

// The worker's `run` request (docs/pytorch.md, "run") for `task` (pure). Workloads: kernelbench
// [{"name": "default"}]; flashinfer each selected workload's record with "name" added (the
// options' workloads, all when empty; an unknown name is InvalidInput listing the known ones).
// Timing, seeds and timeout from `options` (every timing procedure keeps every exploit check);
// the device from TorchDevice(options).
Result<nlohmann::json> BuildWorkerRequest(const Task& task, const PythonSubject& candidate,
                                          const PythonSubject& baseline, const EvalOptions& options);

// ---- Loading ------------------------------------------------------------------------------------

struct LoadTaskOptions {
  std::string python;                              // --python ("" = python3 on PATH)
  std::filesystem::path pythonpath;                // the folder holding kpilot_torch/ (PythonPackageDir())
  std::optional<std::filesystem::path> workloads;  // --workloads FILE.jsonl (flashinfer)
};

// A task folder (task.toml, or the file itself), a KernelBench problem (.py) or a flashinfer
// Definition (.json). Anything else is InvalidInput saying what is accepted.
Result<Task> LoadAnyTask(ProcessRunner& processes, const std::filesystem::path& path, const LoadTaskOptions& options);

// KernelBench: asks the worker to describe the problem, then builds the Task (pure part below).
Result<Task> LoadKernelBenchProblem(ProcessRunner& processes, const PythonWorker& worker,
                                    const std::filesystem::path& problem);
// The Task of a describe reply (docs/pytorch.md, "describe"): backend cuda, format kernelbench,
// reference {kind python, path problem, entry "Model"}, tensors in ABI order (TensorSpec::role
// "input" or "param"), scalars, one workload "default" binding every axis, flops and bytes as
// its roofline. A reply of status "error" or a malformed one is InvalidInput naming the problem
// file and the field.
Result<Task> TaskFromDescribe(const nlohmann::json& reply, const std::filesystem::path& problem);

// flashinfer-bench: Definition JSON plus its workloads JSONL (found as docs/pytorch.md says when
// `workloads` is empty). Pure C++: no Python needed.
Result<Task> LoadFlashInferDefinition(const std::filesystem::path& definition,
                                      const std::optional<std::filesystem::path>& workloads);

// ---- Baselines ----------------------------------------------------------------------------------

// sha256 of a PyTorch-defined task's problem or definition file ("" for native tasks).
std::string ProblemSha(const Task& task);
// The eager and torch.compile baselines of a PyTorch-defined task's evaluation `e`: caches the one
// `e` measured (in `store`, which may be null, per problem, GPU — "cpu" on the cpu device —, torch
// version, procedure and workload) and reads the other from the cache. Returns
//   {"gpu", "torch", "timing", "eager": null | {"ms": {workload: ms}, "cached": bool, "speedup": x},
//    "compile": likewise}
// where this run's baseline has its paired geomean speedup and a cached one the geomean of its
// cached times over the candidate's (unpaired; 0 unless every timed workload has one).
Result<nlohmann::json> TorchBaselines(Store* store, const Task& task, const Evaluation& e, TimingMode timing);

// ---- flashinfer-bench output -------------------------------------------------------------------

// One Trace record (flashinfer-bench 0.1.2 schema) for one workload of one evaluation.
struct TraceInput {
  std::string definition;   // the definition's name
  nlohmann::json workload;  // the workload record as read from the JSONL
  std::string solution;     // the solution's name
  std::string status;       // PASSED | INCORRECT_SHAPE | INCORRECT_NUMERICAL | INCORRECT_DTYPE |
                            // RUNTIME_ERROR | COMPILE_ERROR | TIMEOUT
  std::string log;
  double max_abs_error = 0, max_rel_error = 0;
  double latency_ms = 0, reference_latency_ms = 0;
  nlohmann::json environment;  // {"hardware": "...", "libs": {"torch": "..."}}
  std::string timestamp;       // ISO 8601
};
nlohmann::json TraceRecord(const TraceInput& in);

// The contest's score: the mean of per-workload speedups; 0 if any workload failed.
double ContestScore(const std::vector<double>& speedups, const std::vector<bool>& passed);

}  // namespace kpilot
