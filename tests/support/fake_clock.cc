#include "support/fake_clock.h"

namespace kpilot::testing {

Clock::TimePoint FakeClock::Now() {
  std::lock_guard lock(mu_);
  return now_;
}

void FakeClock::SleepFor(Duration d) {
  std::lock_guard lock(mu_);
  sleeps_.push_back(d);
  if (d > Duration::zero()) now_ += d;
}

void FakeClock::Advance(Duration d) {
  std::lock_guard lock(mu_);
  now_ += d;
}

std::vector<Clock::Duration> FakeClock::Sleeps() const {
  std::lock_guard lock(mu_);
  return sleeps_;
}

std::vector<double> FakeClock::SleepSeconds() const {
  std::vector<double> out;
  for (Duration d : Sleeps()) out.push_back(std::chrono::duration<double>(d).count());
  return out;
}

}  // namespace kpilot::testing
