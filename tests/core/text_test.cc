#include "core/text.h"

#include <gtest/gtest.h>

namespace kpilot {
namespace {

TEST(Trim, DropsWhiteSpaceAtBothEndsOnly) {
  EXPECT_EQ(Trim("  a b\t\r\n"), "a b");
  EXPECT_EQ(Trim("x"), "x");
  EXPECT_EQ(Trim(" \t\n"), "");
  EXPECT_EQ(Trim(""), "");
}

TEST(FormatSeconds, SecondsMinutesAndHours) {
  EXPECT_EQ(FormatSeconds(0), "0 s");
  EXPECT_EQ(FormatSeconds(44.6), "45 s");
  EXPECT_EQ(FormatSeconds(59.6), "1m00s");
  EXPECT_EQ(FormatSeconds(247), "4m07s");
  EXPECT_EQ(FormatSeconds(3599), "59m59s");
  EXPECT_EQ(FormatSeconds(3780), "1h03m");
  EXPECT_EQ(FormatSeconds(-3), "0 s") << "a clock's jitter never shows as a negative time";
}

TEST(Gist, FirstAndLastLinesOfAMessageOnOneLine) {
  EXPECT_EQ(Gist("all checks passed", 80), "all checks passed");
  EXPECT_EQ(Gist("", 80), "");
  // A worker's runtime error: the sentence, the traceback, the exception.
  EXPECT_EQ(Gist("the candidate failed on workload default, seed 1:\nTraceback (most recent call last):\n"
                 "  File \"x.py\", line 3, in forward\nValueError: shape not supported\n\n",
                 200),
            "the candidate failed on workload default, seed 1: … ValueError: shape not supported");
  EXPECT_EQ(Gist("\n  one line  \n", 80), "one line");
  EXPECT_EQ(Gist("abcdef", 4), "abcd…");
  // Never half a character: "é" is two bytes.
  EXPECT_EQ(Gist("aé", 2), "a…");
  EXPECT_EQ(Gist("aé", 3), "aé");
}

TEST(FormatUtc, WritesIso8601AtEachPrecision) {
  // 2026-11-30T14:05:09.042Z
  const auto t = std::chrono::system_clock::time_point(std::chrono::milliseconds(1796047509042LL));
  EXPECT_EQ(FormatUtc(t, UtcPrecision::kDate), "2026-11-30");
  EXPECT_EQ(FormatUtc(t, UtcPrecision::kSeconds), "2026-11-30T14:05:09Z");
  EXPECT_EQ(FormatUtc(t, UtcPrecision::kMillis), "2026-11-30T14:05:09.042Z");
  EXPECT_EQ(FormatUtc(std::chrono::system_clock::time_point{}, UtcPrecision::kMillis), "1970-01-01T00:00:00.000Z");
}

}  // namespace
}  // namespace kpilot
