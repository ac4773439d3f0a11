// Running kpilot's Python worker (python/kpilot_torch/worker.py): finding an interpreter and the
// package, one process per request, and the harness seam built on it.
#include <algorithm>
#include <mutex>
#include <set>
#include <sstream>

#include "core/fs.h"
#include "core/sha256.h"
#include "core/text.h"
#include "pytorch/pytorch.h"
#include "runner/worker.h"
#include "sandbox/sandbox.h"

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

// Copies what the request names into `dir`/inputs/ and points the request at the copies, so that
// the sandbox can hide where they came from (the task folder, the compile cache and its store).
Status StageRequestFiles(nlohmann::json& request, const fs::path& dir, SandboxSpec& spec) {
  std::error_code ec;
  fs::create_directories(dir / "inputs", ec);
  int n = 0;
  auto stage = [&](nlohmann::json& holder, const char* key, bool hide_folder) -> Status {
    if (!holder.is_object() || !holder.contains(key) || !holder[key].is_string()) return Status::Ok();
    const fs::path from = holder[key].get<std::string>();
    if (from.empty()) return Status::Ok();
    const fs::path to = dir / "inputs" / (std::to_string(n++) + "-" + from.filename().string());
    fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
    if (ec) return Status::Internal("copying " + from.string() + " for the torch worker: " + ec.message());
    fs::permissions(to, fs::perms(0644), ec);
    holder[key] = to.string();
    if (hide_folder) AddSandboxPath(from.parent_path(), &spec.hide);
    return Status::Ok();
  };
  // A KernelBench problem is one file; a flashinfer definition's workloads name the dataset's
  // safetensors files by absolute path: their folders stay readable, wherever they are.
  const bool kernelbench = request.value("format", "") == "kernelbench";
  KPILOT_RETURN_IF_ERROR(stage(request, "problem", kernelbench));
  if (request.contains("workloads") && request["workloads"].is_array())
    for (const auto& w : request["workloads"]) {
      if (!w.is_object() || !w.contains("inputs") || !w["inputs"].is_object()) continue;
      for (const auto& [name, input] : w["inputs"].items())
        if (input.is_object() && input.contains("path") && input["path"].is_string())
          AddSandboxPath(fs::path(input["path"].get<std::string>()).parent_path(), &spec.keep_read_only);
    }
  for (const char* side : {"candidate", "baseline"}) {
    if (!request.contains(side)) continue;
    KPILOT_RETURN_IF_ERROR(stage(request[side], "path", true));
    if (request[side].contains("object") && request[side]["object"].is_string()) {
      const fs::path object = request[side]["object"].get<std::string>();
      KPILOT_RETURN_IF_ERROR(stage(request[side], "object", false));
      HideObjectOrigin(object, &spec.hide);
    }
  }
  return Status::Ok();
}

// The environment every interpreter kpilot starts gets: the user's, scrubbed, without the
// variables that would point Python elsewhere (or, `without_home`, the user's home), and the
// worker's package on PYTHONPATH.
std::vector<std::string> PythonEnvironment(const PythonWorker& worker, bool without_home) {
  std::vector<std::string> env;
  for (auto& entry : ScrubbedEnvironment()) {
    bool drop = without_home && entry.rfind("HOME=", 0) == 0;
    for (const char* name : {"PYTHONPATH=", "PYTHONHOME=", "PYTHONPYCACHEPREFIX=", "PYTHONDONTWRITEBYTECODE="})
      drop |= entry.rfind(name, 0) == 0;
    if (!drop) env.push_back(entry);
  }
  env.push_back("PYTHONPATH=" + worker.pythonpath.string());
  return env;
}

