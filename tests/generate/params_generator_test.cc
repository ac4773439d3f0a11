// The `params` generator: finding → move mapping, param roles, moves in a direction, anticipated
// configs and constraint errors, on constructed tasks.
#include <gtest/gtest.h>

#include "params_test_helpers.h"

namespace kpilot {
namespace {

using namespace testing_params;

TEST(ClassifyParam, NamesMapToRoles) {
  EXPECT_EQ(ClassifyParam("VEC"), ParamRole::kVector);
  EXPECT_EQ(ClassifyParam("vector_width"), ParamRole::kVector);
  EXPECT_EQ(ClassifyParam("TILE_WIDTH"), ParamRole::kTile);
  EXPECT_EQ(ClassifyParam("MIN_BLOCKS"), ParamRole::kMinBlocks);
  EXPECT_EQ(ClassifyParam("ROWS_PER_BLOCK"), ParamRole::kWorkPerBlock);
  EXPECT_EQ(ClassifyParam("ROWS_PER_CHUNK"), ParamRole::kWorkPerBlock);
  EXPECT_EQ(ClassifyParam("CHUNK"), ParamRole::kWorkPerBlock);
  EXPECT_EQ(ClassifyParam("BLOCK_ROWS"), ParamRole::kBlock);
  EXPECT_EQ(ClassifyParam("BLOCK"), ParamRole::kBlock);
  EXPECT_EQ(ClassifyParam("BLOCK_SIZE"), ParamRole::kBlock);
  EXPECT_EQ(ClassifyParam("WARPS_M"), ParamRole::kBlock);
  EXPECT_EQ(ClassifyParam("WAVES"), ParamRole::kGrid);
  EXPECT_EQ(ClassifyParam("NUM_BLOCKS"), ParamRole::kGrid);
  EXPECT_EQ(ClassifyParam("TILE_K"), ParamRole::kTileK);
  EXPECT_EQ(ClassifyParam("BK"), ParamRole::kTileK);
  EXPECT_EQ(ClassifyParam("BLOCK_K"), ParamRole::kTileK);
  EXPECT_EQ(ClassifyParam("TILE"), ParamRole::kTile);
  EXPECT_EQ(ClassifyParam("TILE_M"), ParamRole::kTile);
  EXPECT_EQ(ClassifyParam("bn"), ParamRole::kTile);
  EXPECT_EQ(ClassifyParam("TN"), ParamRole::kRegisterTile);
  EXPECT_EQ(ClassifyParam("tm"), ParamRole::kRegisterTile);
  EXPECT_EQ(ClassifyParam("REG_TILE"), ParamRole::kRegisterTile);
  EXPECT_EQ(ClassifyParam("THREAD_TILE_M"), ParamRole::kRegisterTile);
  EXPECT_EQ(ClassifyParam("STAGES"), ParamRole::kStages);
  EXPECT_EQ(ClassifyParam("UNROLL"), ParamRole::kUnroll);
  EXPECT_EQ(ClassifyParam("ALPHA"), ParamRole::kOther);
}

struct MappingCase {
  std::string name;
  Finding finding;
  std::string param;      // the param the first draft must change
  std::string new_value;  // to this value
};

class Mapping : public ::testing::TestWithParam<MappingCase> {};

TEST_P(Mapping, FirstDraftMovesTheMappedParam) {
  const MappingCase& c = GetParam();
  auto drafts = Propose(GemmLikeTask(), MakeContext(kGemmParent, {c.finding}));
  ASSERT_EQ(drafts.size(), 1u);
  EXPECT_EQ(Changed(GemmLikeTask(), kGemmParent, drafts[0]), c.param) << drafts[0].summary;
  EXPECT_EQ(drafts[0].params.at(c.param), c.new_value);
  EXPECT_EQ(drafts[0].targeted_finding, c.finding.id);
  EXPECT_EQ(drafts[0].summary.rfind(c.param + " " + kGemmParent.at(c.param) + "\u2192" + c.new_value, 0), 0u)
      << drafts[0].summary;
  EXPECT_NE(drafts[0].summary.find(c.finding.id), std::string::npos);
  EXPECT_EQ(drafts[0].source, "// kernel");
  EXPECT_EQ(drafts[0].source_name, "kernel.cu");
}

INSTANTIATE_TEST_SUITE_P(
    Findings, Mapping,
    ::testing::Values(
        MappingCase{"scalar_loads", MakeFinding("scalar-global-loads", {{"scalar_load_share", 1.0}}), "VEC", "4"},
        MappingCase{"uncoalesced", MakeFinding("uncoalesced-global-access"), "VEC", "4"},
        MappingCase{"spills", MakeFinding("register-spills"), "TM", "4"},
        MappingCase{"high_regs", MakeFinding("high-register-count"), "TM", "4"},
        MappingCase{"occ_registers", MakeFinding("occupancy-limiter", {{"limiter", "registers"}}), "TM", "4"},
        MappingCase{"stall_mio", MakeFinding("dominant-warp-stall", {{"dominant_reason", "mio_throttle"}}), "VEC", "4"},
        MappingCase{"occ_shared", MakeFinding("occupancy-limiter", {{"limiter", "shared_memory"}}), "STAGES", "2"},
        MappingCase{
            "stall_long_scoreboard",
            MakeFinding("dominant-warp-stall", {{"dominant_reason", "long_scoreboard"}, {"dominant_share", 0.6}}),
            "STAGES", "4"},
        MappingCase{"stall_in_guidance",
                    [] {
                      Finding f = MakeFinding("dominant-warp-stall");
                      f.guidance = "Warps spend 60% of stalls in long_scoreboard, then barrier.";
                      return f;
                    }(),
                    "STAGES", "4"},
        MappingCase{"low_cache_hit", MakeFinding("low-cache-hit-rate"), "BM", "256"}),
    [](const auto& param_info) { return param_info.param.name; });

TEST(ParamsGenerator, RegisterFindingsListEveryMoveInOrder) {
  // Spills: the register tile down, unroll down, launch-bounds minimum down (a higher one would
  // spill more); no role has a second param, so the other slots explore. k = 7 with an odd seed:
  // (7 + 1) / 2 = 4 finding slots. The block tile BM is not a register move.
  auto spills = Propose(GemmLikeTask(), MakeContext(kGemmParent, {MakeFinding("register-spills")}, 7));
  ASSERT_EQ(spills.size(), 7u);
  EXPECT_EQ(spills[0].params.at("TM"), "4");
  EXPECT_EQ(spills[1].params.at("UNROLL"), "1");
  EXPECT_EQ(spills[2].params.at("MIN_BLOCKS"), "1");
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(spills[i].targeted_finding, "register-spills");
  for (size_t i = 3; i < spills.size(); ++i) EXPECT_EQ(spills[i].targeted_finding, "");  // exploration
  // High register count: the register tile down, launch-bounds minimum up, unroll down.
  auto regs = Propose(GemmLikeTask(), MakeContext(kGemmParent, {MakeFinding("high-register-count")}, 6));
  ASSERT_EQ(regs.size(), 6u);
  EXPECT_EQ(regs[0].params.at("TM"), "4");
  EXPECT_EQ(regs[1].params.at("MIN_BLOCKS"), "3");
  EXPECT_EQ(regs[2].params.at("UNROLL"), "1");
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(regs[i].targeted_finding, "high-register-count");
  // Occupancy limited by shared memory: stages down, then the K tile down.
  auto shared = Propose(
      GemmLikeTask(), MakeContext(kGemmParent, {MakeFinding("occupancy-limiter", {{"limiter", "shared_memory"}})}, 4));
  ASSERT_EQ(shared.size(), 4u);
  EXPECT_EQ(shared[1].params.at("BK"), "16");
}

TEST(ParamsGenerator, TailEffectShrinksBlocksOrAddsWaves) {
  Task task = MakeTask({{"BLOCK", {"128", "256", "512"}}, {"WAVES", {"1", "2", "4"}}, {"VEC", {"1", "2"}}});
  ParamValues parent = {{"BLOCK", "256"}, {"WAVES", "2"}, {"VEC", "1"}};
  auto drafts = Propose(task, MakeContext(parent, {MakeFinding("tail-effect", {{"partial_wave", 0.12}})}, 4));
  ASSERT_EQ(drafts.size(), 4u);
  EXPECT_EQ(drafts[0].params.at("BLOCK"), "128");
  EXPECT_EQ(
      drafts[0].summary.rfind("BLOCK 256\u2192128: tail-effect says the last wave is 12% full; smaller blocks fill", 0),
      0u)
      << drafts[0].summary;
  EXPECT_EQ(drafts[1].params.at("WAVES"), "4");
}

TEST(ParamsGenerator, LaunchOverheadGivesEachBlockMoreWork) {
  Task task = MakeTask({{"BLOCK", {"64", "128"}}, {"ROWS_PER_BLOCK", {"1", "2", "4"}}});
  auto drafts =
      Propose(task, MakeContext({{"BLOCK", "128"}, {"ROWS_PER_BLOCK", "2"}}, {MakeFinding("launch-overhead")}));
  ASSERT_EQ(drafts.size(), 1u);
  EXPECT_EQ(drafts[0].params.at("ROWS_PER_BLOCK"), "4");
  EXPECT_EQ(drafts[0].params.at("BLOCK"), "128");
}

TEST(ParamsGenerator, DramNearPeakSaysParamsCannotFixItAndExplores) {
  auto drafts = Propose(
      GemmLikeTask(),
      MakeContext(kGemmParent,
                  {MakeFinding("dram-near-peak", {{"dram__throughput.avg.pct_of_peak_sustained_elapsed", 93.0}})}));
  ASSERT_EQ(drafts.size(), 1u);
  EXPECT_EQ(drafts[0].targeted_finding, "");
  EXPECT_NE(drafts[0].summary.find("params cannot fix"), std::string::npos) << drafts[0].summary;
  EXPECT_NE(drafts[0].summary.find("DRAM at 93% of peak"), std::string::npos) << drafts[0].summary;
}

TEST(ParamsGenerator, ComputeBoundWithoutFindingsGrowsTheRegisterTile) {
  ParamValues parent = kGemmParent;
  parent["TM"] = "4";
  ProposalContext ctx = MakeContext(parent, {});
  ctx.bottleneck = "compute-bound";
  auto drafts = Propose(GemmLikeTask(), ctx);
  ASSERT_EQ(drafts.size(), 1u);
  EXPECT_EQ(Changed(GemmLikeTask(), parent, drafts[0]), "TM");
  EXPECT_EQ(drafts[0].params.at("TM"), "8");
}

// Without a register-tile param the block tile holds the accumulators, so the register moves
// fall back to it.
TEST(ParamsGenerator, RegisterMovesFallBackToTheBlockTileWithoutARegisterTile) {
  Task task = MakeTask({{"BM", {"64", "128", "256"}}, {"BK", {"16", "32"}}, {"UNROLL", {"1", "2"}}});
  ParamValues parent = {{"BM", "128"}, {"BK", "16"}, {"UNROLL", "2"}};
  ProposalContext ctx = MakeContext(parent, {});
  ctx.bottleneck = "compute-bound";
  auto grow = Propose(task, ctx);
  ASSERT_EQ(grow.size(), 1u);
  EXPECT_EQ(grow[0].params.at("BM"), "256") << grow[0].summary;
  auto shrink = Propose(task, MakeContext(parent, {MakeFinding("high-register-count")}));
  ASSERT_EQ(shrink.size(), 1u);
  EXPECT_EQ(shrink[0].params.at("BM"), "64") << shrink[0].summary;
  EXPECT_EQ(shrink[0].targeted_finding, "high-register-count");
}

TEST(ParamsGenerator, FindingsAreFollowedInRankOrder) {
  auto drafts =
      Propose(GemmLikeTask(), MakeContext(kGemmParent,
                                          {MakeFinding("scalar-global-loads", {}, 0.9),
                                           MakeFinding("occupancy-limiter", {{"limiter", "shared_memory"}}, 0.4)},
                                          4));
  ASSERT_EQ(drafts.size(), 4u);
  EXPECT_EQ(drafts[0].targeted_finding, "scalar-global-loads");
  EXPECT_EQ(drafts[1].targeted_finding, "occupancy-limiter");
}

TEST(ParamsGenerator, MoveSkipsInvalidAndTriedValuesInItsDirection) {
  Task task = MakeTask({{"VEC", {"1", "2", "4", "8"}}, {"BLOCK", {"128", "256"}}}, {"VEC != 2"});
  ParamValues parent = {{"VEC", "1"}, {"BLOCK", "128"}};
  ProposalContext ctx = MakeContext(parent, {MakeFinding("scalar-global-loads")});
  auto first = Propose(task, ctx);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].params.at("VEC"), "4");  // 2 breaks the constraint
  ctx.tried_params.push_back(first[0].params);
  auto second = Propose(task, ctx);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].params.at("VEC"), "8");
  EXPECT_EQ(second[0].targeted_finding, "scalar-global-loads");
}

