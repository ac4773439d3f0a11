// kpilot-runner --serve: one worker process serves request after request (see supervisor.h).
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <set>
#include <string>

#include "core/subprocess.h"
#include "runner/kernel_object.h"
#include "runner/supervision.h"
#include "runner/supervisor.h"

namespace kpilot {
namespace {

// The folder a server keeps visible: the one holding the request folders, unless that is a
// shared scratch folder or the root (requests made elsewhere than in a server's own folder), in
// which case only the first request's folder (later ones outside it are not readable: the worker
// retires and a fresh one takes them).
std::string ServerDir(const std::string& request_dir) {
  std::error_code ec;
  const std::filesystem::path dir = std::filesystem::absolute(request_dir, ec).lexically_normal();
  const std::filesystem::path parent = dir.parent_path();
  if (parent == "/") return dir.string();
  for (const char* shared : kScratchFolders)
    if (parent == shared) return dir.string();
  if (const char* tmp = std::getenv("TMPDIR"); tmp && *tmp && parent == std::filesystem::path(tmp).lexically_normal())
    return dir.string();
  return parent.string();
}

// Readies a request's folder for a served worker that runs as the sandbox's user: it may enter
// the folder and read the request and its objects, and writes its output to the two files made
// for it here.
void PrepareRequestDir(const std::string& dir, const Sandbox& box) {
  MakeReadable(dir);
  for (const char* name : {"/candidate.stdout", "/candidate.stderr"}) {
    int fd = open((dir + name).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) continue;
    if (box.report().enabled && box.report().uid >= 0 && geteuid() == 0)
      (void)!fchown(fd, static_cast<uid_t>(box.report().uid), static_cast<gid_t>(-1));
    close(fd);
  }
}

constexpr int kRequestFd = 518;  // where a serving worker reads the paths of its requests

// The next non-empty line from `fd` into `line`; false at end of file. With `watch_caller`, polls
// and gives up too once no one reads our stdout any more.
bool NextLine(int fd, std::string& pending, std::string* line, bool watch_caller) {
  char chunk[4096];
  for (;;) {
    size_t nl = pending.find('\n');
    if (nl != std::string::npos) {
      *line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      if (line->empty()) continue;
      return true;
    }
    if (watch_caller) {
      if (CallerGone()) return false;
      pollfd p{fd, POLLIN, 0};
      int r = poll(&p, 1, 200);
      if (r <= 0) continue;  // a timeout or EINTR: look at the caller again
    }
    ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n == 0) return false;
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return false;
    }
    pending.append(chunk, static_cast<size_t>(n));
  }
}

int ThreadCount() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
  }
  return n;
}

std::string RequestDir(const std::string& request_path) {
  std::string dir = std::filesystem::path(request_path).parent_path().string();
  return dir.empty() ? "." : dir;
}

// "" when the worker may serve another request after `req` gave `r`; else why it may not.
std::string WhyNotServeAgain(const RunRequest& req, const RunResult& r, WorkerSession& session, int threads_open,
                             const std::set<std::string>& allowed_objects) {
  if (req.profile_only || req.calibrate_only || !req.sweep_objects.empty())
    return "a served runner keeps going after evaluations only, not after a profile, calibration or sweep";
  // A failed run may have left anything behind (a damaged heap, a half-done launch).
  if (r.status != "passed") return "the run ended " + r.status;
  if (auto kids = ChildPids(getpid()); !kids.empty())
    return "the candidate left " + std::to_string(kids.size()) + " process(es) running";
  if (int t = ThreadCount(); t > threads_open)
    return "the candidate left " + std::to_string(t - threads_open) + " thread(s) running";
  for (const auto& name : LoadedObjects())
    if (!allowed_objects.count(name)) return "the candidate brought in " + name + ", which stays loaded";
  // A timer left armed would fire in a later candidate's run, and its signal be blamed on it.
  for (int which : {ITIMER_REAL, ITIMER_VIRTUAL, ITIMER_PROF}) {
    itimerval t{};
    if (getitimer(which, &t) == 0 && (t.it_value.tv_sec != 0 || t.it_value.tv_usec != 0))
      return "the candidate left an interval timer armed";
  }
  return session.WhyNotAgain();
}

