// The clock, behind an interface: code that waits on time (a retry's back-off, a poll's pause)
// takes a Clock, so that a test can run it on a fake one that never really sleeps.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

namespace kpilot {

class Clock {
 public:
  using Duration = std::chrono::steady_clock::duration;
  using TimePoint = std::chrono::steady_clock::time_point;

  virtual ~Clock() = default;
  // Monotonic: never goes back, unrelated to the time of day.
  virtual TimePoint Now() = 0;
  // Returns once `d` has passed on this clock; at once when `d` is zero or negative.
  virtual void SleepFor(Duration d) = 0;
};

// The real steady clock and real sleeps. Shared, stateless, thread-safe; lives for the whole
// process.
Clock& SystemClock();

// Sets `flag` once `at` has passed on the steady clock, from a thread of its own; destroyed before
// then, it ends that thread at once and leaves the flag alone. For work that must stop at a
// wall-clock limit while its owner is blocked on something else (a search whose time is up drops
// the compiles it has in flight while it waits for one of them).
class DeadlineFlag {
 public:
  DeadlineFlag(std::chrono::steady_clock::time_point at, std::shared_ptr<std::atomic<bool>> flag);
  ~DeadlineFlag();
  DeadlineFlag(const DeadlineFlag&) = delete;
  DeadlineFlag& operator=(const DeadlineFlag&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool ended_ = false;
  std::thread thread_;  // last: it starts once the members it uses exist
};

}  // namespace kpilot
