#include "support/sync.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

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

pid_t ThisThreadId() { return static_cast<pid_t>(syscall(SYS_gettid)); }

bool ThreadIsBlocked(pid_t tid) {
  std::ifstream stat("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  // "TID (COMM) STATE …": COMM may hold spaces and parentheses, so the state follows the last ')'.
  const size_t close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size()) return false;
  const char state = line[close + 2];
  return state == 'S' || state == 'D';
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
