#include "task/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace kpilot {
namespace {

// The stored bits of `value` converted to `t` (1 or 2 byte types).
uint32_t Bits(DType t, double value) {
  uint8_t buf[8] = {};
  StoreFromDouble(t, value, buf);
  if (DTypeSize(t) == 1) return buf[0];
  uint16_t b;
  std::memcpy(&b, buf, 2);
  return b;
}

double FromBits(DType t, uint32_t bits) {
  uint8_t buf[8] = {};
  if (DTypeSize(t) == 1) {
    buf[0] = static_cast<uint8_t>(bits);
  } else {
    uint16_t b = static_cast<uint16_t>(bits);
    std::memcpy(buf, &b, 2);
  }
  return LoadAsDouble(t, buf);
}

struct BitCase {
  DType type;
  double value;
  uint32_t bits;
};

// Exactly representable values: encoding gives the bits, decoding gives the value back.
TEST(DType, KnownBitPatternsRoundTrip) {
  const BitCase cases[] = {
      {DType::kF16, 1.0, 0x3C00},
      {DType::kF16, -2.0, 0xC000},
      {DType::kF16, 65504.0, 0x7BFF},
      {DType::kF16, 0.5, 0x3800},
      {DType::kF16, std::ldexp(1.0, -24), 0x0001},  // smallest subnormal
      {DType::kF16, std::ldexp(1.0, -14), 0x0400},  // smallest normal
      {DType::kF16, 0.0, 0x0000},
      {DType::kF16, -0.0, 0x8000},
      {DType::kBF16, 1.0, 0x3F80},
      {DType::kBF16, -2.0, 0xC000},
      {DType::kBF16, 3.0, 0x4040},
      {DType::kBF16, std::ldexp(1.0, -133), 0x0001},
      {DType::kFP8E4M3, 1.0, 0x38},
      {DType::kFP8E4M3, 448.0, 0x7E},
      {DType::kFP8E4M3, -448.0, 0xFE},
      {DType::kFP8E4M3, std::ldexp(1.0, -9), 0x01},
      {DType::kFP8E4M3, 0.015625, 0x08},
      {DType::kFP8E5M2, 1.0, 0x3C},
      {DType::kFP8E5M2, 57344.0, 0x7B},
      {DType::kFP8E5M2, -1.5, 0xBE},
      {DType::kFP8E5M2, std::ldexp(1.0, -16), 0x01},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(DTypeName(c.type)) + " " + std::to_string(c.value));
    EXPECT_EQ(Bits(c.type, c.value), c.bits);
    double back = FromBits(c.type, c.bits);
    EXPECT_EQ(back, c.value);
    EXPECT_EQ(std::signbit(back), std::signbit(c.value));
  }
}

TEST(DType, Infinities) {
  EXPECT_EQ(Bits(DType::kF16, INFINITY), 0x7C00u);
  EXPECT_EQ(Bits(DType::kF16, -INFINITY), 0xFC00u);
  EXPECT_EQ(Bits(DType::kBF16, INFINITY), 0x7F80u);
  EXPECT_EQ(Bits(DType::kFP8E5M2, INFINITY), 0x7Cu);
  EXPECT_TRUE(std::isinf(FromBits(DType::kF16, 0x7C00)));
  EXPECT_TRUE(std::isinf(FromBits(DType::kFP8E5M2, 0xFC)));
  EXPECT_LT(FromBits(DType::kFP8E5M2, 0xFC), 0);
}

TEST(DType, NaNsStayNaN) {
  for (DType t : {DType::kF16, DType::kBF16, DType::kFP8E4M3, DType::kFP8E5M2, DType::kF32}) {
    SCOPED_TRACE(std::string(DTypeName(t)));
    uint8_t buf[8] = {};
    StoreFromDouble(t, NAN, buf);
    EXPECT_TRUE(std::isnan(LoadAsDouble(t, buf)));
  }
  EXPECT_TRUE(std::isnan(FromBits(DType::kFP8E4M3, 0x7F)));  // e4m3fn's only NaN encoding
  EXPECT_TRUE(std::isnan(FromBits(DType::kF16, 0x7E00)));
}

TEST(DType, OverflowSaturatesOrBecomesInfinity) {
  // e4m3 has no infinity: it saturates to ±448.
  EXPECT_EQ(Bits(DType::kFP8E4M3, 1000.0), 0x7Eu);
  EXPECT_EQ(Bits(DType::kFP8E4M3, INFINITY), 0x7Eu);
  EXPECT_EQ(Bits(DType::kFP8E4M3, -1e9), 0xFEu);
  // f16: past halfway between 65504 and 65536 rounds to infinity, below it to 65504.
  EXPECT_EQ(Bits(DType::kF16, 65519.0), 0x7BFFu);
  EXPECT_EQ(Bits(DType::kF16, 65520.0), 0x7C00u);
  EXPECT_EQ(Bits(DType::kFP8E5M2, 1e6), 0x7Cu);
}