// The sandbox of a `run` request: its folder writable, the worker's package and interpreter
// readable, the user's home and the staged files' origins hidden; a GPU's timing lock inherited.
// KPILOT_SANDBOX narrows it; nullopt when it turns the sandbox off.
Result<std::optional<SandboxSpec>> WorkerSandbox(const PythonWorker& worker, bool bytecode_cached,
                                                 nlohmann::json& request, const fs::path& dir) {
  const std::string device = request.value("device", "cpu");
  const bool cuda = device.rfind("cuda", 0) == 0;
  bool enabled = true;
  auto over = ApplySandboxOverride(DefaultSandboxSpec(), std::getenv("KPILOT_SANDBOX"), &enabled);
  if (!over.ok()) return over.status();
  if (!enabled) return std::optional<SandboxSpec>();
  SandboxSpec spec = *over;
  if (const char* home = std::getenv("HOME"); home && *home) AddSandboxPath(home, &spec.hide);
  KPILOT_RETURN_IF_ERROR(StageRequestFiles(request, dir, spec));
  spec.keep_writable = {dir.string()};
  AddSandboxPath(worker.pythonpath, &spec.keep_read_only);
  if (bytecode_cached) AddSandboxPath(worker.bytecode_cache, &spec.keep_read_only);
  // A virtual environment's folder and the interpreter's own prefix, wherever they are.
  std::error_code ec;
  const fs::path python = worker.python.is_absolute() ? worker.python : fs::path(FindOnPath(worker.python.string()));
  AddSandboxPath(python.parent_path().parent_path(), &spec.keep_read_only);
  AddSandboxPath(fs::canonical(python, ec).parent_path().parent_path(), &spec.keep_read_only);
  if (cuda) {
    const size_t colon = device.find(':');
    const std::string index = colon == std::string::npos ? "0" : device.substr(colon + 1);
    spec.inherit_file = request.value("lock_dir", "/tmp") + "/kpilot-gpu-" + index + ".lock";
    spec.inherit_fd = kGpuLockFd;
  }
  return std::optional<SandboxSpec>(spec);
}

// A confined run's reply carries its sandbox report (the worker's own leftover count kept);
// WorkerTaskRunner::Run applies its denials to the verdict.
void MergeSandboxReport(const SandboxReport& report, nlohmann::json& reply) {
  nlohmann::json s = ToJson(report);
  if (reply.contains("sandbox") && reply["sandbox"].is_object())
    s["leftover_processes_killed"] = reply["sandbox"].value("leftover_processes_killed", 0);
  reply["sandbox"] = s;
}

// What the trusted warm-up imports: torch, the modules torch.compile loads (absent from old
// torch: skipped), and the worker's own. No task's code runs.
constexpr char kWarmImports[] = R"(
import importlib
for name in ("torch", "torch.nn", "torch.utils.cpp_extension", "torch._dynamo", "torch._inductor.compile_fx",
             "torch._inductor.codegen.triton", "triton", "kpilot_torch.worker", "kpilot_torch.kernelbench",
             "kpilot_torch.flashinfer", "kpilot_torch.checks", "kpilot_torch.timing", "kpilot_torch.native"):
    try:
        importlib.import_module(name)
    except Exception:
        pass
import os, sys
try:
    import torch
except Exception:
    sys.exit(3)  # no torch here: the worker itself says so when it runs
print(os.path.join(os.path.dirname(torch.__file__), "version.py"))
)";
constexpr int kWarmUpNoTorch = 3;

// Seconds the warm-up may take (torch.compile's modules compile thousands of files once).
constexpr double kWarmUpTimeoutS = 900;

}  // namespace

fs::path KpilotCacheRoot() {
  fs::path root;
  if (const char* d = std::getenv("KPILOT_CACHE_DIR"); d && *d)
    root = d;
  else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    root = fs::path(x) / "kpilot";
  else if (const char* h = std::getenv("HOME"); h && *h)
    root = fs::path(h) / ".cache" / "kpilot";
  std::error_code ec;
  return root.empty() ? root : fs::absolute(root, ec);
}

fs::path BytecodeCacheFor(const fs::path& python) {
  const fs::path root = KpilotCacheRoot();
  if (root.empty()) return {};
  fs::path resolved = python.is_absolute() ? python : fs::path(FindOnPath(python.string()));
  // One folder per interpreter as it is named: a venv's python and the one it links to keep
  // separate caches, as their site-packages differ.
  return root / "pycache" / Sha256Hex(resolved.lexically_normal().string()).substr(0, 16);
}

namespace {

// The cache's `ready` file names torch's version.py and its modification time when it was filled:
// a torch installed since (whose sources the cached bytecode no longer matches) fills it again.
bool CacheIsCurrent(const fs::path& ready) {
  auto text = ReadFile(ready);
  if (!text.ok()) return false;
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object() || !j.contains("stamp") || !j["stamp"].is_string()) return false;
  std::error_code ec;
  auto t = fs::last_write_time(j["stamp"].get<std::string>(), ec);
  return !ec && j.value("stamp_mtime", int64_t{-1}) == static_cast<int64_t>(t.time_since_epoch().count());
}

}  // namespace

bool BytecodeCacheReady(const PythonWorker& worker) {
  return !worker.bytecode_cache.empty() && CacheIsCurrent(worker.bytecode_cache / "ready");
}

