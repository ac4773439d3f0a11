#include "runner/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "core/fs.h"
#include "core/random.h"
#include "core/subprocess.h"
#include "runner/supervision.h"

namespace kpilot {
namespace {

constexpr size_t kMaxResultBytes = 64u << 20;

void SetLimit(int resource, rlim_t soft, rlim_t hard) {
  rlimit rl{soft, hard};
  setrlimit(resource, &rl);
}

// `tag`: drawn by the supervisor for this run and echoed on the result line; a result line
// without it was not written by this code (ForgedResultVerdict).
[[noreturn]] void WorkerMain(const RunRequest& req, const WorkerFn& worker, Sandbox& box, const std::string& tag) {
  LimitWorker(req, /*serving=*/false);
  int devnull = open("/dev/null", O_RDONLY);
  if (devnull >= 0) dup2(devnull, 0);
  RedirectOutput(".");
  ConfineOrExit(box);
  PipeReporter reporter;
  RunResult result = worker(req, reporter);
  PipeReporter::WriteAll("result " + tag + " " + JsonText(ToJson(result)) + "\n");
  // _exit: candidates' static destructors and atexit handlers must not run after the report.
  _exit(0);
}

// PID 1 of the new namespace: mounts the namespace's /proc, forks the worker, reaps every
// orphan, and when the worker ends reports how (the supervisor sees only this process's exit)
// and exits, which makes the kernel kill whatever is left in the namespace.
[[noreturn]] void InitMain(const RunRequest& req, const WorkerFn& worker, Sandbox& box, const std::string& tag) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // the namespace ends with its supervisor
  if (!box.MountNamespaceProc())
    PipeReporter::WriteAll("sandbox no fresh /proc could be mounted for the PID namespace\n");
  pid_t w = fork();
  if (w < 0) _exit(127);
  if (w == 0) WorkerMain(req, worker, box, tag);
  box.CloseInherited();
  const int st = WaitReapingOrphans(w);
  if (st < 0) _exit(127);
  PipeReporter::WriteAll(WIFSIGNALED(st) ? "worker signal " + std::to_string(WTERMSIG(st)) + "\n"
                                         : "worker exit " + std::to_string(WEXITSTATUS(st)) + "\n");
  _exit(0);
}

std::string FileTail(const char* path, size_t max_bytes) {
  auto text = ReadFile(path);
  return text.ok() ? Tail(*text, max_bytes) : std::string();
}

std::string SignalName(int sig) {
  const char* s = strsignal(sig);
  return std::to_string(sig) + " (" + (s ? s : "?") + ")";
}

// The worker's timing samples must fit inside the loop as this process saw it: a patched or
// lying timer in the worker shows up as samples adding to more than elapsed, or as a worker
// clock that ran slower than ours.
void CheckAgainstParentClock(const std::map<std::string, double>& parent_loop_ms, RunResult* r) {
  for (const auto& t : r->timings) {
    auto it = parent_loop_ms.find(t.workload);
    if (it == parent_loop_ms.end()) continue;
    double parent = it->second, sampled = 0;
    for (double v : t.candidate_ms) sampled += v;
    for (double v : t.baseline_ms) sampled += v;
    r->details["clocks"][t.workload]["parent_loop_ms"] = parent;
    if (r->status != "passed") continue;
    if (sampled > parent * 1.05 + 2) {
      r->status = "suspicious";
      r->message = "on workload " + t.workload + " the timing samples add up to " + std::to_string(sampled) +
                   " ms but the supervising process saw the loop take " + std::to_string(parent) + " ms";
    } else if (t.loop_wall_ms > 0 && t.loop_wall_ms < 0.5 * parent - 20) {
      r->status = "suspicious";
      r->message = "on workload " + t.workload + " the worker's clock saw the timing loop take " +
                   std::to_string(t.loop_wall_ms) + " ms, the supervising process " + std::to_string(parent) + " ms";
    }
  }
}

}  // namespace

