// One entry point for every task source: a task folder, a KernelBench problem, a flashinfer-bench
// definition (docs/pytorch.md, "Task identity").
#include "pytorch/pytorch.h"
#include "task/loader.h"

namespace kpilot {
namespace fs = std::filesystem;

Result<Task> LoadAnyTask(ProcessRunner& processes, const fs::path& path, const LoadTaskOptions& options) {
  std::error_code ec;
  if (fs::is_directory(path, ec) || path.filename() == "task.toml") return LoadTask(path);
  if (!fs::exists(path, ec)) return Status::NotFound("no task folder or file at " + path.string());
  std::string ext = path.extension().string();
  if (ext == ".py") {
    auto worker = FindPythonWorker(options.python, options.pythonpath);
    if (!worker.ok()) return worker.status();
    return LoadKernelBenchProblem(processes, *worker, path);
  }
  if (ext == ".json") return LoadFlashInferDefinition(path, options.workloads);
  return Status::InvalidInput(path.string() +
                              ": not a task — give a task folder (holding task.toml), a KernelBench problem (.py) "
                              "or a flashinfer-bench definition (.json)");
}

}  // namespace kpilot
