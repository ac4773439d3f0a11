// Running kpilot's Python worker (python/kpilot_torch/worker.py): finding an interpreter and the
// package, one process per request, and the harness seam built on it.
#include <sstream>

#include "core/fs.h"
#include "pytorch/pytorch.h"

namespace kpilot {
namespace fs = std::filesystem;
namespace {

// Seconds a worker may run beyond the request's own timeout before it is killed: it starts
// Python, imports torch and may compile (torch.compile) before its clock starts.
constexpr double kWorkerBackstopS = 300;

// The last line of `out` that parses as a JSON object.
std::optional<nlohmann::json> LastJsonLine(const std::string& out) {
  std::istringstream lines(out);
  std::optional<nlohmann::json> last;
  for (std::string line; std::getline(lines, line);) {
    size_t start = line.find_first_not_of(" \t\r");
    if (start == std::string::npos || line[start] != '{') continue;
    auto j = nlohmann::json::parse(line.substr(start), nullptr, false);
    if (!j.is_discarded() && j.is_object()) last = std::move(j);
  }
  return last;
}

bool Mentions(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

}  // namespace

Result<PythonWorker> FindPythonWorker(const std::string& python_flag, const fs::path& package_dir) {
  PythonWorker w;
  std::string python = python_flag.empty() ? "python3" : python_flag;
  std::string found = FindOnPath(python);
  if (found.empty())
    return Status::NotFound(python_flag.empty()
                                ? "python3 is not on PATH — pass --python PATH to an interpreter with torch"
                                : "--python " + python_flag + ": no such executable — give the path of an interpreter with torch");
  std::error_code ec;
  // The worker runs in a fresh folder: a relative --python (e.g. .venv/bin/python) must not lose
  // its meaning there, or the interpreter would start without its environment's packages.
  w.python = found.find('/') != std::string::npos ? fs::absolute(found, ec).lexically_normal() : fs::path(found);
  if (!fs::is_regular_file(package_dir / "kpilot_torch" / "worker.py", ec))
    return Status::NotFound("kpilot's Python worker is not in " + package_dir.string() +
                            " (no kpilot_torch/worker.py) — reinstall kpilot, or set KPILOT_PYTHONPATH to the folder "
                            "holding kpilot_torch/");
  w.pythonpath = fs::absolute(package_dir, ec).lexically_normal();
  return w;
}

Result<nlohmann::json> RunWorker(ProcessRunner& processes, const PythonWorker& worker, const std::string& mode,
                                 const nlohmann::json& request, double timeout_s) {
  auto workdir = TempDir::Create("kpilot-torch-");
  if (!workdir.ok()) return workdir.status();
  fs::path request_path = workdir->path() / "request.json";
  KPILOT_RETURN_IF_ERROR(WriteFileAtomic(request_path, request.dump()));

  ProcessSpec spec;
  spec.argv = {worker.python.string(), "-m", "kpilot_torch.worker", mode, request_path.string()};
  spec.cwd = workdir->path();
  spec.env = std::vector<std::string>{};
  for (auto& entry : ScrubbedEnvironment())
    if (entry.rfind("PYTHONPATH=", 0) != 0 && entry.rfind("PYTHONHOME=", 0) != 0) spec.env->push_back(entry);
  spec.env->push_back("PYTHONPATH=" + worker.pythonpath.string());
  spec.env->push_back("PYTHONDONTWRITEBYTECODE=1");
  spec.timeout_s = timeout_s + kWorkerBackstopS;
  spec.max_output_bytes = 96u << 20;
  auto proc = processes.Run(spec);
  if (!proc.ok()) return proc.status().WithContext("starting " + worker.python.string());
  std::string python = worker.python.string();
  const std::string no_torch = python + " has no torch — pass --python PATH to an interpreter with torch";
  if (auto reply = LastJsonLine(proc->out)) {
    // The worker itself says so when torch does not import.
    if (reply->value("status", "") == "error" && Mentions(reply->value("message", ""), "torch is not importable"))
      return Status::Unavailable(no_torch + " (" + reply->value("message", "") + ")");
    return *reply;
  }

  const std::string& err = proc->err;
  if (Mentions(err, "No module named 'torch'")) return Status::Unavailable(no_torch);
  if (Mentions(err, "No module named 'kpilot_torch"))
    return Status::Unavailable(python + " cannot import kpilot_torch from " + worker.pythonpath.string() +
                               " — reinstall kpilot, or set KPILOT_PYTHONPATH to the folder holding kpilot_torch/");
  std::string what = "the torch worker (" + python + " -m kpilot_torch.worker " + mode + ") printed no result (" +
                     proc->Describe(spec.timeout_s) + "): " + Tail(err, 1500);
  if (mode != "run") return Status::InvalidInput(what);
  // The candidate runs inside the worker: a crash or a hang there is the candidate's verdict.
  nlohmann::json made_up = {{"kpilot_result_version", kRunnerProtocolVersion},
                            {"status", proc->timed_out ? "timeout" : "runtime_error"},
                            {"message", what},
                            {"phase", "load"},
                            {"wall_s", proc->wall_s}};
  return made_up;
}

WorkerTaskRunner::WorkerTaskRunner(ProcessRunner& processes, PythonWorker worker)
    : processes_(processes), worker_(std::move(worker)) {}

Result<RunResult> WorkerTaskRunner::Run(const Task& task, const PythonSubject& candidate, const PythonSubject& baseline,
                                        const EvalOptions& options) {
  auto request = BuildWorkerRequest(task, candidate, baseline, options);
  if (!request.ok()) return request.status();
  auto reply = RunWorker(processes_, worker_, "run", *request, options.timeout_s);
  if (!reply.ok()) return reply.status();
  // The worker speaks the runner's result format; an error reply (or a short one) carries only
  // what it knows, so fill in the empty lists and the version under the runner's key.
  nlohmann::json j = std::move(reply).value();
  if (!j.contains("kpilot_result_version")) j["kpilot_result_version"] = j.value("version", kRunnerProtocolVersion);
  for (const char* list : {"checks", "timings"})
    if (!j.contains(list)) j[list] = nlohmann::json::array();
  auto run = RunResultFromJson(j);
  if (!run.ok()) return run.status().WithContext("reading the torch worker's result");
  return run;
}

}  // namespace kpilot