// The limits of one request. RLIMIT_CPU counts the process's whole life, so a serving worker
// moves its soft limit to what it has used so far plus this request's share (the hard limit
// cannot be raised again once lowered, so it stays as inherited there).
void LimitWorker(const RunRequest& req, bool serving) {
  // CPU time adds up over threads: an OpenMP candidate on N cores uses N CPU-seconds per second.
  // The default is a backstop against a runaway process, scaled by the CPUs it may use.
  cpu_set_t cpus;
  int ncpu = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  double cpu = req.cpu_seconds > 0 ? req.cpu_seconds : std::max(10.0, req.timeout_s * 2 * std::max(1, ncpu));
  if (serving) {
    rusage use{};
    getrusage(RUSAGE_SELF, &use);
    double used = use.ru_utime.tv_sec + use.ru_stime.tv_sec + 1;
    rlimit rl{};
    getrlimit(RLIMIT_CPU, &rl);
    rlim_t soft = static_cast<rlim_t>(used + cpu);
    if (rl.rlim_max != RLIM_INFINITY && soft > rl.rlim_max) soft = rl.rlim_max;
    SetLimit(RLIMIT_CPU, soft, rl.rlim_max);
  } else {
    SetLimit(RLIMIT_CPU, static_cast<rlim_t>(cpu), static_cast<rlim_t>(cpu) + 5);
  }
  SetLimit(RLIMIT_FSIZE, static_cast<rlim_t>(req.file_bytes), static_cast<rlim_t>(req.file_bytes));
  if (req.backend == Backend::kHost && req.address_space_bytes > 0)
    SetLimit(RLIMIT_AS, static_cast<rlim_t>(req.address_space_bytes), static_cast<rlim_t>(req.address_space_bytes));
  SetLimit(RLIMIT_CORE, 0, 0);
  signal(SIGXFSZ, SIG_IGN);  // writes past the size limit fail with EFBIG instead of killing us
  signal(SIGPIPE, SIG_IGN);
}

// The candidate's stdout and stderr go to files in `dir` (one pair per request).
void RedirectOutput(const std::string& dir) {
  int out = open((dir + "/candidate.stdout").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  int err = open((dir + "/candidate.stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out >= 0) {
    dup2(out, 1);
    close(out);
  }
  if (err >= 0) {
    dup2(err, 2);
    close(err);
  }
}

// In the worker, before any candidate code: the sandbox's uid and syscall filter.
void ConfineOrExit(Sandbox& box) {
  Status s = box.ConfineChild();
  if (s.ok()) return;
  PipeReporter::WriteAll("sandbox " + s.message() + "\n");
  _exit(kExitNotConfined);
}

// The request's folder and what is in it (the request, the objects) readable by all, so that the
// sandbox's user may read them; writable by their owner only.
void MakeReadable(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::permissions(dir, fs::perms(0755), ec);
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it.depth() > 1) it.disable_recursion_pending();
    fs::permissions(it->path(), it->is_directory(ec) ? fs::perms(0755) : fs::perms(0644), ec);
  }
}

std::unique_ptr<Sandbox> EnterSandbox(const RunRequest& req, const std::string& work_dir, bool pid_namespace_ok) {
  const bool cuda = req.backend == Backend::kCuda;
  SandboxSpec spec = DefaultSandboxSpec();
  spec.pid_namespace = spec.pid_namespace && pid_namespace_ok;
  bool enabled = true;
  std::string warning;
  auto over = ApplySandboxOverride(spec, std::getenv("KPILOT_SANDBOX"), &enabled);
  if (over.ok())
    spec = *over;
  else
    warning = over.status().message() + "; the default sandbox is used";
  if (!req.sandbox || !enabled) return Sandbox::Disabled();
  std::error_code ec;
  const std::string dir = std::filesystem::absolute(work_dir, ec).lexically_normal().string();
  spec.hide = req.sandbox_hide;
  spec.keep_writable = {dir};
  // The worker's user must enter the folder and read the request's objects; it cannot write there.
  MakeReadable(dir);
  if (cuda) {
    spec.inherit_file = req.lock_dir + "/kpilot-gpu-" + std::to_string(req.device) + ".lock";
    spec.inherit_fd = kGpuLockFd;
  }
  auto box = Sandbox::Enter(spec);
  if (!warning.empty()) box->AddWarning(warning);
  // Caches that libraries keep under $HOME (the CUDA driver's JIT cache) go to the private /tmp:
  // the real home is hidden.
  if (box->report().mount_namespace) setenv("HOME", "/tmp", 1);
  return box;
}

