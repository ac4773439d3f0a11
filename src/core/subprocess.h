// Running other programs: argv only (never a shell), each in its own process group so a
// timeout kills everything it started, with output captured up to a cap.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace kpilot {

struct ProcessSpec {
  std::vector<std::string> argv;                // argv[0] is looked up on PATH when it has no '/'
  std::optional<std::filesystem::path> cwd;     // default: the caller's working directory
  std::optional<std::vector<std::string>> env;  // "NAME=VALUE" entries; default: inherit
  std::string stdin_data;                       // written to the child's stdin, then closed
  double timeout_s = 0;                         // wall-clock limit in seconds; 0 = none
  size_t max_output_bytes = 16u << 20;          // per stream; beyond it the head is dropped
  // When set and it turns true, the child's process group is killed (checked every 50 ms): a
  // caller that no longer needs the result ends it without waiting. May be null.
  std::shared_ptr<const std::atomic<bool>> cancel;
  // The child's nice value, 1-19 (lower priority). 0, or a value below the one it inherits from
  // the calling thread, keeps the inherited one: this never raises a child's priority.
  int nice = 0;
};

struct ProcessResult {
  int exit_code = -1;      // valid when term_signal == 0 and !timed_out
  int term_signal = 0;     // the signal that ended the child, 0 if it exited
  bool timed_out = false;  // killed (with its whole process group) at the timeout
  bool cancelled = false;  // killed (likewise) because ProcessSpec::cancel turned true
  bool output_truncated = false;
  std::string out;    // stdout (the last max_output_bytes when truncated)
  std::string err;    // stderr, likewise
  double wall_s = 0;  // seconds from start to reaped

  bool Succeeded() const { return !timed_out && !cancelled && term_signal == 0 && exit_code == 0; }
  // "exit code 2", "killed by signal 11 (Segmentation fault)", "timed out after 120 s",
  // "cancelled".
  std::string Describe(double timeout_s = 0) const;
};

// The seam for everything that starts a process; tests substitute a double.
class ProcessRunner {
 public:
  virtual ~ProcessRunner() = default;
  // Runs to completion. A program that cannot be started is a non-ok Status (NotFound when
  // argv[0] is not on PATH); any exit, signal or timeout of a started program is a result.
  virtual Result<ProcessResult> Run(const ProcessSpec& spec) = 0;
};

// A child kept running and spoken to in lines: a request on its stdin, an answer on its stdout
// (kpilot-runner --serve). It runs in a process group of its own; the destructor kills that
// group and reaps the child. What it prints on stderr is kept (the last 64 KiB). One owner at a
// time: not thread-safe.
class LiveProcess {
 public:
  // Starts spec.argv with spec's cwd, env and nice (stdin_data, timeout_s, max_output_bytes and
  // cancel are not used). Errors as ProcessRunner::Run's.
  static Result<std::unique_ptr<LiveProcess>> Start(const ProcessSpec& spec);
  ~LiveProcess();
  LiveProcess(const LiveProcess&) = delete;
  LiveProcess& operator=(const LiveProcess&) = delete;

  // Writes `line` and a newline. Unavailable when the child no longer reads its stdin.
  Status WriteLine(const std::string& line);
  // The next line the child prints on stdout, without its newline. Unavailable once it closed
  // its stdout (it ended: Stop says how), Timeout after `timeout_s` seconds (0: no limit), and
  // Internal("cancelled") once `cancel` (may be null) turns true.
  Result<std::string> ReadLine(double timeout_s, const std::atomic<bool>* cancel = nullptr);
  // Kills the process group if the child still runs, reaps it, and says how it ended (`err`
  // holds its stderr). Later calls return the same.
  ProcessResult Stop();
  // False once the child has ended (reaped by Stop or seen gone).
  bool running();
  int pid() const { return pid_; }

 private:
  LiveProcess() = default;
  void DrainStderr();

  int pid_ = -1;
  int in_ = -1, out_ = -1, err_ = -1;
  std::string pending_;  // stdout read past the last line returned
  bool reaped_ = false;
  ProcessResult ended_;
  std::chrono::steady_clock::time_point start_;
};

// The real runner (fork + execvpe). Shared, stateless, thread-safe.
ProcessRunner& SystemProcessRunner();

// True when a variable of this name must never reach a child that runs untrusted code: the
// name contains KEY, TOKEN, SECRET or PASSWORD (case-insensitive).
bool IsSecretVariableName(const std::string& name);

// This process's environment without the secret variables above.
std::vector<std::string> ScrubbedEnvironment();

// The parent of process `pid` as /proc/PID/stat says; 0 when it is gone or unreadable.
pid_t ParentPid(pid_t pid);
// The direct children of `parent`, from /proc (with or without CONFIG_PROC_CHILDREN).
std::vector<pid_t> ChildPids(pid_t parent);

// Looks `program` up on PATH; empty when not found. A name with '/' is checked as is.
std::string FindOnPath(const std::string& program);

}  // namespace kpilot
