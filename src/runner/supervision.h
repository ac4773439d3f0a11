// The pieces of kpilot-runner's supervisor that one-shot runs (supervisor.cc) and served runs
// (serve.cc) share: the worker's side of the result pipe, its limits and sandbox, and the
// supervising process's watch over it. Internal to the runner; supervisor.h is the contract.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runner/protocol.h"
#include "runner/worker.h"
#include "sandbox/sandbox.h"

namespace kpilot {

inline constexpr int kResultFd = 517;  // where the worker writes; far from what candidates open
// The exit code of a worker that could not confine itself: it ran no candidate code.
inline constexpr int kExitNotConfined = 97;

// The worker's phase lines ("phase NAME DETAIL") and every other line, on kResultFd.
class PipeReporter : public PhaseReporter {
 public:
  void Phase(const std::string& phase, const std::string& detail) override {
    WriteAll("phase " + phase + (detail.empty() ? "" : " " + detail) + "\n");
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

// In the worker: the request's CPU, file-size, address-space and core limits (a serving worker
// moves its CPU limit on by each request's share).
void LimitWorker(const RunRequest& req, bool serving);
// In the worker: stdout and stderr to dir/candidate.stdout and dir/candidate.stderr.
void RedirectOutput(const std::string& dir);
// In the worker, before any candidate code: the sandbox's user and syscall filter; on failure
// says why on the result pipe and exits with kExitNotConfined.
void ConfineOrExit(Sandbox& box);

// `dir` and what it holds readable by all (the sandbox's user reads the request and objects).
void MakeReadable(const std::string& dir);
// In the supervisor, before it forks the worker: the request's sandbox, keeping `work_dir`
// visible (and writable by the supervisor). KPILOT_SANDBOX narrows it; `pid_namespace_ok` false
// leaves the PID namespace out (a served worker outlives an init).
std::unique_ptr<Sandbox> EnterSandbox(const RunRequest& req, const std::string& work_dir, bool pid_namespace_ok);

// Kills and reaps every process left with the supervisor (a subreaper); how many were killed.
int KillLeftovers();
// True once no one reads the supervisor's stdout (its caller was killed).
bool CallerGone();

// A fresh tag for one request (64 bits from the system's CSPRNG, as hex): the worker echoes it on
// its result line. It lives only in the supervisor's and the worker's memory.
std::string RunTag();
// A candidate that wrote lines shaped like kpilot's result to the result pipe (`forged` > 0:
// result lines without the request's tag, which were ignored) tried to forge its verdict: the
// result becomes `suspicious`, whatever it was, unless kpilot itself failed ("error").
void ForgedResultVerdict(int forged, RunResult* result);

// What the supervisor saw of one request.
struct Watched {
  std::string last_phase, result_line;
  std::string next_line;  // a serving worker's "next ready" or "next retire WHY", without "next "
  std::map<std::string, double> parent_loop_ms;
  int worker_signal = 0, worker_exit = -1;  // reported by the namespace's init, when there is one
  std::vector<std::string> sandbox_notes;   // what the worker could not set up of its sandbox
  bool exited = false, timed_out = false, caller_gone = false;
  int status = 0;  // the worker's wait status, once it exited
  // Serving: "result"/"next" lines that did not carry this request's tag. The candidate runs in
  // the worker and inherits its result pipe; what it writes there must not pass for a result.
  int untagged = 0;
};

// Reads the worker's lines from `fd` until it exits (one evaluation per process), or until it
// reported its result and its next line (serving: both tagged `tag`). Enforces req.timeout_s
// from the first phase line on, answers the sandbox's denied system calls, and kills the worker
// when no one reads our stdout any more. `buffer` keeps what was read past the last whole line.
Watched WatchWorker(pid_t pid, int fd, const RunRequest& req, bool serving, std::string& buffer, Sandbox& box,
                    const std::string& tag);
// The request's result: the worker's own, checked against this process's clock, or one written
// here when the worker crashed, hung, exited before reporting or could not confine itself.
RunResult ResultOf(const Watched& w, const RunRequest& req);
// The sandbox's report and its denials (ApplySandboxDenials) into `r`.
void ApplySandboxReport(const Sandbox& box, const Watched& w, RunResult* r);
// Adds the candidate's output tails and the wall time, and prints `result` as one line.
void PrintResult(RunResult result, const std::string& dir, std::chrono::steady_clock::time_point start);

}  // namespace kpilot
