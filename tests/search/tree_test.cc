#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <map>
#include <set>

#include "search/tree.h"

namespace kpilot {
namespace {

Outcome Pass(double speedup, std::string summary = "") {
  Outcome o;
  o.passed = true;
  o.speedup = speedup;
  o.summary = std::move(summary);
  return o;
}

Outcome Fail() { return Outcome{}; }

// Explicit constants, so these tests pin the rules rather than the tuned defaults.
SearchConfig Config(Policy policy = Policy::kMcts) {
  SearchConfig c;
  c.policy = policy;
  c.exploration = 1.0;
  c.widen_c = 1.5;
  c.widen_alpha = 0.5;
  c.asymmetry = 1.0;
  c.failure_reward = -2.3;
  c.prune_window = 3;
  c.regress_margin = 0.0;
  c.beam_width = 3;
  return c;
}

TEST(Policy, NamesRoundTrip) {
  for (Policy p : {Policy::kMcts, Policy::kGreedy, Policy::kBeam, Policy::kRandom})
    EXPECT_EQ(ParsePolicy(PolicyName(p)), p);
  EXPECT_EQ(PolicyName(Policy::kMcts), "mcts");
  EXPECT_EQ(ParsePolicy("MCTS"), std::nullopt);
  EXPECT_EQ(ParsePolicy("best-first"), std::nullopt);
}

TEST(SearchConstants, AreSetByNameWithinTheirRanges) {
  SearchConfig c;
  EXPECT_EQ(SetSearchConstant("widen_alpha", "0.5", &c), "");
  EXPECT_DOUBLE_EQ(c.widen_alpha, 0.5);
  EXPECT_EQ(SetSearchConstant("prune_window", "6", &c), "");
  EXPECT_EQ(c.prune_window, 6);
  EXPECT_EQ(SetSearchConstant("exploration", "0", &c), "");
  EXPECT_DOUBLE_EQ(c.exploration, 0);
  EXPECT_NE(SetSearchConstant("prune_window", "2.5", &c).find("a whole number from 0 to 1000"), std::string::npos);
  EXPECT_NE(SetSearchConstant("widen_alpha", "1.5", &c).find("from 0 to 1"), std::string::npos);
  EXPECT_NE(SetSearchConstant("failure_reward", "0", &c).find("from -100 to -0.01"), std::string::npos);
  EXPECT_NE(SetSearchConstant("exploration", "lots", &c).find("expected a number"), std::string::npos);
  EXPECT_NE(SetSearchConstant("exploration", "", &c).find("expected a number"), std::string::npos);
  std::string unknown = SetSearchConstant("widening", "1", &c);
  EXPECT_NE(unknown.find("unknown search constant \"widening\""), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("widen_c, widen_alpha"), std::string::npos) << unknown;
  EXPECT_DOUBLE_EQ(c.widen_alpha, 0.5) << "a refused value leaves the constant as it was";
  EXPECT_EQ(c.prune_window, 6);
}

TEST(SearchTree, RewardIsLogSpeedupWithAFloorForFailures) {
  SearchTree t(Config());
  t.AddRoot(Pass(1.0));
  EXPECT_DOUBLE_EQ(t.node(0).reward, 0);
  EXPECT_NEAR(t.node(t.AddChild(0, Pass(2.0))).reward, std::log(2.0), 1e-12);
  EXPECT_DOUBLE_EQ(t.node(t.AddChild(0, Fail())).reward, -2.3);
  // A passed candidate never ranks below a failed one, however slow.
  EXPECT_DOUBLE_EQ(t.node(t.AddChild(0, Pass(0.001))).reward, -2.3);
  EXPECT_DOUBLE_EQ(t.node(t.AddChild(0, Pass(0.0))).reward, -2.3);
}

TEST(SearchTree, BackupCountsVisitsAndSumsRewardsAlongThePath) {
  SearchTree t(Config());
  t.AddRoot(Pass(1.0));
  const int64_t a = t.AddChild(0, Pass(2.0));
  const int64_t b = t.AddChild(a, Pass(4.0));
  const int64_t c = t.AddChild(0, Fail());
  EXPECT_EQ(t.node(b).depth, 2);
  EXPECT_EQ(t.node(b).parent, a);
  EXPECT_EQ(t.node(0).visits, 4);
  EXPECT_EQ(t.node(a).visits, 2);
  EXPECT_EQ(t.node(b).visits, 1);
  EXPECT_EQ(t.node(c).visits, 1);
  EXPECT_NEAR(t.node(a).value_sum, std::log(2.0) + std::log(4.0), 1e-12);
  EXPECT_NEAR(t.node(0).value_sum, std::log(8.0) - 2.3, 1e-12);
  EXPECT_EQ(t.node(0).children, (std::vector<int64_t>{a, c}));
}

TEST(SearchTree, ProgressiveWideningGrowsWithTheSquareRootOfVisits) {
  SearchTree t(Config());
  t.AddRoot(Pass(1.0));
  // ⌈1.5·√N⌉ for the root (its own reward stands for its parent's: no gain).
  EXPECT_EQ(t.ChildLimit(0), 2);  // N=1: ⌈1.5⌉
  t.AddChild(0, Pass(1.0));
  EXPECT_EQ(t.ChildLimit(0), 3);  // N=2: ⌈2.12⌉
  t.AddChild(0, Pass(1.0));
  EXPECT_EQ(t.ChildLimit(0), 3);  // N=3: ⌈2.60⌉
  t.AddChild(0, Pass(1.0));
  EXPECT_EQ(t.ChildLimit(0), 3);  // N=4: ⌈3.0⌉
  EXPECT_FALSE(t.MayExpand(0));
  t.AddChild(1, Pass(1.0));
  EXPECT_EQ(t.ChildLimit(0), 4);  // N=5: ⌈3.35⌉
  EXPECT_TRUE(t.MayExpand(0));
}

TEST(SearchTree, AsymmetricBranchingGivesImprovementsMoreChildren) {
  SearchTree t(Config());
  t.AddRoot(Pass(1.0));
  const int64_t better = t.AddChild(0, Pass(std::exp(0.6)));  // gain 0.6 over the root
  const int64_t much = t.AddChild(0, Pass(std::exp(2.0)));    // gain 2
  const int64_t worse = t.AddChild(0, Pass(0.5));
  const int64_t failed = t.AddChild(0, Fail());
  EXPECT_EQ(t.ChildLimit(better), 3);  // ⌈1.5·1·(1+0.6)⌉ = ⌈2.4⌉
  EXPECT_EQ(t.ChildLimit(much), 5);    // ⌈1.5·1·(1+2)⌉ = ⌈4.5⌉
  EXPECT_EQ(t.ChildLimit(worse), 2);   // no gain: ⌈1.5⌉
  EXPECT_EQ(t.ChildLimit(failed), 2);
  // The gain is measured against the node's own parent.
  const int64_t grandchild = t.AddChild(much, Pass(std::exp(2.5)));
  EXPECT_EQ(t.ChildLimit(grandchild), 3);  // ⌈1.5·(1+0.5)⌉ = ⌈2.25⌉
}

TEST(SearchTree, BaselinePoliciesIgnoreWideningButRespectClosure) {
  for (Policy p : {Policy::kGreedy, Policy::kBeam, Policy::kRandom}) {
    SearchTree t(Config(p));
    t.AddRoot(Pass(1.0));
    for (int i = 0; i < 20; ++i) t.AddChild(0, Pass(1.5));
    EXPECT_EQ(t.ChildLimit(0), INT_MAX) << PolicyName(p);
    EXPECT_TRUE(t.MayExpand(0));
    t.Close(0, "generator exhausted");
    EXPECT_FALSE(t.MayExpand(0));
    EXPECT_EQ(t.node(0).closed_reason, "generator exhausted");
  }
}

TEST(SearchTree, PrunesAfterWindowOfFailuresOrRegressionsAndNotBefore) {
  SearchTree t(Config());  // prune_window 3
  t.AddRoot(Pass(1.0));
  const int64_t a = t.AddChild(0, Pass(2.0));
  t.AddChild(a, Fail());
  t.AddChild(a, Pass(1.5));  // regressed
  EXPECT_FALSE(t.node(a).closed) << "two of a window of three";
  t.AddChild(a, Pass(2.0));  // equal to the parent: regressed (margin 0)
  EXPECT_TRUE(t.node(a).closed);
  EXPECT_NE(t.node(a).closed_reason.find("dead end"), std::string::npos);
  EXPECT_NE(t.node(a).closed_reason.find("1 failed, 2 regressed"), std::string::npos) << t.node(a).closed_reason;
}

TEST(SearchTree, AnImprovementInsideTheWindowKeepsTheNodeOpen) {
  SearchTree t(Config(Policy::kGreedy));
  t.AddRoot(Pass(1.0));
  const int64_t a = t.AddChild(0, Pass(2.0));
  t.AddChild(a, Fail());
  t.AddChild(a, Pass(3.0));
  t.AddChild(a, Fail());
  t.AddChild(a, Fail());
  EXPECT_FALSE(t.node(a).closed);  // the window still holds the improvement
  t.AddChild(a, Fail());
  EXPECT_TRUE(t.node(a).closed);
  EXPECT_NE(t.node(a).closed_reason.find("failed"), std::string::npos);
}

TEST(SearchTree, RegressMarginWidensWhatCountsAsRegression) {
  SearchConfig c = Config(Policy::kGreedy);
  c.regress_margin = 0.1;
  SearchTree t(c);
  t.AddRoot(Pass(1.0));
  const int64_t a = t.AddChild(0, Pass(2.0));
  for (int i = 0; i < 3; ++i) t.AddChild(a, Pass(2.1));  // +4.8%: within the margin
  EXPECT_TRUE(t.node(a).closed);
}

TEST(SearchTree, RootIsPrunedOnlyOnceSomethingBeatsIt) {
  SearchTree t(Config(Policy::kGreedy));
  t.AddRoot(Pass(1.0));
  for (int i = 0; i < 10; ++i) t.AddChild(0, Fail());
  EXPECT_FALSE(t.node(0).closed);
  const int64_t good = t.AddChild(0, Pass(1.2));
  for (int i = 0; i < 2; ++i) t.AddChild(0, Fail());
  EXPECT_FALSE(t.node(0).closed);  // the window still holds the improvement
  t.AddChild(0, Fail());
  EXPECT_TRUE(t.node(0).closed);
  EXPECT_EQ(t.Best(), good);
}

TEST(SearchTree, FortyThreeFailuresFromTheRootDoNotEndTheSearch) {
  // KernelPro: one task needed 43 failures in a row before its first working kernel.
  for (Policy p : {Policy::kMcts, Policy::kGreedy, Policy::kBeam, Policy::kRandom}) {
    SearchConfig c;  // the shipped defaults
    c.policy = p;
    SearchTree t(c);
    t.AddRoot(Pass(1.0));
    std::mt19937_64 rng(7);
    for (int i = 0; i < 43; ++i) {
      std::optional<int64_t> id = t.Select(rng);
      ASSERT_TRUE(id.has_value()) << PolicyName(p) << " gave up after " << i << " failures";
      t.AddChild(*id, Fail());
    }
    EXPECT_FALSE(t.node(0).closed) << PolicyName(p);
    EXPECT_EQ(t.Best(), 0);
    std::optional<int64_t> id = t.Select(rng);
    ASSERT_TRUE(id.has_value()) << PolicyName(p);
    const int64_t first = t.AddChild(*id, Pass(1.3));
    EXPECT_EQ(t.Best(), first) << PolicyName(p);
    // The first working kernel is picked up: it is expanded within the next ten selections.
    bool expanded = false;
    for (int i = 0; i < 10 && !expanded; ++i) {
      std::optional<int64_t> next = t.Select(rng);
      ASSERT_TRUE(next.has_value());
      expanded = *next == first;
      t.AddChild(*next, Fail());
    }
    if (p != Policy::kRandom) {
      EXPECT_TRUE(expanded) << PolicyName(p);
    }
  }
}

TEST(SearchTree, FailedRootSurvivesToo) {
  SearchTree t(Config());
  t.AddRoot(Fail());
  std::mt19937_64 rng(1);
  for (int i = 0; i < 43; ++i) {
    std::optional<int64_t> id = t.Select(rng);
    ASSERT_TRUE(id.has_value()) << i;
    t.AddChild(*id, Fail());
  }
  EXPECT_FALSE(t.node(0).closed);
}

TEST(SearchTree, ClosedSubtreesAreSkipped) {
  SearchConfig c = Config();
  c.widen_c = 2;
  c.widen_alpha = 0;  // every node: at most 2 children
  c.asymmetry = 0;
  c.prune_window = 0;
  SearchTree t(c);
  t.AddRoot(Pass(1.0));
  const int64_t a = t.AddChild(0, Pass(3.0));
  const int64_t b = t.AddChild(0, Pass(1.1));
  std::mt19937_64 rng(0);
  EXPECT_EQ(t.Select(rng), a);  // root full: UCT prefers the better child
  t.Close(a, "no more drafts");
  EXPECT_FALSE(t.SubtreeOpen(a));
  EXPECT_EQ(t.Select(rng), b);
  // A closed node with an open child stays reachable: the descent passes through it.
  SearchTree u(c);
  u.AddRoot(Pass(1.0));
  const int64_t x = u.AddChild(0, Pass(3.0));
  const int64_t y = u.AddChild(0, Pass(1.1));
  const int64_t x1 = u.AddChild(x, Pass(3.5));
  u.Close(x, "no more drafts");
  EXPECT_TRUE(u.SubtreeOpen(x));
  EXPECT_EQ(u.Select(rng), x1);
  u.Close(x1, "no more drafts");
  EXPECT_EQ(u.Select(rng), y);
  u.Close(y, "no more drafts");
  EXPECT_EQ(u.Select(rng), std::nullopt);
  EXPECT_FALSE(u.SubtreeOpen(0));
}

TEST(SearchTree, ClosureExcludesNodesForEveryPolicy) {
  for (Policy p : {Policy::kMcts, Policy::kGreedy, Policy::kBeam, Policy::kRandom}) {
    SearchTree t(Config(p));
    t.AddRoot(Pass(1.0));
    const int64_t a = t.AddChild(0, Pass(2.0));
    t.AddChild(0, Pass(1.5));
    t.Close(0, "done");
    t.Close(a, "done");
    std::mt19937_64 rng(3);
    for (int i = 0; i < 20; ++i) EXPECT_EQ(t.Select(rng), 2) << PolicyName(p);
  }
}

TEST(SearchTree, UctTakesTheUnvisitedSlotFirstThenBalances) {
  SearchConfig c = Config();
  c.widen_c = 2;
  c.widen_alpha = 0;
  c.asymmetry = 0;
  c.prune_window = 0;
  SearchTree t(c);
  t.AddRoot(Pass(1.0));
  std::mt19937_64 rng(0);
  // The root has room: its next (unvisited) child beats descending.
  EXPECT_EQ(t.Select(rng), 0);
  const int64_t a = t.AddChild(0, Pass(1.0));
  EXPECT_EQ(t.Select(rng), 0);
  const int64_t b = t.AddChild(0, Pass(1.0));
  // Full root, equal children: the tie goes to the lowest id.
  EXPECT_EQ(t.Select(rng), a);
  // Equal rewards everywhere: visits stay balanced between the two subtrees.
  for (int i = 0; i < 40; ++i) {
    std::optional<int64_t> id = t.Select(rng);
    ASSERT_TRUE(id.has_value());
    t.AddChild(*id, Pass(1.0));
    EXPECT_LE(std::abs(t.node(a).visits - t.node(b).visits), 1) << "after " << i;
  }
}

TEST(SearchTree, UctSpendsMoreOnTheBetterSubtreeButStillExplores) {
  SearchConfig c = Config();
  c.widen_c = 2;
  c.widen_alpha = 0;
  c.asymmetry = 0;
  c.prune_window = 0;
  SearchTree t(c);
  t.AddRoot(Pass(1.0));
  const int64_t a = t.AddChild(0, Pass(1.5));
  const int64_t b = t.AddChild(0, Pass(1.0));
  std::mt19937_64 rng(0);
  for (int i = 0; i < 60; ++i) {
    std::optional<int64_t> id = t.Select(rng);
    ASSERT_TRUE(id.has_value());
    // Children inherit their subtree's quality.
    bool under_a = false;
    for (int64_t n = *id; n >= 0; n = t.node(n).parent) under_a |= n == a;
    t.AddChild(*id, Pass(under_a ? 1.5 : 1.0));
  }
  EXPECT_GT(t.node(a).visits, 2 * t.node(b).visits);
  EXPECT_GT(t.node(b).visits, 3);
}

TEST(SearchTree, GreedyPicksTheBestExpandableNode) {
  SearchTree t(Config(Policy::kGreedy));
  t.AddRoot(Pass(1.0));
  const int64_t a = t.AddChild(0, Pass(1.5));
  const int64_t b = t.AddChild(0, Pass(2.5));
  const int64_t b2 = t.AddChild(0, Pass(2.5));
  t.AddChild(a, Fail());
  std::mt19937_64 rng(0);
  EXPECT_EQ(t.Select(rng), b);  // tie with b2: the lowest id
  t.Close(b, "done");
  EXPECT_EQ(t.Select(rng), b2);
}

TEST(SearchTree, BeamDrawsOnlyFromTheTopK) {
  SearchTree t(Config(Policy::kBeam));  // beam_width 3
  t.AddRoot(Pass(1.0));
  std::vector<int64_t> ids;
  for (int i = 1; i <= 9; ++i) ids.push_back(t.AddChild(0, Pass(1.0 + 0.1 * i)));
  t.Close(ids[8], "done");  // the best is closed: the beam is the next three
  const std::set<int64_t> top = {ids[7], ids[6], ids[5]};
  std::mt19937_64 rng(11);
  std::map<int64_t, int> seen;
  for (int i = 0; i < 300; ++i) {
    std::optional<int64_t> id = t.Select(rng);
    ASSERT_TRUE(id.has_value());
    EXPECT_TRUE(top.count(*id)) << *id;
    seen[*id] += 1;
  }
  EXPECT_EQ(seen.size(), 3u);
  for (const auto& [id, n] : seen) EXPECT_GT(n, 60) << id;
}

TEST(SearchTree, RandomIsReproduciblePerSeedAndCoversTheOpenNodes) {
  SearchTree t(Config(Policy::kRandom));
  t.AddRoot(Pass(1.0));
  for (int i = 0; i < 7; ++i) t.AddChild(0, Pass(1.0 + i));
  t.Close(3, "done");
  auto draw = [&](uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<int64_t> seq;
    for (int i = 0; i < 200; ++i) seq.push_back(*t.Select(rng));
    return seq;
  };
  const std::vector<int64_t> s1 = draw(42);
  EXPECT_EQ(s1, draw(42));
  EXPECT_NE(s1, draw(43));
  const std::set<int64_t> covered(s1.begin(), s1.end());
  EXPECT_EQ(covered, (std::set<int64_t>{0, 1, 2, 4, 5, 6, 7}));
}

TEST(SearchTree, DeterministicPoliciesDoNotDependOnTheSeed) {
  for (Policy p : {Policy::kMcts, Policy::kGreedy}) {
    SearchTree t(Config(p));
    t.AddRoot(Pass(1.0));
    t.AddChild(0, Pass(2.0));
    t.AddChild(0, Pass(1.2));
    t.AddChild(1, Fail());
    std::mt19937_64 r1(1), r2(999);
    EXPECT_EQ(t.Select(r1), t.Select(r2)) << PolicyName(p);
  }
}

TEST(SearchTree, BestIsTheBestPassedNodeOrTheRoot) {
  SearchTree t(Config());
  t.AddRoot(Fail());
  EXPECT_EQ(t.Best(), 0);
  t.AddChild(0, Fail());
  EXPECT_EQ(t.Best(), 0);
  const int64_t slow = t.AddChild(0, Pass(0.5));
  EXPECT_EQ(t.Best(), slow);
  const int64_t fast = t.AddChild(slow, Pass(3.0));
  t.AddChild(fast, Pass(3.0));  // a tie keeps the earlier node
  EXPECT_EQ(t.Best(), fast);

  SearchTree u(Config());
  u.AddRoot(Pass(1.0));
  u.AddChild(0, Pass(0.9));
  EXPECT_EQ(u.Best(), 0);
}

TEST(SearchTree, CloseKeepsTheFirstReason) {
  SearchTree t(Config());
  t.AddRoot(Pass(1.0));
  t.Close(0, "first");
  t.Close(0, "second");
  EXPECT_EQ(t.node(0).closed_reason, "first");
  std::mt19937_64 rng(0);
  EXPECT_EQ(t.Select(rng), std::nullopt);
}

}  // namespace
}  // namespace kpilot