// Anticipate: the configs one param away from the parent, nearest first (one step along every
// param in declaration order, then two), valid ones only, the parent excluded, at most `cap`.
TEST(AnticipateParams, ListsOneParamChangesNearestFirstWithinTheConstraints) {
  Task task = MakeTask({{"VEC", {"1", "2", "4", "8"}}, {"BLOCK", {"64", "128", "256"}}}, {"VEC != 4"});
  const std::vector<ParamValues> want = {{{"VEC", "1"}, {"BLOCK", "64"}},
                                         {{"VEC", "2"}, {"BLOCK", "128"}},
                                         {{"VEC", "8"}, {"BLOCK", "64"}},
                                         {{"VEC", "2"}, {"BLOCK", "256"}}};
  EXPECT_EQ(AnticipateParams(task, {{"VEC", "2"}}, 100), want) << "BLOCK unset: its first value";
  EXPECT_EQ(AnticipateParams(task, {{"VEC", "2"}}, 3), std::vector<ParamValues>(want.begin(), want.begin() + 3));
  // A value the param does not declare cannot be stepped; the others still are.
  EXPECT_EQ(AnticipateParams(task, {{"VEC", "3"}, {"BLOCK", "256"}}, 100),
            (std::vector<ParamValues>{{{"VEC", "3"}, {"BLOCK", "128"}}, {{"VEC", "3"}, {"BLOCK", "64"}}}));
  EXPECT_TRUE(AnticipateParams(MakeTask({}), {}, 100).empty());
}

