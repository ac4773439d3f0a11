#include "core/subprocess.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/fs.h"

extern char** environ;

namespace kpilot {
namespace {

// How often a cancellable child's flag is looked at (ProcessSpec::cancel).
constexpr int kCancelPollMs = 50;

void AppendCapped(std::string& buf, const char* data, size_t n, size_t cap, bool& truncated) {
  buf.append(data, n);
  if (buf.size() > cap + cap / 2) {  // trim in chunks to keep appends cheap
    buf.erase(0, buf.size() - cap);
    truncated = true;
  }
}

// A started child: its pid (also its process group) and our ends of its stdin, stdout, stderr.
struct Spawned {
  pid_t pid = -1;
  int in = -1, out = -1, err = -1;
};

// fork + exec of spec.argv in a process group of its own, with spec's cwd, env and nice. A
// program that cannot be found or started is a non-ok Status (the child's exec errno, read
// back through a close-on-exec pipe).
Result<Spawned> Spawn(const ProcessSpec& spec) {
  if (spec.argv.empty()) return Status::InvalidInput("subprocess: empty argv");
  std::string exe = FindOnPath(spec.argv[0]);
  if (exe.empty()) return Status::NotFound(spec.argv[0] + ": program not found on PATH");
  // The child changes directory before exec: a relative program path must not depend on it.
  std::error_code abs_ec;
  exe = std::filesystem::absolute(exe, abs_ec).string();

  // Everything the child needs is prepared before fork(): after it only async-signal-safe calls.
  std::vector<char*> argv;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  if (spec.env) {
    for (const auto& e : *spec.env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
  }
  std::string cwd = spec.cwd ? spec.cwd->string() : std::string();

  int in_pipe[2] = {-1, -1}, out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, exec_pipe[2] = {-1, -1};
  auto close_all = [&] {
    for (int* p : {in_pipe, out_pipe, err_pipe, exec_pipe})
      for (int i = 0; i < 2; ++i)
        if (p[i] >= 0) close(p[i]);
  };
  if (pipe2(in_pipe, O_CLOEXEC) || pipe2(out_pipe, O_CLOEXEC) || pipe2(err_pipe, O_CLOEXEC) ||
      pipe2(exec_pipe, O_CLOEXEC)) {
    int err = errno;
    close_all();
    return Status::Internal(std::string("pipe: ") + std::strerror(err));
  }

  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    close_all();
    return Status::Internal(std::string("fork: ") + std::strerror(err));
  }
  if (pid == 0) {
    setpgid(0, 0);
    if (spec.nice > 0) {
      errno = 0;
      const int inherited = getpriority(PRIO_PROCESS, 0);
      if (errno != 0 || inherited < spec.nice) (void)setpriority(PRIO_PROCESS, 0, spec.nice);
    }
    signal(SIGPIPE, SIG_DFL);
    dup2(in_pipe[0], 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) {
      int e = errno;
      (void)!write(exec_pipe[1], &e, sizeof(e));
      _exit(127);
    }
    if (spec.env)
      execve(exe.c_str(), argv.data(), envp.data());
    else
      execv(exe.c_str(), argv.data());
    int e = errno;
    (void)!write(exec_pipe[1], &e, sizeof(e));
    _exit(127);
  }
  setpgid(pid, pid);  // also from the parent, so a kill before the child runs still hits the group
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  close(exec_pipe[1]);

  int exec_errno = 0;
  ssize_t got = read(exec_pipe[0], &exec_errno, sizeof(exec_errno));
  close(exec_pipe[0]);
  if (got == static_cast<ssize_t>(sizeof(exec_errno))) {
    close(in_pipe[1]);
    close(out_pipe[0]);
    close(err_pipe[0]);
    int st;
    waitpid(pid, &st, 0);
    return Status::Internal(spec.argv[0] + ": cannot start: " + std::strerror(exec_errno));
  }
  return Spawned{pid, in_pipe[1], out_pipe[0], err_pipe[0]};
}

void SetWaitStatus(int st, ProcessResult* r) {
  if (WIFEXITED(st)) r->exit_code = WEXITSTATUS(st);
  if (WIFSIGNALED(st)) r->term_signal = WTERMSIG(st);
}

class PosixProcessRunner : public ProcessRunner {
 public:
  Result<ProcessResult> Run(const ProcessSpec& spec) override {
    auto start = std::chrono::steady_clock::now();
    auto spawned = Spawn(spec);
    if (!spawned.ok()) return spawned.status();
    const pid_t pid = spawned->pid;

    ProcessResult r;
    size_t in_off = 0;
    int in_fd = spawned->in;
    if (spec.stdin_data.empty()) {
      close(in_fd);
      in_fd = -1;
    } else {
      fcntl(in_fd, F_SETFL, O_NONBLOCK);
    }
    int out_fd = spawned->out, err_fd = spawned->err;
    char buf[65536];
    auto cancelled = [&] { return spec.cancel && spec.cancel->load(); };
    while (out_fd >= 0 || err_fd >= 0) {
      int wait_ms = spec.cancel ? kCancelPollMs : -1;
      if (cancelled()) {
        r.cancelled = true;
        kill(-pid, SIGKILL);
        break;
      }
      if (spec.timeout_s > 0) {
        double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        double left = spec.timeout_s - elapsed;
        if (left <= 0) {
          r.timed_out = true;
          kill(-pid, SIGKILL);
          break;
        }
        wait_ms = static_cast<int>(std::min(left * 1000.0 + 1, spec.cancel ? double(kCancelPollMs) : 1000.0));
      }
      pollfd fds[3];
      int n = 0;
      if (out_fd >= 0) fds[n++] = {out_fd, POLLIN, 0};
      if (err_fd >= 0) fds[n++] = {err_fd, POLLIN, 0};
      if (in_fd >= 0) fds[n++] = {in_fd, POLLOUT, 0};
      int pr = poll(fds, n, wait_ms);
      if (pr < 0 && errno != EINTR) break;
      for (int i = 0; i < n; ++i) {
        if (!fds[i].revents) continue;
        int fd = fds[i].fd;
        if (fd == in_fd) {
          ssize_t w = write(in_fd, spec.stdin_data.data() + in_off, spec.stdin_data.size() - in_off);
          if (w > 0) in_off += static_cast<size_t>(w);
          if (w < 0 && errno != EAGAIN && errno != EINTR) in_off = spec.stdin_data.size();
          if (in_off >= spec.stdin_data.size()) {
            close(in_fd);
            in_fd = -1;
          }
          continue;
        }
        ssize_t k = read(fd, buf, sizeof(buf));
        if (k > 0) {
          AppendCapped(fd == out_fd ? r.out : r.err, buf, static_cast<size_t>(k), spec.max_output_bytes,
                       r.output_truncated);
        } else if (k == 0 || (errno != EINTR && errno != EAGAIN)) {
          close(fd);
          if (fd == out_fd)
            out_fd = -1;
          else
            err_fd = -1;
        }
      }
    }
    if (in_fd >= 0) close(in_fd);
    if (out_fd >= 0) close(out_fd);
    if (err_fd >= 0) close(err_fd);

    // Output closed (or timeout): reap, still enforcing the timeout if the child lingers.
    int st = 0;
    for (;;) {
      pid_t w = waitpid(pid, &st, r.timed_out || r.cancelled ? 0 : WNOHANG);
      if (w == pid) break;
      if (w < 0 && errno != EINTR) break;
      double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (spec.timeout_s > 0 && elapsed > spec.timeout_s) {
        r.timed_out = true;
        kill(-pid, SIGKILL);
      } else if (cancelled()) {
        r.cancelled = true;
        kill(-pid, SIGKILL);
      } else {
        usleep(2000);
      }
    }
    // Whatever the child left in its process group goes with it.
    kill(-pid, SIGKILL);
    SetWaitStatus(st, &r);
    if (r.output_truncated) {
      for (std::string* s : {&r.out, &r.err})
        if (s->size() > spec.max_output_bytes) s->erase(0, s->size() - spec.max_output_bytes);
    }
    r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
  }
};

}  // namespace

Result<std::unique_ptr<LiveProcess>> LiveProcess::Start(const ProcessSpec& spec) {
  auto start = std::chrono::steady_clock::now();
  auto spawned = Spawn(spec);
  if (!spawned.ok()) return spawned.status();
  std::unique_ptr<LiveProcess> p(new LiveProcess());
  p->pid_ = spawned->pid;
  p->in_ = spawned->in;
  p->out_ = spawned->out;
  p->err_ = spawned->err;
  p->start_ = start;
  fcntl(p->out_, F_SETFL, O_NONBLOCK);
  fcntl(p->err_, F_SETFL, O_NONBLOCK);
  return p;
}

LiveProcess::~LiveProcess() { Stop(); }

void LiveProcess::DrainStderr() {
  if (err_ < 0) return;
  char buf[4096];
  for (;;) {
    ssize_t k = read(err_, buf, sizeof(buf));
    if (k > 0) {
      AppendCapped(ended_.err, buf, static_cast<size_t>(k), 64u << 10, ended_.output_truncated);
      continue;
    }
    if (k == 0 || (errno != EINTR && errno != EAGAIN)) {
      close(err_);
      err_ = -1;
    }
    return;
  }
}

Status LiveProcess::WriteLine(const std::string& line) {
  if (in_ < 0) return Status::Unavailable("the process's stdin is closed");
  std::string data = line + "\n";
  size_t off = 0;
  while (off < data.size()) {
    // MSG_NOSIGNAL is for sockets; a write to a pipe whose reader is gone raises SIGPIPE, so it
    // is blocked for this thread around the write and a pending one is consumed.
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    ssize_t n = write(in_, data.data() + off, data.size() - off);
    int err = errno;
    if (n < 0 && err == EPIPE) {
      timespec zero{0, 0};
      sigtimedwait(&block, nullptr, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    if (n < 0 && err == EINTR) continue;
    if (n < 0) {
      close(in_);
      in_ = -1;
      return Status::Unavailable(std::string("writing to the process: ") + std::strerror(err));
    }
    off += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Result<std::string> LiveProcess::ReadLine(double timeout_s, const std::atomic<bool>* cancel) {
  auto t0 = std::chrono::steady_clock::now();
  char buf[65536];
  for (;;) {
    size_t nl = pending_.find('\n');
    if (nl != std::string::npos) {
      std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      return line;
    }
    if (out_ < 0) return Status::Unavailable("the process closed its stdout");
    if (cancel && cancel->load()) return Status::Internal("cancelled");
    int wait_ms = 1000;
    if (timeout_s > 0) {
      double left = timeout_s - std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (left <= 0) return Status::Timeout("no answer from the process within " + std::to_string(timeout_s) + " s");
      wait_ms = static_cast<int>(std::min(left * 1000.0 + 1, 1000.0));
    }
    if (cancel) wait_ms = std::min(wait_ms, kCancelPollMs);
    pollfd fds[2] = {{out_, POLLIN, 0}, {err_, POLLIN, 0}};
    int pr = poll(fds, err_ >= 0 ? 2 : 1, wait_ms);
    if (pr < 0 && errno != EINTR) return Status::Internal(std::string("poll: ") + std::strerror(errno));
    if (pr <= 0) continue;
    if (err_ >= 0 && fds[1].revents) DrainStderr();
    if (fds[0].revents) {
      ssize_t k = read(out_, buf, sizeof(buf));
      if (k > 0) {
        pending_.append(buf, static_cast<size_t>(k));
      } else if (k == 0 || (errno != EINTR && errno != EAGAIN)) {
        close(out_);
        out_ = -1;
      }
    }
  }
}

bool LiveProcess::running() {
  if (reaped_) return false;
  int st = 0;
  if (waitpid(pid_, &st, WNOHANG) == pid_) {
    reaped_ = true;
    SetWaitStatus(st, &ended_);
    kill(-pid_, SIGKILL);  // whatever it left in its group goes with it
    return false;
  }
  return true;
}

ProcessResult LiveProcess::Stop() {
  if (pid_ > 0 && !reaped_) {
    kill(-pid_, SIGKILL);
    int st = 0;
    while (waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    SetWaitStatus(st, &ended_);
  }
  DrainStderr();
  for (int* fd : {&in_, &out_, &err_})
    if (*fd >= 0) {
      close(*fd);
      *fd = -1;
    }
  ended_.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  return ended_;
}

std::string ProcessResult::Describe(double timeout) const {
  if (timed_out) {
    if (timeout > 0) return "timed out after " + std::to_string(static_cast<long>(timeout)) + " s";
    return "timed out";
  }
  if (cancelled) return "cancelled";
  if (term_signal) return "killed by signal " + std::to_string(term_signal) + " (" + strsignal(term_signal) + ")";
  return "exit code " + std::to_string(exit_code);
}

ProcessRunner& SystemProcessRunner() {
  static PosixProcessRunner runner;
  return runner;
}

bool IsSecretVariableName(const std::string& name) {
  std::string upper = name;
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  for (const char* word : {"KEY", "TOKEN", "SECRET", "PASSWORD"})
    if (upper.find(word) != std::string::npos) return true;
  return false;
}

std::vector<std::string> ScrubbedEnvironment() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string entry(*e);
    std::string name = entry.substr(0, entry.find('='));
    if (!IsSecretVariableName(name)) env.push_back(entry);
  }
  return env;
}

std::string FindOnPath(const std::string& program) {
  if (program.empty()) return "";
  if (program.find('/') != std::string::npos) return access(program.c_str(), X_OK) == 0 ? program : "";
  const char* path = getenv("PATH");
  std::string p = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    std::string dir = p.substr(start, end - start);
    if (dir.empty()) dir = ".";
    std::string cand = dir + "/" + program;
    struct stat sb;
    if (stat(cand.c_str(), &sb) == 0 && S_ISREG(sb.st_mode) && access(cand.c_str(), X_OK) == 0) return cand;
    start = end + 1;
  }
  return "";
}

pid_t ParentPid(pid_t pid) {
  auto stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (!stat.ok()) return 0;
  // The command name may hold spaces and parentheses: the fields after it follow the last ')'.
  size_t close_paren = stat->rfind(')');
  if (close_paren == std::string::npos) return 0;
  char state;
  long ppid = 0;
  if (std::sscanf(stat->c_str() + close_paren + 1, " %c %ld", &state, &ppid) != 2) return 0;
  return static_cast<pid_t>(ppid);
}

std::vector<pid_t> ChildPids(pid_t parent) {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    char* end;
    long pid = strtol(e->d_name, &end, 10);
    if (*end || pid <= 0) continue;
    if (ParentPid(static_cast<pid_t>(pid)) == parent) out.push_back(static_cast<pid_t>(pid));
  }
  closedir(d);
  return out;
}

}  // namespace kpilot
