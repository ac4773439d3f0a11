// Ordering events in tests without sleeping: a one-shot notification, a gate that holds callers
// until the test opens it, and bounded waits for conditions that nothing signals (a file another
// process writes, a thread blocking inside the code under test). Each wait takes a deadline and
// says whether the condition came, so that a test fails instead of hanging when it never does.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>

namespace kpilot::testing {

// How long a test waits for an event that should come at once: long enough for a loaded
// machine, short enough to fail well within the test's timeout.
inline constexpr std::chrono::seconds kEventTimeout{30};

// Notify() once; any number of threads wait for it. Thread-safe.
class Notification {
 public:
  void Notify();
  bool HasBeenNotified() const;
  // True once notified; false when `timeout` passed first.
  bool WaitFor(std::chrono::milliseconds timeout = kEventTimeout) const;

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool notified_ = false;
};

// Callers of Pass() block until the test calls Open(); the test can wait until a number of them
// are blocked there. Once open it stays open. Thread-safe.
class Gate {
 public:
  void Pass();
  void Open();
  // True once at least `n` callers have arrived at Pass (blocked there or let through since);
  // false when `timeout` passed first.
  bool AwaitArrivals(int n, std::chrono::milliseconds timeout = kEventTimeout) const;
  int Arrivals() const;

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool open_ = false;
  int arrivals_ = 0;
};

// Checks `condition` every millisecond until it holds (true) or `timeout` has passed (false).
// For conditions nothing signals; where the code under test can signal, wait for the signal.
bool WaitUntil(const std::function<bool()>& condition, std::chrono::milliseconds timeout = kEventTimeout);

// Process `pid`'s state letter as /proc/PID/stat gives it (R, S, D, Z, …); '\0' once it is gone.
char ProcessState(pid_t pid);
// User and system CPU seconds process `pid` has used so far (0 once it is gone): a process that
// spins in a loop shows it here, where nothing else would tell.
double ProcessCpuSeconds(pid_t pid);

// The calling thread's kernel id (gettid), for ThreadIsBlocked.
pid_t ThisThreadId();
// True while thread `tid` of this process sleeps in the kernel (state S or D in
// /proc/self/task/TID/stat): waiting on a condition variable, a mutex, a pipe or a child. False
// when it runs or has ended.
bool ThreadIsBlocked(pid_t tid);
// Waits until every thread of this process but the caller is blocked (ThreadIsBlocked), that is
// until the code under test has done all it can do without the caller: checked twice in a row
// 5 ms apart, so that a thread passing between two locks is not taken for one that waits.
bool WaitUntilOtherThreadsBlock(std::chrono::milliseconds timeout = kEventTimeout);

}  // namespace kpilot::testing
