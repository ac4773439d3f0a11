#include "core/clock.h"

#include <thread>

namespace kpilot {
namespace {

class SteadyClock final : public Clock {
 public:
  TimePoint Now() override { return std::chrono::steady_clock::now(); }
  void SleepFor(Duration d) override {
    if (d > Duration::zero()) std::this_thread::sleep_for(d);
  }
};

}  // namespace

Clock& SystemClock() {
  static SteadyClock clock;
  return clock;
}

DeadlineFlag::DeadlineFlag(std::chrono::steady_clock::time_point at, std::shared_ptr<std::atomic<bool>> flag)
    : thread_([this, at, flag = std::move(flag)] {
        std::unique_lock<std::mutex> lock(mu_);
        if (!cv_.wait_until(lock, at, [this] { return ended_; })) flag->store(true);
      }) {}

DeadlineFlag::~DeadlineFlag() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ended_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

}  // namespace kpilot