std::string RunTag() {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(SecureRandom64()));
  return text;
}

void ForgedResultVerdict(int forged, RunResult* result) {
  if (forged <= 0 || result->status == "error") return;
  const std::string what = "the candidate wrote " + std::to_string(forged) +
                           " line(s) shaped like kpilot's result to the runner's result pipe (ignored): a forged "
                           "verdict";
  // Whatever else happened (a forger often exits right after): the attempt is the verdict.
  result->message = what + (result->message.empty() ? "" : "; the run: " + result->message);
  result->status = "suspicious";
}

// Kills and reaps every descendant the worker left behind. Orphans reparent to us (subreaper),
// so repeat until none is left. Returns how many were killed.
int KillLeftovers() {
  std::set<pid_t> killed;  // a zombie seen on a later pass is not counted twice
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    std::vector<pid_t> kids = ChildPids(getpid());
    for (pid_t k : kids)
      if (kill(k, SIGKILL) == 0) killed.insert(k);
    int st;
    while (waitpid(-1, &st, WNOHANG) > 0) {
    }
    if (kids.empty() && waitpid(-1, &st, WNOHANG) < 0 && errno == ECHILD) break;
    usleep(2000);
  }
  return static_cast<int>(killed.size());
}

// True once no one reads our stdout: the process that started us (kpilot, or ncu around us) is
// gone, killed with -9 perhaps. Its pipe then reports POLLERR; a terminal, file or /dev/null never
// does. Carrying on would finish an evaluation no one records while holding the GPU lock.
bool CallerGone() {
  pollfd p{STDOUT_FILENO, 0, 0};
  return poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLHUP));
}