// The worker of --serve: reads "TAG PATH" per line on kRequestFd (PATH a request file), runs the
// request in that file's folder, and writes "result TAG JSON" and then "next TAG ready" or
// "next TAG retire WHY" on kResultFd. After a retire (or when the supervisor closes the pipe) it
// exits.
[[noreturn]] void ServeWorkerMain(const RunRequest& first, const std::string& first_dir, const SessionFactory& make,
                                  Sandbox& box) {
  int devnull = open("/dev/null", O_RDONLY);
  if (devnull >= 0) dup2(devnull, 0);
  RedirectOutput(first_dir);
  LimitWorker(first, /*serving=*/true);
  ConfineOrExit(box);
  std::unique_ptr<WorkerSession> session = make(first.backend);
  session->Open(first);
  const int threads_open = ThreadCount();
  std::set<std::string> allowed = LoadedObjects();
  PipeReporter reporter;
  std::string pending, line;
  while (NextLine(kRequestFd, pending, &line, /*watch_caller=*/false)) {
    const size_t space = line.find(' ');
    const std::string tag = line.substr(0, space);
    const std::string path = space == std::string::npos ? std::string() : line.substr(space + 1);
    RunResult result;
    std::string why;
    auto req = ReadRunRequestFile(path);
    if (!req.ok()) {
      result.status = "error";
      result.message = req.status().message();
      why = "its request could not be read";
    } else {
      const std::string dir = RequestDir(path);
      (void)!chdir(dir.c_str());  // a candidate's relative paths start there, as in a runner of its own
      RedirectOutput(dir);
      LimitWorker(*req, /*serving=*/true);
      result = session->Run(*req, reporter);
      std::fflush(nullptr);  // the candidate's buffered output goes to this request's files
      for (const std::string* o : {&req->reference_object, &req->baseline_object, &req->candidate_object})
        if (!o->empty()) allowed.insert(*o);
      why = WhyNotServeAgain(*req, result, *session, threads_open, allowed);
      // Between requests the worker holds no request's folder or files.
      (void)!chdir("/");
      if (int null = open("/dev/null", O_WRONLY | O_CLOEXEC); null >= 0) {
        dup2(null, 1);
        dup2(null, 2);
        close(null);
      }
    }
    PipeReporter::WriteAll("result " + tag + " " + JsonText(ToJson(result)) + "\n");
    PipeReporter::WriteAll("next " + tag + (why.empty() ? std::string(" ready\n") : " retire " + why + "\n"));
    if (!why.empty()) break;
  }
  _exit(0);
}

}  // namespace

