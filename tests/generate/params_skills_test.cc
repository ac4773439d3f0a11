// The `params` generator with skill cards: the offered cards' matched moves replace the built-in
// finding table, each draft names its card, a `set` move goes to its value, and --skills off
// leaves only exploration.
#include <gtest/gtest.h>

#include "generate/params_generator.h"

namespace kpilot {
namespace {

Task VecTask() {
  Task t;
  t.name = "t";
  t.backend = Backend::kCuda;
  t.params = {{"BLOCK", {"128", "256", "512"}}, {"VEC", {"1", "2", "4"}}, {"STAGES", {"1", "2", "3", "4"}}};
  return t;
}

ProposalContext Context(std::vector<OfferedSkill> skills, int k = 2, uint64_t seed = 1) {
  ProposalContext ctx;
  ctx.parent_source = "// kernel";
  ctx.parent_source_name = "kernel.cu";
  ctx.parent_params = {{"BLOCK", "256"}, {"VEC", "1"}, {"STAGES", "1"}};
  Finding f;
  f.id = "scalar-global-loads";
  f.severity = 0.8;
  f.evidence = {{"scalar_share", 0.9}};
  ctx.findings = {f};
  ctx.skills = std::move(skills);
  ctx.k = k;
  ctx.seed = seed;
  return ctx;
}

OfferedSkill Card(std::string id, std::vector<SkillMoveHint> moves) {
  OfferedSkill s;
  s.id = std::move(id);
  s.intent = "do the thing";
  s.moves = std::move(moves);
  return s;
}

TEST(ParamsSkills, TheCardsMovesReplaceTheBuiltInTable) {
  // The built-in table would move VEC up for scalar-global-loads; the card says BLOCK down.
  auto ctx = Context({Card("smaller-blocks", {{"block", "down", "", "scalar-global-loads", "matched"}})}, 1, 1);
  auto drafts = ProposeParams(VecTask(), ctx);
  ASSERT_TRUE(drafts.ok()) << drafts.status().ToString();
  ASSERT_GE(drafts->size(), 1u);
  const Draft& d = drafts->front();
  EXPECT_EQ(d.params.at("BLOCK"), "128");
  EXPECT_EQ(d.params.at("VEC"), "1");
  ASSERT_EQ(d.skills_applied.size(), 1u);
  EXPECT_EQ(d.skills_applied[0], "smaller-blocks");
  EXPECT_EQ(d.targeted_finding, "scalar-global-loads");
  EXPECT_NE(d.summary.find("card smaller-blocks"), std::string::npos) << d.summary;
}

TEST(ParamsSkills, ASetMoveGoesToItsValueAndALiteralNameWorks) {
  auto ctx = Context({Card("deep-pipeline", {{"STAGES", "set", "3", "scalar-global-loads", "matched"}})}, 1, 1);
  auto drafts = ProposeParams(VecTask(), ctx);
  ASSERT_TRUE(drafts.ok());
  ASSERT_GE(drafts->size(), 1u);
  EXPECT_EQ(drafts->front().params.at("STAGES"), "3");
  EXPECT_EQ(drafts->front().skills_applied, std::vector<std::string>{"deep-pipeline"});
}

TEST(ParamsSkills, WithoutCardsTheBuiltInTableStillSteers) {
  auto ctx = Context({}, 1, 1);
  auto drafts = ProposeParams(VecTask(), ctx);
  ASSERT_TRUE(drafts.ok());
  ASSERT_GE(drafts->size(), 1u);
  EXPECT_EQ(drafts->front().params.at("VEC"), "2") << drafts->front().summary;
  EXPECT_TRUE(drafts->front().skills_applied.empty());
}

TEST(ParamsSkills, SkillsOffLeavesOnlyExploration) {
  for (uint64_t seed = 0; seed < 6; ++seed) {
    auto ctx = Context({Card("smaller-blocks", {{"block", "down", "", "scalar-global-loads", "matched"}})}, 2, seed);
    ctx.skills_enabled = false;
    auto drafts = ProposeParams(VecTask(), ctx);
    ASSERT_TRUE(drafts.ok());
    for (const Draft& d : *drafts) {
      EXPECT_TRUE(d.skills_applied.empty());
      EXPECT_TRUE(d.targeted_finding.empty()) << d.summary;
      EXPECT_NE(d.summary.find("skills off"), std::string::npos) << d.summary;
    }
  }
}

}  // namespace
}  // namespace kpilot
