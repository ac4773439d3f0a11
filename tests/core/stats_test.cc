#include <gtest/gtest.h>

#include <cmath>

#include "core/stats.h"

namespace kpilot {
namespace {

TEST(Stats, QuantilesInterpolate) {
  EXPECT_DOUBLE_EQ(Median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(Median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(Quantile({1, 2, 3, 4, 5}, 0.25), 2);
  EXPECT_DOUBLE_EQ(Quantile({}, 0.5), 0);
}

TEST(Stats, MedianCiUsesOrderStatistics) {
  std::vector<double> s;
  for (int i = 1; i <= 100; ++i) s.push_back(i);
  Interval ci = MedianConfidenceInterval(s);
  // n=100: ranks 50 ± 9.8 → [40, 61] (1-based, lo floor, hi ceil + 1).
  EXPECT_DOUBLE_EQ(ci.lo, 40);
  EXPECT_DOUBLE_EQ(ci.hi, 61);
  EXPECT_LT(ci.lo, Median(s));
  EXPECT_GT(ci.hi, Median(s));
}

TEST(Stats, SmallSamplesGiveTheRange) {
  Interval ci = MedianConfidenceInterval({5, 1, 3});
  EXPECT_DOUBLE_EQ(ci.lo, 1);
  EXPECT_DOUBLE_EQ(ci.hi, 5);
}

TEST(Stats, RelativeHalfWidthShrinksWithTighterSamples) {
  std::vector<double> wide, tight;
  for (int i = 0; i < 200; ++i) {
    wide.push_back(1.0 + 0.2 * ((i * 37) % 100) / 100.0);
    tight.push_back(1.0 + 0.002 * ((i * 37) % 100) / 100.0);
  }
  EXPECT_GT(Summarize(wide).RelativeHalfWidth(), 0.01);
  EXPECT_LT(Summarize(tight).RelativeHalfWidth(), 0.01);
}

TEST(Stats, SummaryFields) {
  SampleSummary s = Summarize({1, 2, 3, 4, 100});
  EXPECT_EQ(s.n, 5u);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 100);
  EXPECT_DOUBLE_EQ(s.mean, 22);
  EXPECT_DOUBLE_EQ(s.q1, 2);
  EXPECT_DOUBLE_EQ(s.q3, 4);
}

TEST(Stats, PairedSpeedupIsTheMedianRatio) {
  std::vector<double> base, cand;
  for (int i = 0; i < 50; ++i) {
    double drift = 1.0 + 0.5 * (i % 7);  // machine noise shared by the pair
    base.push_back(2.0 * drift);
    cand.push_back(1.0 * drift);
  }
  PairedRatio r = PairedSpeedup(base, cand);
  EXPECT_EQ(r.n, 50u);
  EXPECT_NEAR(r.ratio, 2.0, 1e-12);
  // Pairing cancels the shared drift, so the CI is tight although each side varies ×4.
  EXPECT_NEAR(r.ci.lo, 2.0, 1e-12);
  EXPECT_NEAR(r.ci.hi, 2.0, 1e-12);
}

TEST(Stats, GeometricMean) {
  EXPECT_NEAR(GeometricMean({1, 4}), 2, 1e-12);
  EXPECT_EQ(GeometricMean({}), 0);
  EXPECT_EQ(GeometricMean({2, 0}), 0);
}

}  // namespace
}  // namespace kpilot

namespace kpilot {
namespace {

TEST(Stats, RatioOfMeansWithABootstrapCi) {
  std::vector<double> base, cand;
  for (int i = 0; i < 200; ++i) {
    base.push_back(2.0 + 0.1 * (i % 5));
    cand.push_back(1.0 + 0.05 * (i % 5));
  }
  cand[7] = 50;  // one outlier moves a mean, not a median
  PairedRatio r = RatioOfMeans(base, cand);
  double mb = 0, mc = 0;
  for (double x : base) mb += x;
  for (double x : cand) mc += x;
  EXPECT_NEAR(r.ratio, mb / mc, 1e-12);
  EXPECT_LT(r.ci.lo, r.ratio);
  EXPECT_GT(r.ci.hi, r.ratio);
  EXPECT_EQ(RatioOfMeans(base, cand).ci.lo, r.ci.lo) << "deterministic for a seed";
  SampleSummary s = Summarize(cand);
  EXPECT_LT(s.mean_ci.lo, s.mean);
  EXPECT_GT(s.mean_ci.hi, s.mean);
}

}  // namespace
}  // namespace kpilot
