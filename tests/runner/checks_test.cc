#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "runner/checks.h"

namespace kpilot {
namespace {

Tolerance Tol(double atol, double rtol, double ratio = 1.0) { return {atol, rtol, ratio}; }

TEST(Compare, WithinToleranceMatches) {
  std::vector<float> ref = {1.0f, -2.0f, 100.0f}, out = {1.000001f, -2.000001f, 100.0001f};
  CheckRecord c = CompareOutput(DType::kF32, out.data(), ref.data(), 3, Tol(1e-5, 1e-5));
  EXPECT_TRUE(c.ok);
  EXPECT_EQ(c.mismatches, 0);
  EXPECT_EQ(c.first_bad_index, -1);
  EXPECT_GT(c.max_abs_error, 0);
}

TEST(Compare, ReportsFirstBadElement) {
  std::vector<float> ref = {1, 2, 3, 4}, out = {1, 2, 3.5f, 5};
  CheckRecord c = CompareOutput(DType::kF32, out.data(), ref.data(), 4, Tol(1e-3, 1e-3));
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.mismatches, 2);
  EXPECT_EQ(c.first_bad_index, 2);
  EXPECT_FLOAT_EQ(c.first_bad_value, 3.5);
  EXPECT_FLOAT_EQ(c.first_bad_expected, 3);
  EXPECT_FLOAT_EQ(c.max_abs_error, 1);
  EXPECT_FLOAT_EQ(c.max_rel_error, 0.25);
}

TEST(Compare, NanAndInfPassOnlyWhereTheReferenceHasThem) {
  std::vector<float> ref = {NAN, INFINITY, 1}, same = {NAN, INFINITY, 1};
  EXPECT_TRUE(CompareOutput(DType::kF32, same.data(), ref.data(), 3, Tol(1, 1)).ok);
  std::vector<float> nan_out = {NAN, INFINITY, NAN};
  CheckRecord c = CompareOutput(DType::kF32, nan_out.data(), ref.data(), 3, Tol(1e9, 1e9));
  EXPECT_FALSE(c.ok) << "a huge tolerance must not let NaN through";
  EXPECT_EQ(c.first_bad_index, 2);
  std::vector<float> wrong_inf = {NAN, -INFINITY, 1};
  EXPECT_FALSE(CompareOutput(DType::kF32, wrong_inf.data(), ref.data(), 3, Tol(1e9, 1e9)).ok);
}

TEST(Compare, MatchedRatioAllowsAShareOfMismatches) {
  std::vector<float> ref(100, 1.0f), out(100, 1.0f);
  out[3] = out[50] = 9;
  EXPECT_FALSE(CompareOutput(DType::kF32, out.data(), ref.data(), 100, Tol(0, 0, 0.99)).ok);
  EXPECT_TRUE(CompareOutput(DType::kF32, out.data(), ref.data(), 100, Tol(0, 0, 0.98)).ok);
}

TEST(Compare, IntegersCompareExactly) {
  std::vector<int32_t> ref = {1, 2, 3}, out = {1, 2, 4};
  CheckRecord c = CompareOutput(DType::kI32, out.data(), ref.data(), 3, Tol(10, 10));
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.first_bad_index, 2);
}

TEST(Compare, PoisonedOutputsNeverPass) {
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64, DType::kFP8E4M3, DType::kFP8E5M2, DType::kI32,
                  DType::kI8, DType::kBool}) {
    std::vector<unsigned char> ref(16 * DTypeSize(t), 0), out(16 * DTypeSize(t));
    Poison(t, out.data(), 16);
    CheckRecord c = CompareOutput(t, out.data(), ref.data(), 16, Tol(1e3, 1e3));
    EXPECT_FALSE(c.ok) << DTypeName(t);
    EXPECT_EQ(c.mismatches, 16) << DTypeName(t);
  }
}

TEST(Init, DeterministicPerSeedAndStream) {
  std::vector<float> a(1000), b(1000), c(1000), d(1000);
  InitSpec normal{InitKind::kNormal, 0, 1};
  FillInit(DType::kF32, normal, 1, 0, a.data(), 1000);
  FillInit(DType::kF32, normal, 1, 0, b.data(), 1000);
  FillInit(DType::kF32, normal, 2, 0, c.data(), 1000);
  FillInit(DType::kF32, normal, 1, 1, d.data(), 1000);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, d);
  double mean = 0, var = 0;
  for (float x : a) mean += x;
  mean /= 1000;
  for (float x : a) var += (x - mean) * (x - mean);
  var /= 1000;
  EXPECT_NEAR(mean, 0, 0.15);
  EXPECT_NEAR(var, 1, 0.2);
}

TEST(Init, DistributionsRespectTheirBounds) {
  std::vector<int32_t> ints(2000);
  FillInit(DType::kI32, {InitKind::kRandint, -3, 4}, 7, 0, ints.data(), 2000);
  int lo = 100, hi = -100;
  for (int v : ints) lo = std::min(lo, v), hi = std::max(hi, v);
  EXPECT_EQ(lo, -3);
  EXPECT_EQ(hi, 3);  // [low, high)
  std::vector<float> u(2000);
  FillInit(DType::kF32, {InitKind::kUniform, 2, 3}, 7, 0, u.data(), 2000);
  for (float v : u) ASSERT_TRUE(v >= 2 && v <= 3);
  std::vector<double> r(5);
  FillInit(DType::kF64, {InitKind::kRange, 10, 0.5}, 7, 0, r.data(), 5);
  EXPECT_EQ(r, (std::vector<double>{10, 10.5, 11, 11.5, 12}));
}

TEST(Guard, DetectsAnyChangedByte) {
  std::vector<unsigned char> g(64);
  FillGuard(g.data(), g.size());
  EXPECT_TRUE(GuardIntact(g.data(), g.size()));
  g[63] ^= 1;
  EXPECT_FALSE(GuardIntact(g.data(), g.size()));
}

TEST(FirstChange, NamesTheFirstValueThatDiffersOrIsNew) {
  const StateValues open = {{"the current device", 0}, {"the persisting L2 cache size limit", 0}};
  EXPECT_EQ(FirstChange(open, open), "");
  EXPECT_EQ(FirstChange(open, {{"the current device", 0}, {"the persisting L2 cache size limit", 78643200}}),
            "the persisting L2 cache size limit changed from 0 to 78643200");
  EXPECT_EQ(FirstChange(open, {{"the current device", 1}, {"the persisting L2 cache size limit", 5}}),
            "the current device changed from 0 to 1");
  EXPECT_EQ(FirstChange(open, {{"the device flags", 4}}), "the device flags changed from unknown to 4");
  EXPECT_EQ(FirstChange(open, {}), "") << "only what was read after is compared";
}

// A worker sees only its assigned GPU: the CUDA_VISIBLE_DEVICES entry it narrows the list to.
TEST(VisibleDeviceEntry, PicksTheAssignedDevicesEntry) {
  EXPECT_EQ(VisibleDeviceEntry(nullptr, 3), "3");
  EXPECT_EQ(VisibleDeviceEntry("", 0), "0");
  EXPECT_EQ(VisibleDeviceEntry("2,3", 1), "3");
  EXPECT_EQ(VisibleDeviceEntry("GPU-8e1f,GPU-77aa", 0), "GPU-8e1f");
  EXPECT_EQ(VisibleDeviceEntry("5", 0), "5");
  EXPECT_EQ(VisibleDeviceEntry("2,3", 2), "") << "no third entry";
  EXPECT_EQ(VisibleDeviceEntry("2,3", -1), "");
}

}  // namespace
}  // namespace kpilot
