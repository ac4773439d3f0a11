#include <gtest/gtest.h>

#include <string>

#include "search/memory.h"

namespace kpilot {
namespace {

Attempt Passed(int64_t node, int64_t parent, double speedup, double delta, std::string summary) {
  Attempt a;
  a.node = node;
  a.parent = parent;
  a.summary = std::move(summary);
  a.verdict = "passed";
  a.speedup = speedup;
  a.delta = delta;
  return a;
}

Attempt Failed(int64_t node, int64_t parent, std::string verdict, std::string failure, std::string summary) {
  Attempt a;
  a.node = node;
  a.parent = parent;
  a.summary = std::move(summary);
  a.verdict = std::move(verdict);
  a.failure = std::move(failure);
  return a;
}

// True when `s` is well-formed UTF-8 (no character cut in half).
bool ValidUtf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += len;
  }
  return true;
}

SearchMemory Sample() {
  SearchMemory m;
  m.Record(Passed(1, 0, 1.8, 0.8, "tile 64x64 in shared memory"));
  m.Record(Failed(2, 0, "compile_error", "ptxas: too many resources requested\nline 2", "unroll k by 8"));
  m.Record(Passed(3, 1, 2.4, 0.333, "double-buffer the tiles"));
  m.Record(Failed(4, 1, "incorrect", "max abs error 0.5 at index 17", "vectorize stores"));
  m.Record(Failed(5, 3, "compile_error", "ptxas: too many resources requested", "unroll k by 16"));
  m.Record(Passed(6, 3, 2.1, -0.13, "swizzle the shared layout"));
  return m;
}

TEST(SearchMemory, EmptyMemoryHasAnEmptySummary) {
  SearchMemory m;
  EXPECT_EQ(m.Summary(0), "");
}

TEST(SearchMemory, SummaryHasEverySection) {
  const std::string s = Sample().Summary(3);
  // What was tried from the parent, newest first.
  const size_t tried = s.find("Tried from #3 (2 attempts):");
  ASSERT_NE(tried, std::string::npos) << s;
  EXPECT_LT(s.find("#6 passed 2.10x (-13% vs #3): swizzle", tried), s.find("#5 compile_error: unroll k by 16", tried));
  // Best results by speedup.
  const size_t best = s.find("Best results:");
  ASSERT_NE(best, std::string::npos);
  EXPECT_LT(s.find("#3 passed 2.40x", best), s.find("#6 passed 2.10x", best));
  EXPECT_LT(s.find("#6 passed 2.10x", best), s.find("#1 passed 1.80x", best));
  // Failures grouped by verdict and first line of the reason, most frequent first.
  const size_t failures = s.find("Failures by reason:");
  ASSERT_NE(failures, std::string::npos);
  EXPECT_NE(s.find("compile_error: ptxas: too many resources requested (x2, latest #5", failures), std::string::npos)
      << s;
  EXPECT_NE(s.find("incorrect: max abs error 0.5 at index 17 (x1, latest #4", failures), std::string::npos);
  EXPECT_EQ(s.find("line 2"), std::string::npos) << "only the first line of a reason";
  // Regressions.
  const size_t regressions = s.find("Regressions:");
  ASSERT_NE(regressions, std::string::npos);
  EXPECT_NE(s.find("#6 passed 2.10x", regressions), std::string::npos);
  EXPECT_EQ(s.find("Plateau"), std::string::npos) << "the best improved 3 attempts ago";
}

TEST(SearchMemory, TriedFromListsOnlyThatParent) {
  const std::string s = Sample().Summary(1);
  const size_t tried = s.find("Tried from #1 (2 attempts):");
  ASSERT_NE(tried, std::string::npos);
  const size_t end = s.find("Best results:");
  const std::string section = s.substr(tried, end - tried);
  EXPECT_NE(section.find("#3 passed"), std::string::npos);
  EXPECT_NE(section.find("#4 incorrect"), std::string::npos);
  EXPECT_EQ(section.find("#6"), std::string::npos);
  EXPECT_EQ(Sample().Summary(99).find("Tried from"), std::string::npos);
}

TEST(SearchMemory, ReportsAPlateauAfterFiveAttemptsWithoutANewBest) {
  SearchMemory m;
  m.Record(Passed(1, 0, 2.0, 1.0, "good"));
  for (int i = 0; i < SearchMemory::kPlateauAttempts - 1; ++i) m.Record(Passed(2 + i, 1, 1.5, -0.25, "meh"));
  EXPECT_EQ(m.Summary(1).find("Plateau"), std::string::npos);
  m.Record(Failed(9, 1, "timeout", "exceeded 10 s", "spin"));
  const std::string s = m.Summary(1);
  EXPECT_EQ(s.rfind("Plateau: the last 5 attempts did not beat the best (2.00x, #1)", 0), 0u) << s;

  SearchMemory none;
  for (int i = 0; i < 6; ++i) none.Record(Failed(i + 1, 0, "compile_error", "syntax", "x"));
  EXPECT_EQ(none.Summary(0).rfind("Plateau: none of the 6 attempts so far passed", 0), 0u);
}

TEST(SearchMemory, SummaryIsBoundedAndCutsWholeLines) {
  SearchMemory m;
  std::string long_text;
  for (int i = 0; i < 100; ++i) long_text += "µs-scale tiling ";
  for (int i = 0; i < 1000; ++i) {
    if (i % 3 == 0)
      m.Record(Failed(i + 1, i / 10, "incorrect", "error " + std::to_string(i % 17) + long_text, long_text));
    else
      m.Record(Passed(i + 1, i / 10, 1.0 + (i % 37) * 0.1, (i % 5) * 0.1 - 0.2, long_text));
  }
  for (size_t budget : {0ul, 1ul, 5ul, 40ul, 200ul, 1000ul, 4000ul}) {
    const std::string s = m.Summary(10, budget);
    EXPECT_LE(s.size(), budget);
    EXPECT_TRUE(ValidUtf8(s)) << budget;
    // No section header left without its first entry.
    if (!s.empty() && s.back() != '\n') {
      const std::string last = s.substr(s.rfind('\n') == std::string::npos ? 0 : s.rfind('\n') + 1);
      EXPECT_NE(last.back(), ':') << budget << ": " << last;
    }
  }
  const std::string full = m.Summary(10);
  EXPECT_LE(full.size(), 4000u);
  EXPECT_GT(full.size(), 2000u) << "the default budget is used, not wasted";
  // Sections are capped in entries whatever the budget.
  const std::string huge = m.Summary(10, 1u << 20);
  EXPECT_LT(huge.size(), 14000u);
  EXPECT_TRUE(ValidUtf8(huge));
  size_t lines = 0;
  for (char c : huge) lines += c == '\n';
  EXPECT_LE(lines, 1u + 1 + 12 + 1 + 5 + 1 + 6 + 1 + 5);
}

TEST(SearchMemory, SummaryIsDeterministic) {
  SearchMemory a = Sample(), b = Sample();
  EXPECT_EQ(a.Summary(3), b.Summary(3));
  EXPECT_EQ(a.Summary(3), a.Summary(3));
  EXPECT_EQ(a.Summary(3, 300), b.Summary(3, 300));
}

TEST(SearchMemory, SummariesAreFlattenedToOneLine) {
  SearchMemory m;
  m.Record(Passed(1, 0, 1.5, 0.5, "line one\nline two\ttabbed"));
  const std::string s = m.Summary(0);
  EXPECT_NE(s.find("line one line two tabbed"), std::string::npos) << s;
}

}  // namespace
}  // namespace kpilot
