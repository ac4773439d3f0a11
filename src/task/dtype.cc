#include "task/dtype.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace kpilot {
namespace {

struct DTypeInfo {
  DType type;
  const char* name;
  size_t size;
};

constexpr DTypeInfo kInfos[] = {
    {DType::kF64, "f64", 8},
    {DType::kF32, "f32", 4},
    {DType::kF16, "f16", 2},
    {DType::kBF16, "bf16", 2},
    {DType::kFP8E4M3, "fp8-e4m3", 1},
    {DType::kFP8E5M2, "fp8-e5m2", 1},
    {DType::kI64, "i64", 8},
    {DType::kI32, "i32", 4},
    {DType::kI16, "i16", 2},
    {DType::kI8, "i8", 1},
    {DType::kU8, "u8", 1},
    {DType::kBool, "bool", 1},
};

const DTypeInfo& Info(DType t) { return kInfos[static_cast<int>(t)]; }

// Generic minifloat encode/decode for formats with `exp_bits` exponent and `man_bits` mantissa
// bits, IEEE-style bias. `has_inf` false means the all-ones exponent is a normal binade except
// the all-ones mantissa which is NaN (e4m3fn).
double DecodeMinifloat(uint32_t bits, int exp_bits, int man_bits, bool has_inf) {
  uint32_t sign = (bits >> (exp_bits + man_bits)) & 1;
  uint32_t exp = (bits >> man_bits) & ((1u << exp_bits) - 1);
  uint32_t man = bits & ((1u << man_bits) - 1);
  int bias = (1 << (exp_bits - 1)) - 1;
  double v;
  uint32_t exp_max = (1u << exp_bits) - 1;
  if (exp == exp_max && has_inf) {
    v = man ? NAN : INFINITY;
  } else if (exp == exp_max && !has_inf && man == (1u << man_bits) - 1) {
    v = NAN;
  } else if (exp == 0) {
    v = std::ldexp(static_cast<double>(man), 1 - bias - man_bits);
  } else {
    v = std::ldexp(static_cast<double>(man | (1u << man_bits)), static_cast<int>(exp) - bias - man_bits);
  }
  return sign ? -v : v;
}

uint32_t EncodeMinifloat(double x, int exp_bits, int man_bits, bool has_inf) {
  uint32_t sign_bit = 1u << (exp_bits + man_bits);
  int bias = (1 << (exp_bits - 1)) - 1;
  uint32_t exp_max = (1u << exp_bits) - 1;
  if (std::isnan(x)) return has_inf ? ((exp_max << man_bits) | 1u) : ((exp_max << man_bits) | ((1u << man_bits) - 1));
  uint32_t sign = std::signbit(x) ? sign_bit : 0;
  double a = std::fabs(x);
  // Largest finite value.
  double max_finite = has_inf ? std::ldexp(2.0 - std::ldexp(1.0, -man_bits), static_cast<int>(exp_max) - 1 - bias)
                              : std::ldexp(2.0 - std::ldexp(1.0, 1 - man_bits), static_cast<int>(exp_max) - bias);
  if (std::isinf(a) || a > max_finite) {
    if (has_inf && std::isinf(a)) return sign | (exp_max << man_bits);
    // Round-to-nearest overflow: to infinity where it exists (past the halfway point), else saturate.
    if (has_inf) {
      double halfway = max_finite + std::ldexp(1.0, static_cast<int>(exp_max) - 1 - bias - man_bits - 1);
      if (a >= halfway) return sign | (exp_max << man_bits);
    }
    return sign | EncodeMinifloat(max_finite, exp_bits, man_bits, has_inf);
  }
  int min_normal_exp = 1 - bias;
  int e;
  std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1)
  int unbiased = e - 1;
  if (unbiased < min_normal_exp) unbiased = min_normal_exp;  // subnormal range uses the min exponent
  // Quantize to man_bits fraction bits at this exponent, round to nearest even.
  double scaled = std::ldexp(a, man_bits - unbiased);
  double r = std::nearbyint(scaled);  // default rounding mode: to nearest even
  uint32_t q = static_cast<uint32_t>(r);
  if (q >> (man_bits + 1)) {  // rounding carried into the next binade
    q >>= 1;
    unbiased += 1;
  }
  uint32_t exp_field;
  uint32_t man_field;
  if (q & (1u << man_bits)) {
    exp_field = static_cast<uint32_t>(unbiased + bias);
    man_field = q & ((1u << man_bits) - 1);
  } else {
    exp_field = 0;  // subnormal
    man_field = q;
  }
  return sign | (exp_field << man_bits) | man_field;
}

