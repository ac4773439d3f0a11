// RunConfined: a program run whole inside a sandbox (the torch worker, agents).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <sstream>

#include "sandbox/sandbox.h"

namespace kpilot {
namespace {

[[noreturn]] void ExecConfined(Sandbox& box, const std::vector<std::string>& argv) {
  Status s = box.ConfineChild();
  if (!s.ok()) {
    std::cerr << "kpilot-runner: " << s.message() << "\n";
    _exit(126);
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  std::cerr << "kpilot-runner: cannot run " << argv[0] << ": " << std::strerror(errno) << "\n";
  _exit(127);
}

// PID 1 of the namespace: mounts its /proc, runs the program, reaps orphans, and passes the
// program's wait status to the launcher over `status_fd` (an init cannot end by its own signal).
[[noreturn]] void InitMain(Sandbox& box, const std::vector<std::string>& argv, int status_fd) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  box.MountNamespaceProc();
  pid_t program = fork();
  if (program < 0) _exit(127);
  if (program == 0) {
    close(status_fd);
    ExecConfined(box, argv);
  }
  box.CloseInherited();
  const int st = WaitReapingOrphans(program);
  if (st < 0) _exit(127);
  (void)!write(status_fd, &st, sizeof(st));
  _exit(0);
}

}  // namespace

int WaitReapingOrphans(pid_t child) {
  for (;;) {
    int st = 0;
    pid_t got = waitpid(-1, &st, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return -1;
    if (got == child) return st;
  }
}

nlohmann::json ToJson(const SandboxSpec& s) {
  return {{"pid_namespace", s.pid_namespace},   {"network", s.network},
          {"drop_user", s.drop_user},           {"mount_namespace", s.mount_namespace},
          {"syscall_filter", s.syscall_filter}, {"hide", s.hide},
          {"keep_read_only", s.keep_read_only}, {"keep_writable", s.keep_writable},
          {"inherit_file", s.inherit_file},     {"inherit_fd", s.inherit_fd}};
}

Result<SandboxSpec> SandboxSpecFromJson(const nlohmann::json& j) {
  SandboxSpec s;
  if (!j.is_object()) return Status::InvalidInput("sandbox spec: expected a JSON object");
  try {
    s.pid_namespace = j.value("pid_namespace", s.pid_namespace);
    s.network = j.value("network", s.network);
    s.drop_user = j.value("drop_user", s.drop_user);
    s.mount_namespace = j.value("mount_namespace", s.mount_namespace);
    s.syscall_filter = j.value("syscall_filter", s.syscall_filter);
    s.hide = j.value("hide", s.hide);
    s.keep_read_only = j.value("keep_read_only", s.keep_read_only);
    s.keep_writable = j.value("keep_writable", s.keep_writable);
    s.inherit_file = j.value("inherit_file", s.inherit_file);
    s.inherit_fd = j.value("inherit_fd", s.inherit_fd);
  } catch (const std::exception& e) {
    return Status::InvalidInput(std::string("sandbox spec: ") + e.what());
  }
  return s;
}

int RunConfined(const SandboxSpec& spec, const std::vector<std::string>& argv) {
  if (argv.empty()) {
    std::cerr << "kpilot-runner: --sandbox needs a program after --\n";
    return 2;
  }
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  std::unique_ptr<Sandbox> box = Sandbox::Enter(spec);
  int status_pipe[2] = {-1, -1};
  if (box->report().pid_namespace && pipe2(status_pipe, O_CLOEXEC) != 0) {
    std::cerr << "kpilot-runner: pipe: " << std::strerror(errno) << "\n";
    return 1;
  }
  std::cout.flush();
  pid_t pid = fork();
  if (pid < 0) {
    std::cerr << "kpilot-runner: fork: " << std::strerror(errno) << "\n";
    return 1;
  }
  if (pid == 0) {
    if (box->report().pid_namespace) {
      close(status_pipe[0]);
      InitMain(*box, argv, status_pipe[1]);
    }
    ExecConfined(*box, argv);
  }
  if (status_pipe[1] >= 0) close(status_pipe[1]);
  box->CloseInherited();
  box->AdoptChild(pid);
  int st = 0;
  for (;;) {
    pollfd p{box->listener_fd(), POLLIN, 0};
    poll(&p, box->listener_fd() >= 0 ? 1 : 0, 20);
    box->AnswerSyscalls();
    pid_t got = waitpid(pid, &st, WNOHANG);
    if (got == pid) break;
    if (got < 0 && errno != EINTR) break;
  }
  box->AnswerSyscalls();
  if (status_pipe[0] >= 0) {
    int program_status = 0;
    if (read(status_pipe[0], &program_status, sizeof(program_status)) == sizeof(program_status)) st = program_status;
    close(status_pipe[0]);
  }
  // Whatever the program left behind (reparented to us as subreaper) goes with it.
  while (waitpid(-1, nullptr, WNOHANG) > 0) {
  }
  std::cerr << kSandboxReportPrefix << ToJson(box->report()).dump() << std::endl;
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

std::optional<SandboxReport> FindSandboxReport(const std::string& stderr_text) {
  std::optional<SandboxReport> found;
  std::istringstream lines(stderr_text);
  const std::string prefix = kSandboxReportPrefix;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(prefix, 0) != 0) continue;
    auto j = nlohmann::json::parse(line.substr(prefix.size()), nullptr, false);
    if (!j.is_discarded()) found = SandboxReportFromJson(j);
  }
  return found;
}

std::string WithoutSandboxReports(const std::string& stderr_text) {
  std::string out;
  const std::string prefix = kSandboxReportPrefix;
  size_t at = 0;
  while (at < stderr_text.size()) {
    size_t end = stderr_text.find('\n', at);
    end = end == std::string::npos ? stderr_text.size() : end + 1;
    if (stderr_text.compare(at, prefix.size(), prefix) != 0) out.append(stderr_text, at, end - at);
    at = end;
  }
  return out;
}

}  // namespace kpilot
