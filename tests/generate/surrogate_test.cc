// The surrogate that ranks the params generator's exploration drafts: it must interpolate what
// it was given, be unsure far from it, carry one param's effect to unseen combinations, and let a
// believed point shrink the uncertainty around it.
#include "generate/surrogate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace kpilot {
namespace {

TEST(Surrogate, WithoutPointsItIsFlatAndUnsure) {
  Surrogate m;
  m.Fit({}, {});
  auto p = m.Predict({0.3, 0.7});
  EXPECT_DOUBLE_EQ(p.mean, 0.0);
  EXPECT_DOUBLE_EQ(p.sd, 1.0);
}

TEST(Surrogate, InterpolatesItsPointsAndIsUnsureFarFromThem) {
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  for (int i = 0; i <= 4; ++i) {
    x.push_back({i / 4.0, 0.0});
    y.push_back(std::sin(i / 2.0));
  }
  Surrogate m;
  m.Fit(x, y);
  // The nugget smooths a little: within 0.1 of targets that span 1.
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(m.Predict(x[i]).mean, y[i], 0.1) << i;
  EXPECT_LT(m.Predict({0.5, 0.0}).sd, 0.3 * m.Predict({0.5, 1.0}).sd);
}

// Targets add up over two params: the additive part predicts the held-out best corner (3) above
// everything it saw (at most 2.5).
TEST(Surrogate, CarriesEachParamsEffectToUnseenCombinations) {
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  auto f = [](double a, double b) { return 2 * a + b; };
  for (double a : {0.0, 0.5, 1.0})
    for (double b : {0.0, 0.5, 1.0}) {
      if (a == 1.0 && b == 1.0) continue;  // the best corner is held out
      x.push_back({a, b});
      y.push_back(f(a, b));
    }
  Surrogate m;
  m.Fit(x, y);
  EXPECT_GT(m.Predict({1.0, 1.0}).mean, 2.3);
}

TEST(Surrogate, ABelievedPointShrinksTheUncertaintyAroundIt) {
  Surrogate m;
  m.Fit({{0.0}}, {1.0});
  const double before = m.Predict({1.0}).sd;
  m.Add({1.0}, m.Predict({1.0}).mean);
  EXPECT_LT(m.Predict({1.0}).sd, 0.5 * before);
  EXPECT_EQ(m.size(), 2u);
}

// On a smooth trend the marginal likelihood prefers the longest additive lengthscale on the grid;
// on targets that alternate between neighbours, a short one.
TEST(Surrogate, FitsTheLengthscaleThatExplainsTheData) {
  SurrogateConfig c;
  c.additive_length_grid = {0.1, 1.2};
  std::vector<std::vector<double>> x;
  std::vector<double> smooth, jagged;
  for (int i = 0; i <= 10; ++i) {
    x.push_back({i / 10.0});
    smooth.push_back(i / 10.0);
    jagged.push_back(i % 2);
  }
  Surrogate a(c), b(c);
  a.Fit(x, smooth);
  b.Fit(x, jagged);
  EXPECT_DOUBLE_EQ(a.config().additive_length, 1.2);
  EXPECT_DOUBLE_EQ(b.config().additive_length, 0.1);
  Surrogate fixed(SurrogateConfig{});
  fixed.Fit(x, jagged);
  EXPECT_GT(b.log_likelihood(), fixed.log_likelihood());
}

TEST(Surrogate, ExpectedImprovementRewardsMeanAndUncertainty) {
  EXPECT_DOUBLE_EQ(ExpectedImprovement({1.5, 0.0}, 1.0), 0.5);
  EXPECT_DOUBLE_EQ(ExpectedImprovement({0.5, 0.0}, 1.0), 0.0);
  // At mean = best, EI = sd·φ(0).
  EXPECT_NEAR(ExpectedImprovement({1.0, 0.5}, 1.0), 0.5 / std::sqrt(2 * M_PI), 1e-12);
  EXPECT_GT(ExpectedImprovement({0.5, 1.0}, 1.0), ExpectedImprovement({0.5, 0.2}, 1.0));
  EXPECT_GT(ExpectedImprovement({1.2, 0.2}, 1.0), ExpectedImprovement({0.8, 0.2}, 1.0));
}

}  // namespace
}  // namespace kpilot