TEST(DType, RoundsToNearestEven) {
  // f16 ulp at 1 is 2^-10: a tie rounds to the even mantissa.
  EXPECT_EQ(Bits(DType::kF16, 1.0 + std::ldexp(1.0, -11)), 0x3C00u);
  EXPECT_EQ(Bits(DType::kF16, 1.0 + 3 * std::ldexp(1.0, -11)), 0x3C02u);
  EXPECT_EQ(Bits(DType::kF16, 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -20)), 0x3C01u);
  // bf16 ulp at 1 is 2^-7.
  EXPECT_EQ(Bits(DType::kBF16, 1.0 + std::ldexp(1.0, -8)), 0x3F80u);
  EXPECT_EQ(Bits(DType::kBF16, 1.0 + 3 * std::ldexp(1.0, -8)), 0x3F82u);
  // Just above a tie rounds up, even when the excess is below float precision (no double
  // rounding through f32).
  EXPECT_EQ(Bits(DType::kBF16, 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30)), 0x3F81u);
  // e4m3 ulp at 1 is 2^-3; e5m2 ulp at 1 is 2^-2.
  EXPECT_EQ(Bits(DType::kFP8E4M3, 1.0625), 0x38u);
  EXPECT_EQ(Bits(DType::kFP8E4M3, 1.1875), 0x3Au);
  EXPECT_EQ(Bits(DType::kFP8E5M2, 1.125), 0x3Cu);
  EXPECT_EQ(Bits(DType::kFP8E5M2, 1.375), 0x3Eu);
}

TEST(DType, WideTypesRoundTrip) {
  uint8_t buf[8];
  StoreFromDouble(DType::kF64, 0.1, buf);
  EXPECT_EQ(LoadAsDouble(DType::kF64, buf), 0.1);
  StoreFromDouble(DType::kF32, 0.1, buf);
  EXPECT_EQ(LoadAsDouble(DType::kF32, buf), static_cast<double>(0.1f));
  StoreFromDouble(DType::kI64, -9007199254740992.0, buf);
  EXPECT_EQ(LoadAsDouble(DType::kI64, buf), -9007199254740992.0);
}

TEST(DType, IntegersTruncateAndWrap) {
  uint8_t buf[8];
  StoreFromDouble(DType::kI32, -3.7, buf);
  EXPECT_EQ(LoadAsDouble(DType::kI32, buf), -3);
  StoreFromDouble(DType::kU8, 300, buf);
  EXPECT_EQ(LoadAsDouble(DType::kU8, buf), 44);
  StoreFromDouble(DType::kU8, -1, buf);
  EXPECT_EQ(LoadAsDouble(DType::kU8, buf), 255);
  StoreFromDouble(DType::kI8, 128, buf);
  EXPECT_EQ(LoadAsDouble(DType::kI8, buf), -128);
  StoreFromDouble(DType::kI16, 40000, buf);
  EXPECT_EQ(LoadAsDouble(DType::kI16, buf), 40000 - 65536);
  StoreFromDouble(DType::kBool, 0.25, buf);
  EXPECT_EQ(LoadAsDouble(DType::kBool, buf), 1);
  StoreFromDouble(DType::kBool, 0, buf);
  EXPECT_EQ(LoadAsDouble(DType::kBool, buf), 0);
}

TEST(DType, IntegersFromNonFiniteOrHugeAreDefined) {
  uint8_t buf[8];
  StoreFromDouble(DType::kI64, NAN, buf);
  EXPECT_EQ(LoadAsDouble(DType::kI64, buf), 0);
  StoreFromDouble(DType::kI64, 1e30, buf);
  EXPECT_EQ(LoadAsDouble(DType::kI64, buf), static_cast<double>(std::numeric_limits<int64_t>::max()));
  StoreFromDouble(DType::kI64, -INFINITY, buf);
  EXPECT_EQ(LoadAsDouble(DType::kI64, buf), static_cast<double>(std::numeric_limits<int64_t>::min()));
}

TEST(DType, NamesRoundTrip) {
  for (int i = 0; i <= static_cast<int>(DType::kBool); ++i) {
    DType t = static_cast<DType>(i);
    auto parsed = ParseDType(DTypeName(t));
    ASSERT_TRUE(parsed.has_value()) << DTypeName(t);
    EXPECT_EQ(*parsed, t);
    EXPECT_NE(DTypeNameList().find(std::string(DTypeName(t))), std::string::npos);
  }
  EXPECT_FALSE(ParseDType("float").has_value());
  EXPECT_FALSE(ParseDType("F32").has_value());
  EXPECT_EQ(DTypeSize(DType::kBF16), 2u);
  EXPECT_EQ(DTypeSize(DType::kFP8E5M2), 1u);
  EXPECT_TRUE(IsFloat(DType::kFP8E4M3));
  EXPECT_FALSE(IsFloat(DType::kI8));
}

}  // namespace
}  // namespace kpilot
