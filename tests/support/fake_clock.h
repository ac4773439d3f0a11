// A Clock (core/clock.h) for tests: time moves only when the test or the code under test says so.
#pragma once

#include <mutex>
#include <vector>

#include "core/clock.h"

namespace kpilot::testing {

// Now() starts at an arbitrary fixed point and advances only by SleepFor and Advance. SleepFor
// returns at once, having advanced the clock by the time asked and recorded that request.
// Thread-safe.
class FakeClock final : public Clock {
 public:
  TimePoint Now() override;
  void SleepFor(Duration d) override;
  // Moves the clock forward by `d` without recording a sleep.
  void Advance(Duration d);
  // Every SleepFor request so far, in order (zero and negative ones included).
  std::vector<Duration> Sleeps() const;
  // The same, in seconds.
  std::vector<double> SleepSeconds() const;

 private:
  mutable std::mutex mu_;
  TimePoint now_{std::chrono::hours(1)};
  std::vector<Duration> sleeps_;
};

}  // namespace kpilot::testing
