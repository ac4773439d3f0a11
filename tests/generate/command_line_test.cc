// Splitting a generator's command line into argv: shell word rules, nothing expanded.
#include <gtest/gtest.h>

#include "generate/command_line.h"

namespace kpilot {
namespace {

std::vector<std::string> Split(const std::string& s) {
  auto r = SplitCommandLine(s);
  EXPECT_TRUE(r.ok()) << s << ": " << r.status().ToString();
  return r.ok() ? *r : std::vector<std::string>{};
}

TEST(CommandLine, BlanksSeparateWords) {
  EXPECT_EQ(Split("codex exec --full-auto -"), (std::vector<std::string>{"codex", "exec", "--full-auto", "-"}));
  EXPECT_EQ(Split("  a\t b \n c  "), (std::vector<std::string>{"a", "b", "c"}));
}

TEST(CommandLine, QuotesKeepBlanksAndJoinAdjacentParts) {
  EXPECT_EQ(Split("claude -p 'write the kernel' --model \"opus 4\""),
            (std::vector<std::string>{"claude", "-p", "write the kernel", "--model", "opus 4"}));
  EXPECT_EQ(Split("a'b c'\"d\"e"), (std::vector<std::string>{"ab cde"}));
  EXPECT_EQ(Split("x '' \"\" y"), (std::vector<std::string>{"x", "", "", "y"}));
}

TEST(CommandLine, BackslashesFollowShellRules) {
  EXPECT_EQ(Split(R"(a\ b c\\d)"), (std::vector<std::string>{"a b", "c\\d"}));
  EXPECT_EQ(Split(R"('it\s' "q\"uote" "keep\n")"), (std::vector<std::string>{"it\\s", "q\"uote", "keep\\n"}));
  EXPECT_EQ(Split("one \\\ntwo"), (std::vector<std::string>{"one", "two"}));
  EXPECT_EQ(Split(R"(\'x)"), (std::vector<std::string>{"'x"}));
}

TEST(CommandLine, NothingIsExpanded) {
  EXPECT_EQ(Split("echo $HOME ~ *.cu `id` $(id) \"$PATH\" ; | &&"),
            (std::vector<std::string>{"echo", "$HOME", "~", "*.cu", "`id`", "$(id)", "$PATH", ";", "|", "&&"}));
}

TEST(CommandLine, UnterminatedQuotesAndTrailingBackslashAreErrors) {
  for (const char* bad : {"codex 'exec", "codex \"exec", "codex \"a\\\"", "codex exec\\", "", "   "}) {
    auto r = SplitCommandLine(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput) << bad;
  }
  EXPECT_NE(SplitCommandLine("codex 'exec").status().message().find("unterminated single quote at byte 6"),
            std::string::npos);
}

TEST(CommandLine, JoinQuotesOnlyWhatNeedsIt) {
  EXPECT_EQ(JoinCommandLine({"codex", "exec", "a b", "it's", ""}), "codex exec 'a b' 'it'\\''s' ''");
  auto round = SplitCommandLine(JoinCommandLine({"a b", "it's", "$X", ""}));
  ASSERT_TRUE(round.ok());
  EXPECT_EQ(*round, (std::vector<std::string>{"a b", "it's", "$X", ""}));
}

}  // namespace
}  // namespace kpilot
