// Isolation for every process that runs candidate code: the runner's workers (host and cuda),
// the torch worker and `command:` agents. docs/threat-model.md says what each backend gets.
//
// A sandbox is set up in two steps, split around the fork that starts the confined process:
//
//   Sandbox box = Sandbox::Enter(spec);   // in the supervising process, before fork: namespaces
//                                         // (mount, network, PID) and the filesystem view
//   pid_t pid = fork();
//   if (pid == 0) { box.ConfineChild(); ...run candidate code or exec... }   // uid, seccomp
//   box.AdoptChild();                     // in the parent: takes the syscall filter's listener
//   while (running) { poll(box.listener_fd()); box.AnswerSyscalls(); }
//
// The supervising process stays root inside its namespaces (it never runs candidate code); the
// child drops to the sandbox user (`kpilot-sandbox`, made by scripts/setup.sh; `nobody` with a
// warning where it is missing) and installs a seccomp filter. System calls the filter forbids are
// not run: the kernel asks the supervisor (seccomp user notification), which records each one
// (SandboxReport::denied) and answers EPERM. A verdict then names what the candidate tried.
//
// What cannot be had on this machine (no root and no user namespaces, an old kernel) is left out
// and said in SandboxReport::warnings: the sandbox never makes an evaluation fail on its own.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace kpilot {

// The folders each sandbox gets a private, empty tmpfs of.
inline constexpr const char* kScratchFolders[] = {"/tmp", "/var/tmp", "/dev/shm"};
// True when `path` is `dir` or lies below it (both absolute and normal).
bool PathIsUnder(const std::string& path, const std::string& dir);

// What a confined process may see and do.
struct SandboxSpec {
  bool pid_namespace = true;    // a PID namespace of its own with a fresh /proc (not for CUDA:
                                // the driver fails to start inside one)
  bool network = false;         // true: keeps the host's network and sockets of the internet
                                // families (agents reaching their model provider); false: a new
                                // network namespace (loopback only, down) and AF_UNIX sockets only
  bool drop_user = true;        // run as the sandbox user (needs root)
  bool mount_namespace = true;  // the filesystem view below
  bool syscall_filter = true;
  // The view: every mount read-only; fresh private tmpfs at /tmp, /var/tmp and /dev/shm; each
  // `hide` path (folder or file) replaced by an empty one; each `keep_*` folder bound back at
  // its own path (inside a hidden folder or the fresh /tmp too), read-only or writable.
  std::vector<std::string> hide;
  std::vector<std::string> keep_read_only;
  std::vector<std::string> keep_writable;
  // A file opened (created 0666 if missing) before the view hides it, and inherited by the child
  // at descriptor `inherit_fd` (the per-GPU timing lock, whose folder is usually /tmp).
  std::string inherit_file;
  int inherit_fd = -1;
};

nlohmann::json ToJson(const SandboxSpec& s);
// InvalidInput naming the field when `j` is not a spec.
Result<SandboxSpec> SandboxSpecFromJson(const nlohmann::json& j);

// The defaults for every worker: every part, on either backend (CUDA starts inside a PID
// namespace that has a /proc of its own; kpilot-runner repeats a cuda run without one where the
// driver still refuses, cudaErrorOperatingSystem).
SandboxSpec DefaultSandboxSpec();

// KPILOT_SANDBOX overrides a spec: "none" turns everything off; otherwise a comma list of the
// parts to keep on, from pid, net, mount, user, seccomp ("net" is the network namespace; the
// word "all" keeps the spec as it is). Unknown words are an error naming the variable.
Result<SandboxSpec> ApplySandboxOverride(SandboxSpec spec, const char* env_value, bool* enabled);

// What was in force for one confined process, and what it tried that was denied.
struct SandboxReport {
  bool enabled = false;  // false: --no-sandbox or KPILOT_SANDBOX=none
  bool pid_namespace = false;
  bool net_namespace = false;
  bool mount_namespace = false;
  bool syscall_filter = false;
  bool user_namespace = false;  // the unprivileged path: namespaces through a user namespace
  std::string user;             // the account the child ran as ("kpilot-sandbox", "nobody", or
                                // the caller's own name when the uid could not change)
  int uid = -1;
  std::vector<std::string> warnings;
  // System calls the filter denied, in order, e.g. "socket(AF_INET)", "ptrace(PTRACE_ATTACH)",
  // "kill(pid 812, signal 9): not a process of the sandbox". At most kMaxDenied are kept;
  // denied_count counts them all.
  std::vector<std::string> denied;
  int denied_count = 0;
  static constexpr size_t kMaxDenied = 32;
};
nlohmann::json ToJson(const SandboxReport& r);
SandboxReport SandboxReportFromJson(const nlohmann::json& j);  // missing fields read as defaults
// "pid, net, mount namespaces; user kpilot-sandbox; syscall filter" or "off".
std::string SandboxSummary(const SandboxReport& r);