// Truncation toward zero without undefined behaviour: NaN becomes 0 and values beyond int64
// saturate. Narrower integer types then wrap (modular conversion).
int64_t TruncToInt64(double x) {
  if (std::isnan(x)) return 0;
  if (x >= 9223372036854775808.0) return std::numeric_limits<int64_t>::max();
  if (x < -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(x);
}

}  // namespace

std::string_view DTypeName(DType t) { return Info(t).name; }

std::optional<DType> ParseDType(std::string_view name) {
  for (const auto& i : kInfos)
    if (name == i.name) return i.type;
  return std::nullopt;
}

std::string DTypeNameList() {
  std::string out;
  for (const auto& i : kInfos) {
    if (!out.empty()) out += ", ";
    out += i.name;
  }
  return out;
}

size_t DTypeSize(DType t) { return Info(t).size; }

bool IsFloat(DType t) {
  switch (t) {
    case DType::kF64:
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
    case DType::kFP8E4M3:
    case DType::kFP8E5M2:
      return true;
    default:
      return false;
  }
}

double DTypeEpsilon(DType t) {
  switch (t) {
    case DType::kF64:
      return std::ldexp(1.0, -52);
    case DType::kF32:
      return std::ldexp(1.0, -23);
    case DType::kF16:
      return std::ldexp(1.0, -10);
    case DType::kBF16:
      return std::ldexp(1.0, -7);
    case DType::kFP8E4M3:
      return std::ldexp(1.0, -3);
    case DType::kFP8E5M2:
      return std::ldexp(1.0, -2);
    default:
      return 0;
  }
}

double LoadAsDouble(DType t, const void* p) {
  switch (t) {
    case DType::kF64: {
      double v;
      std::memcpy(&v, p, 8);
      return v;
    }
    case DType::kF32: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DType::kF16: {
      uint16_t b;
      std::memcpy(&b, p, 2);
      return DecodeMinifloat(b, 5, 10, true);
    }
    case DType::kBF16: {
      uint16_t b;
      std::memcpy(&b, p, 2);
      return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
    }
    case DType::kFP8E4M3:
      return DecodeMinifloat(*static_cast<const uint8_t*>(p), 4, 3, false);
    case DType::kFP8E5M2:
      return DecodeMinifloat(*static_cast<const uint8_t*>(p), 5, 2, true);
    case DType::kI64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return static_cast<double>(v);
    }
    case DType::kI32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DType::kI16: {
      int16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case DType::kI8:
      return *static_cast<const int8_t*>(p);
    case DType::kU8:
      return *static_cast<const uint8_t*>(p);
    case DType::kBool:
      return *static_cast<const uint8_t*>(p) ? 1.0 : 0.0;
  }
  return 0;
}

void StoreFromDouble(DType t, double x, void* p) {
  switch (t) {
    case DType::kF64:
      std::memcpy(p, &x, 8);
      return;
    case DType::kF32: {
      float v = static_cast<float>(x);
      std::memcpy(p, &v, 4);
      return;
    }
    case DType::kF16: {
      uint16_t b = static_cast<uint16_t>(EncodeMinifloat(x, 5, 10, true));
      std::memcpy(p, &b, 2);
      return;
    }
    case DType::kBF16: {
      // Rounded straight from double: going through float first would round twice
      // (1 + 2^-8 + 2^-30 must round up, but as a float it is a tie that rounds down).
      uint16_t b = std::isnan(x) ? 0x7fc0 : static_cast<uint16_t>(EncodeMinifloat(x, 8, 7, true));
      std::memcpy(p, &b, 2);
      return;
    }
    case DType::kFP8E4M3:
      *static_cast<uint8_t*>(p) = static_cast<uint8_t>(EncodeMinifloat(x, 4, 3, false));
      return;
    case DType::kFP8E5M2:
      *static_cast<uint8_t*>(p) = static_cast<uint8_t>(EncodeMinifloat(x, 5, 2, true));
      return;
    case DType::kI64: {
      int64_t v = TruncToInt64(x);
      std::memcpy(p, &v, 8);
      return;
    }
    case DType::kI32: {
      int32_t v = static_cast<int32_t>(TruncToInt64(x));
      std::memcpy(p, &v, 4);
      return;
    }
    case DType::kI16: {
      int16_t v = static_cast<int16_t>(TruncToInt64(x));
      std::memcpy(p, &v, 2);
      return;
    }
    case DType::kI8:
      *static_cast<int8_t*>(p) = static_cast<int8_t>(TruncToInt64(x));
      return;
    case DType::kU8:
      *static_cast<uint8_t*>(p) = static_cast<uint8_t>(TruncToInt64(x));
      return;
    case DType::kBool:
      *static_cast<uint8_t*>(p) = x != 0 ? 1 : 0;
      return;
  }
}

}  // namespace kpilot