// Reads the worker's lines from `fd` until it exits (one evaluation per process), or until it
// reported its result and its next line (serving: both tagged `tag`, as the worker echoes the
// request line's tag; others are counted in Watched::untagged and ignored). Enforces
// req.timeout_s from the first phase line on, and kills the worker when no one reads our stdout
// any more. `buffer` keeps what was read past the last whole line.
Watched WatchWorker(pid_t pid, int fd, const RunRequest& req, bool serving, std::string& buffer, Sandbox& box,
                    const std::string& tag) {
  Watched w;
  const auto start = std::chrono::steady_clock::now();
  auto clock_start = start;  // reset at the worker's first phase line (after the GPU lock)
  std::map<std::string, double> loop_start_ms;
  char chunk[65536];
  for (;;) {
    // Read what is there; the worker's children may hold the pipe open, so never wait for EOF.
    for (;;) {
      ssize_t n = read(fd, chunk, sizeof(chunk));
      if (n <= 0) break;
      if (buffer.size() < kMaxResultBytes) buffer.append(chunk, static_cast<size_t>(n));
    }
    size_t nl;
    while ((nl = buffer.find('\n')) != std::string::npos) {
      std::string line = buffer.substr(0, nl);
      buffer.erase(0, nl + 1);
      if (line.rfind("phase mark ", 0) == 0) {
        // Timing-loop markers, read on this process's clock: the third, independent clock.
        std::string mark = line.substr(11);
        double now_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        if (mark.rfind("loop-start ", 0) == 0)
          loop_start_ms[mark.substr(11)] = now_ms;
        else if (mark.rfind("loop-end ", 0) == 0 && loop_start_ms.count(mark.substr(9)))
          w.parent_loop_ms[mark.substr(9)] = now_ms - loop_start_ms[mark.substr(9)];
      } else if (line.rfind("worker signal ", 0) == 0) {
        w.worker_signal = std::atoi(line.c_str() + 14);
      } else if (line.rfind("worker exit ", 0) == 0) {
        w.worker_exit = std::atoi(line.c_str() + 12);
      } else if (line.rfind("sandbox ", 0) == 0 && w.sandbox_notes.size() < 8) {
        w.sandbox_notes.push_back(line.substr(8));
      } else if (line.rfind("phase ", 0) == 0) {
        if (w.last_phase.empty()) clock_start = std::chrono::steady_clock::now();  // after any GPU-lock wait
        w.last_phase = line.substr(6);
      } else if (line.rfind("result ", 0) == 0 || (serving && line.rfind("next ", 0) == 0)) {
        const bool result = line[0] == 'r';
        const std::string rest = line.substr(result ? 7 : 5);
        if (rest.rfind(tag + " ", 0) != 0 || (result ? !w.result_line.empty() : !w.next_line.empty())) {
          ++w.untagged;
        } else {
          (result ? w.result_line : w.next_line) = rest.substr(tag.size() + 1);
        }
      }
    }
    if (w.exited) break;
    if (serving && !w.result_line.empty() && !w.next_line.empty()) break;
    pid_t got = waitpid(pid, &w.status, WNOHANG);
    if (got == pid) {
      w.exited = true;
      continue;  // one more read drains what the worker wrote just before exiting
    }
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - clock_start).count();
    w.caller_gone = CallerGone();
    w.timed_out = !w.caller_gone && elapsed > req.timeout_s;
    if (w.caller_gone || w.timed_out) {
      kill(pid, SIGKILL);
      waitpid(pid, &w.status, 0);
      w.exited = true;
      continue;
    }
    pollfd p[2] = {{fd, POLLIN, 0}, {box.listener_fd(), POLLIN, 0}};
    poll(p, box.listener_fd() >= 0 ? 2 : 1, 20);
    box.AnswerSyscalls();
  }
  box.AnswerSyscalls();
  return w;
}

// The request's result: the worker's own, checked against this process's clock, or one written
// here when the worker crashed, hung or exited before reporting.
RunResult ResultOf(const Watched& w, const RunRequest& req) {
  RunResult result;
  bool have_result = false;
  if (!w.result_line.empty() && !w.timed_out) {
    try {
      auto parsed = RunResultFromJson(nlohmann::json::parse(w.result_line));
      if (parsed.ok()) {
        result = std::move(parsed).value();
        have_result = true;
      }
    } catch (const std::exception&) {
    }
  }
  std::string during = w.last_phase.empty() ? "" : " during " + w.last_phase;
  // With an init in between, the worker's own end is what it reported.
  int status = w.status;
  if (w.worker_signal > 0)
    status = w.worker_signal;  // a wait status for "killed by signal N"
  else if (w.worker_exit >= 0)
    status = w.worker_exit << 8;
  if (!have_result && !w.timed_out && WIFEXITED(status) && WEXITSTATUS(status) == kExitNotConfined) {
    // kpilot's fault, not the candidate's: nothing of it ran.
    result.status = "error";
    result.message = "the worker could not enter its sandbox (" +
                     (w.sandbox_notes.empty() ? std::string("no reason given") : w.sandbox_notes.back()) +
                     "); set KPILOT_SANDBOX to the parts this machine allows (docs/threat-model.md)";
  } else if (!have_result) {
    result.phase = w.last_phase.substr(0, w.last_phase.find(' '));
    if (w.timed_out) {
      result.status = "timeout";
      result.message = "the run exceeded its wall-clock limit of " + std::to_string(static_cast<long>(req.timeout_s)) +
                       " s" + during + "; it was killed with every process it started";
    } else if (WIFSIGNALED(status) && (WTERMSIG(status) == SIGXCPU)) {
      result.status = "timeout";
      result.message = "the run exceeded its CPU-time limit" + during;
      result.exit_signal = WTERMSIG(status);
    } else if (WIFSIGNALED(status)) {
      result.status = "runtime_error";
      result.exit_signal = WTERMSIG(status);
      result.message = "the run was killed by signal " + SignalName(WTERMSIG(status)) + during;
    } else {
      result.status = "runtime_error";
      result.message = "the run exited with code " + std::to_string(WEXITSTATUS(status)) + during +
                       " before reporting a result (did the candidate call exit()?)";
    }
  }
  if (have_result) CheckAgainstParentClock(w.parent_loop_ms, &result);
  ForgedResultVerdict(w.untagged, &result);
  return result;
}

