// Taking the candidate out of a model's reply.
#include <gtest/gtest.h>

#include "generate/reply.h"

namespace kpilot {
namespace {

const char* kGood = R"(#include <kpilot/kernel.h>
KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* in, int ni, const kpilot_tensor* out, int no,
                                const kpilot_scalar* s, int ns, void* stream) { return 0; }
)";

TEST(Reply, FencedBlockWithLanguageTag) {
  auto got = ExtractCandidate(std::string("Summary: unrolled by 4\nFinding: scalar-global-loads\n\n```cpp\n") + kGood +
                              "```\nDone.");
  EXPECT_EQ(got.problem, "");
  EXPECT_EQ(got.source, kGood);
  EXPECT_EQ(got.summary, "unrolled by 4");
  EXPECT_EQ(got.finding, "scalar-global-loads");
}

TEST(Reply, FencedBlockWithoutTagOrWithTildes) {
  auto plain = ExtractCandidate(std::string("Here it is.\n```\n") + kGood + "```\n");
  EXPECT_EQ(plain.source, kGood);
  EXPECT_EQ(plain.summary, "Here it is.");  // no Summary: line: the first line of prose
  auto tilde = ExtractCandidate(std::string("~~~cuda\n") + kGood + "~~~\n");
  EXPECT_EQ(tilde.source, kGood);
}

TEST(Reply, OtherLanguagesAndSnippetsAreNotTheCandidate) {
  std::string reply =
      std::string("Compile with:\n```bash\nnvcc -O3 x.cu\n```\nthe idea:\n```cpp\nfloat4 v = x[i];\n```\n```cpp\n") +
      kGood + "```\n";
  auto got = ExtractCandidate(reply);
  EXPECT_EQ(got.problem, "");
  EXPECT_EQ(got.source, kGood);
}

TEST(Reply, NoCodeIsAProblem) {
  auto got = ExtractCandidate("I would vectorize the loads and unroll the loop.");
  EXPECT_EQ(got.source, "");
  EXPECT_NE(got.problem.find("no fenced code block"), std::string::npos);
  EXPECT_NE(ExtractCandidate("```json\n{\"a\": 1}\n```").problem.find("no fenced code block"), std::string::npos);
}

TEST(Reply, SeveralFilesAreAProblem) {
  auto got = ExtractCandidate(std::string("```cpp\n") + kGood + "```\nor\n```cpp\n" + kGood + "```\n");
  EXPECT_EQ(got.source, "");
  EXPECT_NE(got.problem.find("several files"), std::string::npos);
}

TEST(Reply, AbiMismatchIsCaughtBeforeCompiling) {
  auto none = ExtractCandidate("```cpp\nint main() { return 0; }\n```\n");
  EXPECT_EQ(none.source, "");
  EXPECT_NE(none.problem.find("does not define kpilot_launch"), std::string::npos);
  auto unexported = ExtractCandidate("```cpp\nstatic int kpilot_launch(int x) { return x; }\n```\n");
  EXPECT_NE(unexported.problem.find("not exported"), std::string::npos);
  EXPECT_EQ(AbiProblem("extern \"C\" int kpilot_launch(const void*, int) { return 0; }"), "");
  EXPECT_EQ(AbiProblem("extern \"C\" {\nint kpilot_launch(const void*, int) { return 0; }\n}"), "");
}

TEST(Reply, ATruncatedBlockIsNotCode) {
  auto got = ExtractCandidate(std::string("```cpp\n") + kGood);  // the closing fence never came
  EXPECT_EQ(got.source, "");
  EXPECT_NE(got.problem.find("no fenced code block"), std::string::npos);
}

using Ids = std::vector<std::string>;

TEST(Reply, AppliedSkillsLineOutsideCodeBlocks) {
  std::string reply = std::string("Summary: float4 loads\n```cpp\n// Applied skills: in-the-code\n") + kGood +
                      "```\nApplied skills: `coalescing`, Vector-Loads-128bit.\n";
  EXPECT_EQ(AppliedSkillsLine(reply), Ids({"coalescing", "vector-loads-128bit"}));
  EXPECT_EQ(AppliedSkillsLine("**Applied skills:** none\n"), Ids{});
  EXPECT_EQ(AppliedSkillsLine("- **Applied skills**: split-k split-k\n"), Ids{"split-k"});
  EXPECT_EQ(AppliedSkillsLine("Applied skills: a\nApplied skills: b, c\n"), Ids({"b", "c"})) << "the last line counts";
  EXPECT_EQ(AppliedSkillsLine("Summary: x\n"), std::nullopt);
  EXPECT_EQ(AppliedSkillsLine("```\nApplied skills: coalescing\n```\n"), std::nullopt) << "inside a code block";
}

TEST(Reply, AppliedSkillsFileAndFiltering) {
  EXPECT_EQ(SkillIdList("coalescing\n# a comment\n\nsplit-k, block-reduction  # trailing\nnone\n"),
            Ids({"coalescing", "split-k", "block-reduction"}));
  AppliedSkills a = FilterAppliedSkills({"split-k", "made-up", "coalescing", "split-k"}, {"coalescing", "split-k"});
  EXPECT_EQ(a.kept, Ids({"split-k", "coalescing"}));
  EXPECT_EQ(a.dropped, Ids{"made-up"});
  EXPECT_EQ(FilterAppliedSkills({"coalescing"}, {}).kept, Ids{}) << "nothing offered, nothing applied";
  EXPECT_EQ(DroppedSkillsNote(a.dropped), " [skill ids not offered, ignored: made-up]");
  EXPECT_EQ(DroppedSkillsNote({}), "");
}

}  // namespace
}  // namespace kpilot