Status PrepareBytecodeCache(ProcessRunner& processes, const PythonWorker& worker) {
  if (worker.bytecode_cache.empty()) return Status::Ok();
  std::error_code ec;
  const fs::path ready = worker.bytecode_cache / "ready";
  if (CacheIsCurrent(ready)) return Status::Ok();
  static std::mutex mu;             // one warm-up per process; other kpilot processes wait on the file lock
  static std::set<fs::path> tried;  // a warm-up that failed is not tried again by this process
  std::lock_guard<std::mutex> in_process(mu);
  if (!tried.insert(worker.bytecode_cache).second) return Status::Ok();
  auto lock = FileLock::TryLock(worker.bytecode_cache / ".lock", kWarmUpTimeoutS);
  if (!lock.ok()) return lock.status().WithContext("the bytecode cache " + worker.bytecode_cache.string());
  if (!lock->has_value())
    return Status::Unavailable("the bytecode cache " + worker.bytecode_cache.string() +
                               " is being filled by another kpilot for longer than expected");
  if (CacheIsCurrent(ready)) return Status::Ok();
  ProcessSpec spec;
  spec.argv = {worker.python.string(), "-c", kWarmImports};
  spec.env = PythonEnvironment(worker, false);
  spec.env->push_back("PYTHONPYCACHEPREFIX=" + worker.bytecode_cache.string());
  spec.env->push_back("CUDA_VISIBLE_DEVICES=");  // imports only: no GPU context
  spec.timeout_s = kWarmUpTimeoutS;
  auto proc = processes.Run(spec);
  if (!proc.ok()) return proc.status().WithContext("filling the bytecode cache");
  if (!proc->timed_out && proc->term_signal == 0 && proc->exit_code == kWarmUpNoTorch) return Status::Ok();
  if (proc->timed_out || proc->exit_code != 0)
    return Status::Unavailable("filling the bytecode cache " + worker.bytecode_cache.string() + " failed (" +
                               proc->Describe(spec.timeout_s) + "): " + Tail(proc->err, 500));
  std::string stamp = Trim(proc->out);
  if (auto nl = stamp.rfind('\n'); nl != std::string::npos) stamp = stamp.substr(nl + 1);
  auto t = fs::last_write_time(stamp, ec);
  if (ec) return Status::Unavailable("filling the bytecode cache: torch's version.py (" + stamp + ") is unreadable");
  nlohmann::json j = {{"python", worker.python.string()},
                      {"stamp", stamp},
                      {"stamp_mtime", static_cast<int64_t>(t.time_since_epoch().count())},
                      {"filled", UtcNow()}};
  return WriteFileAtomic(ready, j.dump() + "\n");
}

Result<PythonWorker> FindPythonWorker(const std::string& python_flag, const fs::path& package_dir) {
  PythonWorker w;
  std::string python = python_flag.empty() ? "python3" : python_flag;
  std::string found = FindOnPath(python);
  if (found.empty())
    return Status::NotFound(python_flag.empty()
                                ? "python3 is not on PATH — pass --python PATH to an interpreter with torch"
                                : "--python " + python_flag +
                                      ": no such executable — give the path of an interpreter with torch");
  std::error_code ec;
  // The worker runs in a fresh folder: a relative --python (e.g. .venv/bin/python) must not lose
  // its meaning there, or the interpreter would start without its environment's packages.
  w.python = found.find('/') != std::string::npos ? fs::absolute(found, ec).lexically_normal() : fs::path(found);
  if (!fs::is_regular_file(package_dir / "kpilot_torch" / "worker.py", ec))
    return Status::NotFound("kpilot's Python worker is not in " + package_dir.string() +
                            " (no kpilot_torch/worker.py) — reinstall kpilot, or set KPILOT_PYTHONPATH to the folder "
                            "holding kpilot_torch/");
  w.pythonpath = fs::absolute(package_dir, ec).lexically_normal();
  w.bytecode_cache = BytecodeCacheFor(w.python);
  return w;
}