// The account confined processes run as: kpilot-sandbox, else nobody (with a warning).
struct SandboxUser {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string warning;  // set when the fallback was taken
};
Result<SandboxUser> FindSandboxUser();

class Sandbox {
 public:
  // In the supervising process, before the fork. Unshares what `spec` asks for and builds the
  // filesystem view; whatever fails is a warning in report(). `spec.pid_namespace` makes the
  // *next* child the new namespace's init: call BecomeInit() in it.
  static std::unique_ptr<Sandbox> Enter(const SandboxSpec& spec);
  // A sandbox that confines nothing (report().enabled == false).
  static std::unique_ptr<Sandbox> Disabled();
  ~Sandbox();
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;

  // In the first child (the namespace's init), when report().pid_namespace: mounts a fresh /proc
  // for the namespace, in a mount namespace of its own so the supervisor keeps its view of /proc.
  // False when that failed: the child then still shows the old /proc, which the caller reports.
  bool MountNamespaceProc();
  // In the child that runs candidate code, after fork and before any of it runs: sets the
  // inherited file at its descriptor, drops to the sandbox user, sets no_new_privs and installs
  // the syscall filter, then hands the filter's listener to the parent. Non-ok only when a step
  // that was in force in Enter() fails here; the child must then exit, not run the candidate.
  Status ConfineChild();
  // In the parent after the fork: receives the listener from the child (waits up to 10 s for it;
  // a child that died first simply sent none).
  void AdoptChild(pid_t child);
  // The descriptor to poll for denied system calls (-1 when there is no filter).
  int listener_fd() const { return listener_; }
  // Answers every pending notification without blocking: records what was denied and fails it
  // (EPERM; EACCES for a write outside the writable folders), or lets it run (a signal to a
  // process of the sandbox itself, a write inside its writable folders).
  void AnswerSyscalls();
  // Empties the private /tmp, /var/tmp and /dev/shm except the kept folders (between two
  // requests served by one worker, so nothing one candidate leaves there reaches the next).
  void ClearScratch();
  // The descriptors the supervisor keeps that the child must not: call in the parent after fork.
  void CloseInherited();

  const SandboxReport& report() const { return report_; }
  void AddWarning(std::string warning) { report_.warnings.push_back(std::move(warning)); }
  // Clears `denied` (a served worker's next request starts with none).
  void ResetDenied();

 private:
  Sandbox() = default;
  void SetUpView(const SandboxSpec& spec);
  Status InstallFilterAndSend();  // in the child: the filter, its listener sent to the parent
  // The supervisor's answer to one notified system call: let it run, or fail it with `error`,
  // recording `what` the candidate tried.
  struct Answer {
    bool allow = false;
    int error = 0;
    std::string what;
  };
  Answer Decide(pid_t caller, int nr, const uint64_t args[6]) const;
  // The path a caller passed at `address`, made absolute against `dirfd` (its cwd for AT_FDCWD);
  // "" when it cannot be read.
  std::string CallerPath(pid_t caller, int dirfd, uint64_t address) const;
  // True for paths the sandbox lets a candidate write: its private scratch folders, the kept
  // writable folders, devices and /proc.
  bool Writable(const std::string& path) const;

  SandboxSpec spec_;
  SandboxReport report_;
  SandboxUser user_;
  int channel_[2] = {-1, -1};  // the child sends the listener over this socket pair
  int listener_ = -1;
  int inherited_ = -1;
  pid_t child_ = -1;
};

// In a PID namespace's init: waits for `child`, reaping every other process that ends meanwhile
// (orphans of the namespace reparent to its init). Returns the child's wait status; -1 when
// waiting failed.
int WaitReapingOrphans(pid_t child);

// Runs `argv` (argv[0] looked up on PATH) confined by `spec`, with this process's standard
// streams, and waits for it. Afterwards prints one line on stderr, kSandboxReportPrefix followed
// by the SandboxReport as JSON, and returns the program's exit code (128 + N when signal N ended
// it). `kpilot-runner --sandbox SPEC.json -- PROGRAM ARGS...` is this function.
inline constexpr const char* kSandboxReportPrefix = "kpilot-sandbox-report ";
int RunConfined(const SandboxSpec& spec, const std::vector<std::string>& argv);
// The report RunConfined printed in `stderr_text` (its last such line), if any.
std::optional<SandboxReport> FindSandboxReport(const std::string& stderr_text);
// `stderr_text` without RunConfined's report lines: what the confined program itself wrote.
std::string WithoutSandboxReports(const std::string& stderr_text);

}  // namespace kpilot
