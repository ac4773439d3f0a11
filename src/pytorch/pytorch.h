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
#include "task/task.h"

namespace kpilot {

// ---- The Python worker -------------------------------------------------------------------------

// The interpreter that runs the worker and where the worker's package lives.
struct PythonWorker {
  std::filesystem::path python;      // an interpreter with torch (checked when first used)
  std::filesystem::path pythonpath;  // the folder holding kpilot_torch/
};

// `python_flag`: --python as given ("" = `python3` on PATH). The package is found beside the
// binary (../share/kpilot/python), in the source tree, or at $KPILOT_PYTHONPATH. Errors say which
// places were tried and how to fix it.
Result<PythonWorker> FindPythonWorker(const std::string& python_flag);

// Runs `python -m kpilot_torch.worker MODE request.json` in a fresh folder and returns the JSON
// object printed on the last line of stdout. A worker that prints none is an error naming its exit
// and the tail of its stderr; a reply of status "error" is returned as it is.
Result<nlohmann::json> RunWorker(ProcessRunner& processes, const PythonWorker& worker, const std::string& mode,
                                 const nlohmann::json& request, double timeout_s);

// ---- Loading ------------------------------------------------------------------------------------

struct LoadTaskOptions {
  std::string python;                            // --python
  std::optional<std::filesystem::path> workloads;  // --workloads FILE.jsonl (flashinfer)
};

// A task folder (task.toml), a KernelBench problem (.py) or a flashinfer Definition (.json).
Result<Task> LoadAnyTask(ProcessRunner& processes, const std::filesystem::path& path, const LoadTaskOptions& options);

// KernelBench: asks the worker to describe the problem, then builds the Task (pure part below).
Result<Task> LoadKernelBenchProblem(ProcessRunner& processes, const PythonWorker& worker,
                                    const std::filesystem::path& problem);
Result<Task> TaskFromDescribe(const nlohmann::json& reply, const std::filesystem::path& problem);

// flashinfer-bench: Definition JSON plus its workloads JSONL (found as docs/pytorch.md says when
// `workloads` is empty). Pure C++: no Python needed.
Result<Task> LoadFlashInferDefinition(const std::filesystem::path& definition,
                                      const std::optional<std::filesystem::path>& workloads);

// ---- flashinfer-bench output -------------------------------------------------------------------

// One Trace record (flashinfer-bench 0.1.2 schema) for one workload of one evaluation.
struct TraceInput {
  std::string definition;            // the definition's name
  nlohmann::json workload;           // the workload record as read from the JSONL
  std::string solution;              // the solution's name
  std::string status;                // PASSED | INCORRECT_SHAPE | INCORRECT_NUMERICAL | INCORRECT_DTYPE |
                                     // RUNTIME_ERROR | COMPILE_ERROR | TIMEOUT
  std::string log;
  double max_abs_error = 0, max_rel_error = 0;
  double latency_ms = 0, reference_latency_ms = 0;
  nlohmann::json environment;        // {"hardware": "...", "libs": {"torch": "..."}}
  std::string timestamp;             // ISO 8601
};
nlohmann::json TraceRecord(const TraceInput& in);

// The contest's score: the mean of per-workload speedups; 0 if any workload failed.
double ContestScore(const std::vector<double>& speedups, const std::vector<bool>& passed);

}  // namespace kpilot