// What it is for: the findings' moves and one-param exploration steps a later Propose makes from
// the same parent are among the anticipated configs.
TEST(AnticipateParams, CoversTheDraftsThatChangeOneParam) {
  const Task& task = GemmLikeTask();
  auto anticipated = AnticipateParams(task, kGemmParent, 1000);
  std::set<ParamValues> set(anticipated.begin(), anticipated.end());
  EXPECT_EQ(set.size(), anticipated.size());
  EXPECT_EQ(set.count(kGemmParent), 0u);
  const std::vector<std::vector<Finding>> findings = {
      {}, {MakeFinding("scalar-global-loads")}, {MakeFinding("tail-effect")}, {MakeFinding("launch-overhead")}};
  int targeted = 0, one_param = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed)
    for (const auto& f : findings)
      for (const Draft& d : Propose(task, MakeContext(kGemmParent, f, 4, seed))) {
        if (!d.targeted_finding.empty()) {
          ++targeted;
          EXPECT_FALSE(Changed(task, kGemmParent, d).empty()) << "a finding's move changes one param: " << d.summary;
        }
        if (Changed(task, kGemmParent, d).empty()) continue;
        ++one_param;
        EXPECT_EQ(set.count(d.params), 1u) << d.summary;
      }
  // With no history, exploration drafts are mostly space-filling picks that change several
  // params: those are not anticipated.
  EXPECT_GE(targeted, 20) << "the findings' moves were made";
  EXPECT_GE(one_param, targeted);
}

TEST(ParamsGenerator, UnsetParentParamsTakeTheirFirstValue) {
  Task task = MakeTask({{"BLOCK", {"128", "256"}}, {"VEC", {"1", "2", "4"}}});
  ProposalContext ctx = MakeContext({}, {MakeFinding("scalar-global-loads")});
  ctx.tried_params = {{}};  // the defaults, evaluated as the root
  auto drafts = Propose(task, ctx);
  ASSERT_EQ(drafts.size(), 1u);
  EXPECT_EQ(drafts[0].params, (ParamValues{{"BLOCK", "128"}, {"VEC", "2"}}));
  EXPECT_EQ(drafts[0].summary.rfind("VEC 1\u21922", 0), 0u) << drafts[0].summary;
}

TEST(ParamsGenerator, ConstraintErrorsAreReported) {
  Task task = MakeTask({{"MODE", {"fast", "exact"}}}, {"MODE > 1"});
  auto r = ProposeParams(task, MakeContext({}, {}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("MODE"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace kpilot
