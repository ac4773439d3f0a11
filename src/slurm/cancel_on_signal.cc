// Live allocations cancelled when kpilot is interrupted (slurm.h, CancelOnSignal): SIGINT, SIGTERM
// and SIGHUP write their number to a pipe (the only thing a handler may safely do here); a watcher
// thread reads it, runs scancel for every allocation still registered, then lets the signal end
// the process as it would have.
#include <signal.h>
#include <unistd.h>

#include <map>
#include <mutex>
#include <thread>

#include "slurm/slurm.h"

namespace kpilot::slurm {
namespace {

int g_pipe[2] = {-1, -1};

void OnSignal(int sig) {
  const unsigned char b = static_cast<unsigned char>(sig);
  ssize_t n = write(g_pipe[1], &b, 1);
  (void)n;
}

struct Registry {
  std::mutex mu;
  std::map<int64_t, std::string> jobs;  // job id → scancel
  bool installed = false;
};

Registry& Jobs() {
  static Registry* r = new Registry();  // lives to the process's end: the watcher may outlive main
  return *r;
}

void Watch() {
  unsigned char sig = 0;
  while (read(g_pipe[0], &sig, 1) != 1) {
  }
  std::map<int64_t, std::string> jobs;
  {
    std::lock_guard<std::mutex> lock(Jobs().mu);
    jobs = Jobs().jobs;
  }
  for (const auto& [id, scancel] : jobs) {
    ProcessSpec spec;
    spec.argv = {scancel, std::to_string(id)};
    spec.timeout_s = 20;
    (void)SystemProcessRunner().Run(spec);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

void CancelOnSignal::Register(int64_t job_id, const std::string& scancel) {
  Registry& r = Jobs();
  std::lock_guard<std::mutex> lock(r.mu);
  r.jobs[job_id] = scancel;
  if (r.installed) return;
  if (pipe(g_pipe) != 0) return;  // no pipe: the heartbeat still ends the allocation
  r.installed = true;
  struct sigaction sa = {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
  std::thread(Watch).detach();
}

void CancelOnSignal::Unregister(int64_t job_id) {
  Registry& r = Jobs();
  std::lock_guard<std::mutex> lock(r.mu);
  r.jobs.erase(job_id);
}

}  // namespace kpilot::slurm
