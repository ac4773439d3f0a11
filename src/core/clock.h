// The clock, behind an interface: code that waits on time (a retry's back-off, a poll's pause)
// takes a Clock, so that a test can run it on a fake one that never really sleeps.
#pragma once

#include <chrono>

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

}  // namespace kpilot
