// TASK arguments that may be PyTorch-defined (docs/pytorch.md): loading them and the torch worker
// that evaluates them.
#include <fmt/format.h>

#include "cli/cli.h"
#include "pytorch/pytorch.h"

namespace kpilot::cli {

void AddTaskSourceOptions(CLI::App* cmd, TaskSourceArgs* a) {
  cmd->add_option("--python", a->python,
                  "PyTorch tasks: the interpreter with torch that runs kpilot's worker (default: python3 on PATH)");
  cmd->add_option(
      "--workloads", a->workloads_file,
      "flashinfer definitions: the workloads JSONL (default: the dataset layout, else <name>.jsonl beside it)");
  cmd->add_flag("--no-libraries", a->no_libraries,
                "Candidates may not run vendor-library or PyTorch kernels: such use makes the verdict incorrect "
                "(the task's `libraries = false`)");
  cmd->add_flag("--no-cutlass", a->no_cutlass,
                "CUDA candidates compile without the CUTLASS/CuTe headers on their include path (the task's "
                "`cutlass = false`)");
}

Result<Task> LoadTaskArg(const std::string& path, const TaskSourceArgs& a) {
  LoadTaskOptions opt;
  opt.python = a.python;
  opt.pythonpath = PythonPackageDir();
  if (!a.workloads_file.empty()) opt.workloads = std::filesystem::absolute(a.workloads_file);
  auto task = LoadAnyTask(SystemProcessRunner(), path, opt);
  if (task.ok() && a.no_libraries) task->libraries = false;
  if (task.ok() && a.no_cutlass) task->cutlass = false;
  return task;
}

Result<std::unique_ptr<PythonTaskRunner>> MakePythonTaskRunner(const Task& task, const std::string& python) {
  if (task.reference.kind != ReferenceKind::kPython) return std::unique_ptr<PythonTaskRunner>();
  auto worker = FindPythonWorker(python, PythonPackageDir());
  if (!worker.ok()) return worker.status();
  worker->sandbox_runner = RunnerPath();
  return std::unique_ptr<PythonTaskRunner>(std::make_unique<WorkerTaskRunner>(SystemProcessRunner(), *worker));
}

// The candidate a search starts from: --from, else the first (sorted) native candidate in the
// task's candidates/ — for a problem or definition file, <its folder>/candidates/<its stem>/, else
// <its folder>/../candidates/<its stem>/ (a suite's layout, e.g. examples/kernelbench).
Result<std::string> StartingCandidate(const Task& task, const std::string& from) {
  if (!from.empty()) {
    if (!std::filesystem::exists(from)) return Status::NotFound(from + ": no such candidate file");
    return from;
  }
  std::vector<std::string> found;
  bool python = task.reference.kind == ReferenceKind::kPython;
  std::string ext = task.backend == Backend::kCuda && !(python && !NeedsGpu(task)) ? ".cu" : ".cpp";
  std::filesystem::path dir = task.dir / "candidates";
  // A suite keeps candidates beside its level folders: <suite>/candidates/<stem>/ for <suite>/level1/<stem>.py.
  std::vector<std::filesystem::path> dirs = {dir};
  if (python)
    dirs = {dir / task.reference.path.stem(), task.dir.parent_path() / "candidates" / task.reference.path.stem()};
  std::error_code ec;
  for (const auto& d : dirs) {
    for (auto& e : std::filesystem::directory_iterator(d, ec))
      if (e.path().extension() == ext) found.push_back(e.path().string());
    if (!found.empty()) {
      dir = d;
      break;
    }
  }
  if (python && found.empty()) dir = dirs.front();
  std::sort(found.begin(), found.end());
  if (found.empty())
    return Status::InvalidInput("task " + task.name + " has no " + dir.string() + "/*" + ext +
                                " to start from — pass --from FILE");
  return found.front();
}

}  // namespace kpilot::cli