// The sandbox's part of a result: what was in force, and what the candidate tried that it denied.
void ApplySandboxReport(const Sandbox& box, const Watched& w, RunResult* r) {
  r->sandbox = box.report();
  for (const auto& note : w.sandbox_notes) r->sandbox.warnings.push_back(note);
  ApplySandboxDenials(r);
}

// Adds what only the supervisor knows and prints the result as one line on stdout.
void PrintResult(RunResult result, const std::string& dir, std::chrono::steady_clock::time_point start) {
  result.candidate_stdout_tail = FileTail((dir + "/candidate.stdout").c_str(), 4096);
  result.candidate_stderr_tail = FileTail((dir + "/candidate.stderr").c_str(), 4096);
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // A candidate may print anything: bytes that are not UTF-8 become U+FFFD, not a crash.
  std::cout << JsonText(ToJson(result)) << std::endl;
}

namespace {

// One supervised run: the sandbox, the worker, its watch and its result. Returns nothing when the
// caller is gone (no one to tell).
std::optional<RunResult> SuperviseOnce(const RunRequest& req, const WorkerFn& worker, bool pid_namespace_ok) {
  std::unique_ptr<Sandbox> box = EnterSandbox(req, ".", pid_namespace_ok);
  const std::string tag = RunTag();
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    RunResult r;
    r.status = "error";
    r.message = std::string("kpilot-runner: pipe: ") + std::strerror(errno);
    return r;
  }
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) {
    RunResult r;
    r.status = "error";
    r.message = std::string("kpilot-runner: fork: ") + std::strerror(errno);
    return r;
  }
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], kResultFd);
    close(fds[1]);
    if (box->report().pid_namespace) InitMain(req, worker, *box, tag);
    WorkerMain(req, worker, *box, tag);
  }
  close(fds[1]);
  box->CloseInherited();
  box->AdoptChild(pid);
  fcntl(fds[0], F_SETFL, O_NONBLOCK);
  std::string buffer;
  Watched w = WatchWorker(pid, fds[0], req, /*serving=*/false, buffer, *box, tag);
  close(fds[0]);
  int leftovers = KillLeftovers();
  if (w.caller_gone) return std::nullopt;
  RunResult result = ResultOf(w, req);
  result.leftover_processes_killed = leftovers;
  ApplySandboxReport(*box, w, &result);
  return result;
}

}  // namespace

int RunSupervised(const RunRequest& req, const WorkerFn& worker) {
  auto start = std::chrono::steady_clock::now();
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  std::optional<RunResult> result = SuperviseOnce(req, worker, /*pid_namespace_ok=*/true);
  // A driver that cannot start CUDA inside a new PID namespace answers cudaErrorOperatingSystem
  // (seen without a fresh /proc in the namespace): the run is repeated without one, and says so.
  if (result && req.backend == Backend::kCuda && result->status == "error" && result->sandbox.pid_namespace &&
      result->message.find("cudaErrorOperatingSystem") != std::string::npos) {
    result = SuperviseOnce(req, worker, /*pid_namespace_ok=*/false);
    if (result)
      result->sandbox.warnings.push_back(
          "CUDA could not start inside a PID namespace on this machine; this run had none (docs/threat-model.md)");
  }
  if (!result) return kExitCallerGone;
  PrintResult(std::move(*result), ".", start);
  return 0;
}

}  // namespace kpilot
