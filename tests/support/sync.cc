#include "support/sync.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace kpilot::testing {

void Notification::Notify() {
  {
    std::lock_guard lock(mu_);
    notified_ = true;
  }
  cv_.notify_all();
}

bool Notification::HasBeenNotified() const {
  std::lock_guard lock(mu_);
  return notified_;
}

bool Notification::WaitFor(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return notified_; });
}

void Gate::Pass() {
  std::unique_lock lock(mu_);
  ++arrivals_;
  cv_.notify_all();
  cv_.wait(lock, [&] { return open_; });
}

void Gate::Open() {
  {
    std::lock_guard lock(mu_);
    open_ = true;
  }
  cv_.notify_all();
}

bool Gate::AwaitArrivals(int n, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return arrivals_ >= n; });
}

int Gate::Arrivals() const {
  std::lock_guard lock(mu_);
  return arrivals_;
}

bool WaitUntil(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return condition();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

namespace {

// The fields of a /proc stat file after "PID (COMM)", from the state on; empty when it is gone.
// COMM may hold spaces and parentheses, so the fields start after the last ')'.
std::vector<std::string> StatFields(const std::string& path) {
  std::ifstream stat(path);
  std::string line;
  if (!std::getline(stat, line)) return {};
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream rest(line.substr(close + 1));
  std::vector<std::string> fields;
  for (std::string f; rest >> f;) fields.push_back(f);
  return fields;
}

}  // namespace

char ProcessState(pid_t pid) {
  const auto fields = StatFields("/proc/" + std::to_string(pid) + "/stat");
  return fields.empty() ? '\0' : fields[0][0];
}

double ProcessCpuSeconds(pid_t pid) {
  // utime and stime are the stat file's fields 14 and 15, in clock ticks.
  const auto fields = StatFields("/proc/" + std::to_string(pid) + "/stat");
  if (fields.size() < 13) return 0;
  return static_cast<double>(std::stoll(fields[11]) + std::stoll(fields[12])) /
         static_cast<double>(sysconf(_SC_CLK_TCK));
}

pid_t ThisThreadId() { return static_cast<pid_t>(syscall(SYS_gettid)); }

bool ThreadIsBlocked(pid_t tid) {
  const auto fields = StatFields("/proc/self/task/" + std::to_string(tid) + "/stat");
  return !fields.empty() && (fields[0] == "S" || fields[0] == "D");
}

namespace {

bool OtherThreadsBlocked() {
  const pid_t self = ThisThreadId();
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    const pid_t tid = static_cast<pid_t>(std::stol(e.path().filename().string()));
    if (tid != self && !ThreadIsBlocked(tid)) {
      // A thread that ended between the listing and the look is not running.
      if (std::filesystem::exists(e.path(), ec)) return false;
    }
  }
  return !ec;
}

}  // namespace

bool WaitUntilOtherThreadsBlock(std::chrono::milliseconds timeout) {
  return WaitUntil(
      [] {
        if (!OtherThreadsBlocked()) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        return OtherThreadsBlocked();
      },
      timeout);
}

}  // namespace kpilot::testing
