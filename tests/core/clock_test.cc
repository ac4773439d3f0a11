// DeadlineFlag: the flag turns true once its deadline has passed, and a flag destroyed before its
// deadline ends at once and leaves the flag alone.
#include <gtest/gtest.h>

#include "core/clock.h"
#include "support/sync.h"

namespace kpilot {
namespace {

TEST(DeadlineFlag, SetsTheFlagOnceTheDeadlineHasPassed) {
  auto flag = std::make_shared<std::atomic<bool>>(false);
  DeadlineFlag deadline(std::chrono::steady_clock::now() - std::chrono::seconds(1), flag);
  EXPECT_TRUE(testing::WaitUntil([&] { return flag->load(); }));
}

TEST(DeadlineFlag, DestroyedBeforeItsDeadlineItEndsAtOnceAndLeavesTheFlag) {
  auto flag = std::make_shared<std::atomic<bool>>(false);
  const auto t0 = std::chrono::steady_clock::now();
  { DeadlineFlag deadline(t0 + std::chrono::hours(1), flag); }
  EXPECT_FALSE(flag->load());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
}

}  // namespace
}  // namespace kpilot