int RunServing(const SessionFactory& make) {
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  signal(SIGPIPE, SIG_IGN);  // a dead worker's request pipe: write() fails instead
  std::unique_ptr<Sandbox> box = Sandbox::Disabled();
  Backend backend = Backend::kHost;
  pid_t pid = -1;
  int request_fd = -1, result_fd = -1;
  int served = 0;
  std::string stdin_pending, buffer, path;
  // Each request line carries a fresh tag that the worker echoes: a line the candidate writes to
  // the result pipe it inherits does not carry it, so it cannot pass for this request's result,
  // nor be read as the next one's.
  auto stop_worker = [&] {
    if (pid > 0) {
      kill(pid, SIGKILL);
      int st;
      waitpid(pid, &st, 0);
      pid = -1;
    }
    if (request_fd >= 0) close(request_fd);
    if (result_fd >= 0) close(result_fd);
    request_fd = result_fd = -1;
    return KillLeftovers();
  };
  while (NextLine(STDIN_FILENO, stdin_pending, &path, /*watch_caller=*/true)) {
    const auto start = std::chrono::steady_clock::now();
    const std::string dir = RequestDir(path);
    ++served;
    auto req = ReadRunRequestFile(path);
    if (req.ok() && pid > 0 && req->backend != backend)
      req = Status::InvalidInput(path + ": this runner serves the " + std::string(BackendName(backend)) +
                                 " backend; start another runner for the " + std::string(BackendName(req->backend)) +
                                 " one");
    if (!req.ok()) {
      RunResult r;
      r.status = "error";
      r.message = req.status().message();
      r.details["served"] = {{"request", served}, {"pid", getpid()}, {"next", "ready"}, {"why", ""}};
      PrintResult(std::move(r), dir, start);
      continue;
    }
    // A worker that ended while idle (a timer a passing candidate left, the OOM killer) is not
    // this request's doing: it gets a fresh worker, and its result says why.
    std::string restarted;
    if (int st = 0; pid > 0 && waitpid(pid, &st, WNOHANG) == pid) {
      restarted =
          "the served runner's worker had ended since its last request (" +
          (WIFSIGNALED(st) ? "signal " + std::to_string(WTERMSIG(st)) : "exit " + std::to_string(WEXITSTATUS(st))) +
          "); this request ran in a fresh one";
      pid = -1;  // reaped above: stop_worker only closes its pipes and sweeps what it left
      stop_worker();
      buffer.clear();
    }
    if (pid < 0) {
      // No PID namespace: its init would end with the first worker. The folder kept visible is
      // the one that holds the request folders (ServedRunner makes one per server), so the
      // worker sees the requests that come after this one.
      const std::string server_dir = ServerDir(dir);
      box.reset();
      box = EnterSandbox(*req, server_dir, /*pid_namespace_ok=*/false);
      backend = req->backend;
      int to_worker[2], from_worker[2];
      if (pipe2(to_worker, O_CLOEXEC) != 0 || pipe2(from_worker, O_CLOEXEC) != 0) {
        std::perror("kpilot-runner: pipe");
        return 1;
      }
      std::fflush(stdout);
      pid = fork();
      if (pid < 0) {
        std::perror("kpilot-runner: fork");
        return 1;
      }
      if (pid == 0) {
        dup2(to_worker[0], kRequestFd);
        dup2(from_worker[1], kResultFd);
        for (int fd : {to_worker[0], to_worker[1], from_worker[0], from_worker[1]}) close(fd);
        ServeWorkerMain(*req, dir, make, *box);
      }
      close(to_worker[0]);
      close(from_worker[1]);
      box->CloseInherited();
      box->AdoptChild(pid);
      request_fd = to_worker[1];
      result_fd = from_worker[0];
      fcntl(result_fd, F_SETFL, O_NONBLOCK);
    }
    const std::string tag = RunTag();
    const std::string line = tag + " " + path + "\n";
    PrepareRequestDir(dir, *box);
    (void)!write(request_fd, line.data(), line.size());  // a dead worker shows in the watch below
    Watched w = WatchWorker(pid, result_fd, *req, /*serving=*/true, buffer, *box, tag);
    if (w.caller_gone) {
      stop_worker();
      return kExitCallerGone;
    }
    RunResult result = ResultOf(w, *req);
    if (!restarted.empty()) result.warnings.push_back(restarted);
    ApplySandboxReport(*box, w, &result);
    box->ResetDenied();
    box->ClearScratch();  // nothing a candidate leaves in /tmp reaches the next one
    std::string why;
    if (w.exited)
      why = "the worker ended with its run";
    else if (!result.sandbox.denied.empty())
      why = "the candidate tried what the sandbox denies";
    // The worker runs as the sandbox's user and cannot see its own children in a hidepid /proc.
    else if (auto kids = ChildPids(pid); !kids.empty())
      why = "the candidate left " + std::to_string(kids.size()) + " process(es) running";
    else if (w.next_line.rfind("retire ", 0) == 0)
      why = w.next_line.substr(7);
    else if (ChildPids(getpid()).size() > 1)
      why = "the candidate left processes running";
    else if (w.untagged > 0 || buffer.find('\n') != std::string::npos)
      why = "the candidate wrote result lines to the runner's result pipe";
    if (w.exited) pid = -1;
    if (!why.empty()) result.leftover_processes_killed = stop_worker();
    result.details["served"] = {
        {"request", served}, {"pid", getpid()}, {"next", why.empty() ? "ready" : "retire"}, {"why", why}};
    PrintResult(std::move(result), dir, start);
    if (!why.empty()) return 0;
  }
  stop_worker();
  return 0;
}

}  // namespace kpilot
