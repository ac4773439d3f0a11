#include <gtest/gtest.h>

#include "llm/llm.h"

namespace kpilot::llm {
namespace {

TEST(Redact, ReplacesEveryOccurrenceOfAGivenSecret) {
  EXPECT_EQ(Redact("key=abc123xyz and again abc123xyz.", {"abc123xyz"}), "key=[redacted] and again [redacted].");
}

TEST(Redact, ReplacesKeyShapedTokensItWasNotTold) {
  std::string openai = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123";
  std::string anthropic = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx-0123_xyz";
  std::string out = Redact("tried " + openai + " then " + anthropic + ".", {});
  EXPECT_EQ(out, "tried [redacted] then [redacted].");
}

TEST(Redact, LeavesOrdinaryTextAlone) {
  // Words that merely contain "sk-" or short sk- tokens are not keys.
  std::string text = "mask-load of the task-queue; flag sk-1; __shfl_sync(mask, v, 1)";
  EXPECT_EQ(Redact(text, {}), text);
  // A too-short secret would redact ordinary words; it is ignored.
  EXPECT_EQ(Redact("a b c", {"a"}), "a b c");
}

TEST(Redact, ReplacesHeaderAndFieldValues) {
  EXPECT_EQ(Redact("Authorization: Bearer tok_live_123456", {}), "Authorization: Bearer [redacted]");
  EXPECT_EQ(Redact("x-api-key: secretvalue\r\n", {}), "x-api-key: [redacted]\r\n");
  EXPECT_EQ(Redact(R"({"X-Api-Key":"secretvalue","model":"m"})", {}), R"({"X-Api-Key":"[redacted]","model":"m"})");
  EXPECT_EQ(Redact("api_key=hunter2hunter2 next", {}), "api_key=[redacted] next");
  // Escaped JSON inside JSON (a transcript of a transcript).
  EXPECT_EQ(Redact(R"("authorization: \"Bearer abcdefgh\"")", {}), R"("authorization: \"Bearer [redacted]\"")");
  // Naming the variable is not a value.
  EXPECT_EQ(Redact("set ANTHROPIC_API_KEY first", {}), "set ANTHROPIC_API_KEY first");
}

TEST(Redact, IsIdempotent) {
  std::string once = Redact("Authorization: Bearer sk-AbCdEfGhIjKlMnOpQrSt", {});
  EXPECT_EQ(Redact(once, {}), once);
  EXPECT_EQ(once.find("AbCd"), std::string::npos);
}

}  // namespace
}  // namespace kpilot::llm
