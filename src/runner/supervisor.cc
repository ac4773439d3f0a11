#include "runner/supervisor.h"

#include <dirent.h>
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
#include <iostream>
#include <map>
#include <set>
#include <string>

#include "core/fs.h"

namespace kpilot {
namespace {

constexpr int kResultFd = 517;  // where the worker writes; far from what candidates open
constexpr size_t kMaxResultBytes = 64u << 20;

class PipeReporter : public PhaseReporter {
 public:
  void Phase(const std::string& phase, const std::string& detail) override {
    std::string line = "phase " + phase + (detail.empty() ? "" : " " + detail) + "\n";
    WriteAll(line);
  }
  static void WriteAll(const std::string& s) {
    size_t off = 0;
    while (off < s.size()) {
      ssize_t n = write(kResultFd, s.data() + off, s.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      off += static_cast<size_t>(n);
    }
  }
};

void SetLimit(int resource, rlim_t soft, rlim_t hard) {
  rlimit rl{soft, hard};
  setrlimit(resource, &rl);
}

[[noreturn]] void WorkerMain(const RunRequest& req, const WorkerFn& worker) {
  // CPU time adds up over threads: an OpenMP candidate on N cores uses N CPU-seconds per second.
  // The default is a backstop against a runaway process, scaled by the CPUs it may use.
  cpu_set_t cpus;
  int ncpu = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  double cpu = req.cpu_seconds > 0 ? req.cpu_seconds : std::max(10.0, req.timeout_s * 2 * std::max(1, ncpu));
  SetLimit(RLIMIT_CPU, static_cast<rlim_t>(cpu), static_cast<rlim_t>(cpu) + 5);
  SetLimit(RLIMIT_FSIZE, static_cast<rlim_t>(req.file_bytes), static_cast<rlim_t>(req.file_bytes));
  if (req.backend == Backend::kHost && req.address_space_bytes > 0)
    SetLimit(RLIMIT_AS, static_cast<rlim_t>(req.address_space_bytes), static_cast<rlim_t>(req.address_space_bytes));
  SetLimit(RLIMIT_CORE, 0, 0);
  signal(SIGXFSZ, SIG_IGN);  // writes past the size limit fail with EFBIG instead of killing us
  signal(SIGPIPE, SIG_IGN);
  int devnull = open("/dev/null", O_RDONLY);
  if (devnull >= 0) dup2(devnull, 0);
  int out = open("candidate.stdout", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  int err = open("candidate.stderr", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (out >= 0) dup2(out, 1);
  if (err >= 0) dup2(err, 2);
  PipeReporter reporter;
  RunResult result = worker(req, reporter);
  PipeReporter::WriteAll("result " + JsonText(ToJson(result)) + "\n");
  // _exit: candidates' static destructors and atexit handlers must not run after the report.
  _exit(0);
}

struct SandboxChoice {
  bool pid = false;
  bool net = false;
  bool init = false;  // a small init as PID 1 of the namespace, the worker its child
};

// KPILOT_SANDBOX overrides the request: "none", or a comma list of pid, net, init.
SandboxChoice ChooseSandbox(const RunRequest& req) {
  SandboxChoice c;
  const char* env = std::getenv("KPILOT_SANDBOX");
  // CUDA fails to initialize inside a new PID namespace (cudaErrorOperatingSystem, seen on the
  // H200 machine with driver 580), so the cuda backend relies on the subreaper sweep instead.
  std::string fallback = req.backend == Backend::kCuda ? "net" : "pid,net,init";
  std::string spec = env && *env ? env : (req.sandbox ? fallback : "none");
  c.pid = spec.find("pid") != std::string::npos;
  c.net = spec.find("net") != std::string::npos;
  c.init = spec.find("init") != std::string::npos;
  return c;
}

// PID 1 of the new namespace: forks the worker, reaps every orphan, and when the worker ends
// reports how (the supervisor sees only this process's exit) and exits, which makes the kernel
// kill whatever is left in the namespace.
[[noreturn]] void InitMain(const RunRequest& req, const WorkerFn& worker) {
  pid_t w = fork();
  if (w < 0) _exit(127);
  if (w == 0) WorkerMain(req, worker);
  for (;;) {
    int st = 0;
    pid_t got = waitpid(-1, &st, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) _exit(127);
    if (got != w) continue;
    std::string line = WIFSIGNALED(st) ? "worker signal " + std::to_string(WTERMSIG(st)) + "\n"
                                       : "worker exit " + std::to_string(WEXITSTATUS(st)) + "\n";
    PipeReporter::WriteAll(line);
    _exit(0);
  }
}

// Pids of this process's direct children, from /proc (works with or without CONFIG_PROC_CHILDREN).
std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    char* end;
    long pid = strtol(e->d_name, &end, 10);
    if (*end || pid <= 0) continue;
    auto stat = ReadFile("/proc/" + std::string(e->d_name) + "/stat");
    if (!stat.ok()) continue;
    size_t close_paren = stat->rfind(')');
    if (close_paren == std::string::npos) continue;
    char state;
    long ppid;
    if (sscanf(stat->c_str() + close_paren + 1, " %c %ld", &state, &ppid) == 2 && ppid == parent)
      out.push_back(static_cast<pid_t>(pid));
  }
  closedir(d);
  return out;
}

// Kills and reaps every descendant the worker left behind. Orphans reparent to us (subreaper),
// so repeat until none is left. Returns how many were killed.
int KillLeftovers() {
  std::set<pid_t> killed;  // a zombie seen on a later pass is not counted twice
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    std::vector<pid_t> kids = ChildrenOf(getpid());
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

// True once no one reads our stdout: the process that started us (kpilot, or ncu around us) is
// gone, killed with -9 perhaps. Its pipe then reports POLLERR; a terminal, file or /dev/null never
// does. Carrying on would finish an evaluation no one records while holding the GPU lock.
bool CallerGone() {
  pollfd p{STDOUT_FILENO, 0, 0};
  return poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLHUP));
}

}  // namespace

int RunSupervised(const RunRequest& req, const WorkerFn& worker) {
  auto start = std::chrono::steady_clock::now();
  RunResult synthesized;
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  SandboxChoice sandbox = ChooseSandbox(req);
  if (sandbox.pid) synthesized.pid_namespace = unshare(CLONE_NEWPID) == 0;
  if (sandbox.net) synthesized.net_namespace = unshare(CLONE_NEWNET) == 0;
  sandbox.init = sandbox.init && synthesized.pid_namespace;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    std::perror("kpilot-runner: pipe");
    return 1;
  }
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) {
    std::perror("kpilot-runner: fork");
    return 1;
  }
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], kResultFd);
    close(fds[1]);
    if (sandbox.init) InitMain(req, worker);
    WorkerMain(req, worker);
  }
  close(fds[1]);
  fcntl(fds[0], F_SETFL, O_NONBLOCK);

  std::string buffer, last_phase, result_line;
  std::map<std::string, double> loop_start_ms, parent_loop_ms;
  auto clock_start = start;  // reset at the worker's first phase line (after the GPU lock)
  int worker_signal = 0, worker_exit = -1;  // reported by the namespace's init, when there is one
  bool exited = false, timed_out = false, caller_gone = false;
  int status = 0;
  char chunk[65536];
  for (;;) {
    // Read what is there; the worker's children may hold the pipe open, so never wait for EOF.
    for (;;) {
      ssize_t n = read(fds[0], chunk, sizeof(chunk));
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
        if (mark.rfind("loop-start ", 0) == 0) loop_start_ms[mark.substr(11)] = now_ms;
        else if (mark.rfind("loop-end ", 0) == 0 && loop_start_ms.count(mark.substr(9)))
          parent_loop_ms[mark.substr(9)] = now_ms - loop_start_ms[mark.substr(9)];
      } else if (line.rfind("worker signal ", 0) == 0) {
        worker_signal = std::atoi(line.c_str() + 14);
      } else if (line.rfind("worker exit ", 0) == 0) {
        worker_exit = std::atoi(line.c_str() + 12);
      } else if (line.rfind("phase ", 0) == 0) {
        if (last_phase.empty()) clock_start = std::chrono::steady_clock::now();  // after any GPU-lock wait
        last_phase = line.substr(6);
      }
      else if (line.rfind("result ", 0) == 0) result_line = line.substr(7);
    }
    if (exited) break;
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) {
      exited = true;
      continue;  // one more read drains what the worker wrote just before exiting
    }
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - clock_start).count();
    caller_gone = CallerGone();
    timed_out = !caller_gone && elapsed > req.timeout_s;
    if (caller_gone || timed_out) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      exited = true;
      continue;
    }
    pollfd p{fds[0], POLLIN, 0};
    poll(&p, 1, 20);
  }
  close(fds[0]);
  int leftovers = KillLeftovers();
  if (caller_gone) return kExitCallerGone;  // no one to tell

  RunResult result;
  bool have_result = false;
  if (!result_line.empty() && !timed_out) {
    try {
      auto parsed = RunResultFromJson(nlohmann::json::parse(result_line));
      if (parsed.ok()) {
        result = std::move(parsed).value();
        have_result = true;
      }
    } catch (const std::exception&) {
    }
  }
  std::string during = last_phase.empty() ? "" : " during " + last_phase;
  // With an init in between, the worker's own end is what it reported.
  if (worker_signal > 0) status = worker_signal;  // a wait status for "killed by signal N"
  else if (worker_exit >= 0) status = worker_exit << 8;
  if (!have_result) {
    result = synthesized;
    result.phase = last_phase.substr(0, last_phase.find(' '));
    if (timed_out) {
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
  if (have_result) CheckAgainstParentClock(parent_loop_ms, &result);
  result.pid_namespace = synthesized.pid_namespace;
  result.net_namespace = synthesized.net_namespace;
  result.leftover_processes_killed = leftovers;
  result.candidate_stdout_tail = FileTail("candidate.stdout", 4096);
  result.candidate_stderr_tail = FileTail("candidate.stderr", 4096);
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // A candidate may print anything: bytes that are not UTF-8 become U+FFFD, not a crash.
  std::cout << JsonText(ToJson(result)) << std::endl;
  return 0;
}

}  // namespace kpilot