Result<nlohmann::json> RunWorker(ProcessRunner& processes, const PythonWorker& worker, const std::string& mode,
                                 const nlohmann::json& request, double timeout_s) {
  auto workdir = worker.work_root.empty() ? TempDir::Create("kpilot-torch-")
                                          : TempDir::CreateIn(worker.work_root, "kpilot-torch-");
  if (!workdir.ok()) return workdir.status().WithContext("the torch worker's request folder");
  fs::path request_path = workdir->path() / "request.json";
  nlohmann::json sent = request;
  std::optional<SandboxSpec> sandbox;
  std::string cache_warning;
  if (Status c = PrepareBytecodeCache(processes, worker); !c.ok()) cache_warning = c.message();
  const bool bytecode_cached = BytecodeCacheReady(worker);
  if (mode == "run" && worker.sandbox && !worker.sandbox_runner.empty()) {
    auto s = WorkerSandbox(worker, bytecode_cached, sent, workdir->path());
    if (!s.ok()) return s.status();
    sandbox = *s;
  }
  const bool confined = sandbox.has_value();
  if (!confined && !worker.work_root.empty()) {
    // Unconfined on another machine: the problem and the objects travel in the request's folder.
    SandboxSpec unused;
    KPILOT_RETURN_IF_ERROR(StageRequestFiles(sent, workdir->path(), unused));
  }
  if (confined) {
    KPILOT_RETURN_IF_ERROR(WriteFileAtomic(workdir->path() / "sandbox.json", ToJson(*sandbox).dump()));
    std::error_code ec;
    fs::permissions(workdir->path(), fs::perms(0755), ec);
  }
  KPILOT_RETURN_IF_ERROR(WriteFileAtomic(request_path, sent.dump()));

  ProcessSpec spec;
  if (confined)
    spec.argv = {worker.sandbox_runner.string(), "--sandbox", (workdir->path() / "sandbox.json").string(), "--"};
  for (const std::string& a :
       {worker.python.string(), std::string("-m"), std::string("kpilot_torch.worker"), mode, request_path.string()})
    spec.argv.push_back(a);
  spec.cwd = workdir->path();
  spec.env = PythonEnvironment(worker, confined);
  spec.env->push_back("PYTHONDONTWRITEBYTECODE=1");
  if (bytecode_cached) spec.env->push_back("PYTHONPYCACHEPREFIX=" + worker.bytecode_cache.string());
  if (confined) {
    spec.env->push_back("HOME=/tmp");  // the sandbox's private /tmp: caches land there, not in the user's home
    if (sandbox->inherit_fd >= 0) spec.env->push_back("KPILOT_GPU_LOCK_FD=" + std::to_string(sandbox->inherit_fd));
  }
  spec.timeout_s = timeout_s + kWorkerBackstopS;
  spec.max_output_bytes = 96u << 20;
  auto proc = processes.Run(spec);
  if (!proc.ok()) return proc.status().WithContext("starting " + worker.python.string());
  std::string python = worker.python.string();
  const std::string no_torch = python + " has no torch — pass --python PATH to an interpreter with torch";
  const std::optional<SandboxReport> report = confined ? FindSandboxReport(proc->err) : std::nullopt;
  if (auto reply = LastJsonLine(proc->out)) {
    // The worker itself says so when torch does not import.
    if (reply->value("status", "") == "error" && Mentions(reply->value("message", ""), "torch is not importable"))
      return Status::Unavailable(no_torch + " (" + reply->value("message", "") + ")");
    if (report) MergeSandboxReport(*report, *reply);
    if (!cache_warning.empty() && reply->contains("warnings") && (*reply)["warnings"].is_array())
      (*reply)["warnings"].push_back(cache_warning + " — workers compile torch's sources at every start");
    return *reply;
  }

  // What the worker wrote, without the sandbox's report line (kept in the reply's sandbox section).
  const std::string err = confined ? WithoutSandboxReports(proc->err) : proc->err;
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
  if (report) MergeSandboxReport(*report, made_up);
  return made_up;
}

WorkerTaskRunner::WorkerTaskRunner(ProcessRunner& processes, PythonWorker worker)
    : processes_(processes), worker_(std::move(worker)) {}

Result<RunResult> WorkerTaskRunner::Run(const Task& task, const PythonSubject& candidate, const PythonSubject& baseline,
                                        const EvalOptions& options) {
  auto request = BuildWorkerRequest(task, candidate, baseline, options);
  if (!request.ok()) return request.status();
  PythonWorker worker = worker_;
  worker.sandbox = options.sandbox;
  auto reply = RunWorker(processes_, worker, "run", *request, options.timeout_s);
  if (!reply.ok()) return reply.status();
  // The worker speaks the runner's result format; an error reply (or a short one) carries only
  // what it knows, so fill in the empty lists and the version under the runner's key.
  nlohmann::json j = std::move(reply).value();
  if (!j.contains("kpilot_result_version")) j["kpilot_result_version"] = j.value("version", kRunnerProtocolVersion);
  for (const char* list : {"checks", "timings"})
    if (!j.contains(list)) j[list] = nlohmann::json::array();
  auto run = RunResultFromJson(j);
  if (!run.ok()) return run.status().WithContext("reading the torch worker's result");
  ApplySandboxDenials(&*run);
  return run;
}

}  // namespace kpilot
