// Element types shared by tasks, the runner and the candidate ABI (values match kpilot_dtype).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kpilot {

enum class DType : int32_t {
  kF64 = 0,
  kF32 = 1,
  kF16 = 2,
  kBF16 = 3,
  kFP8E4M3 = 4,
  kFP8E5M2 = 5,
  kI64 = 6,
  kI32 = 7,
  kI16 = 8,
  kI8 = 9,
  kU8 = 10,
  kBool = 11,
};

// The task.toml spelling: "f64", "f32", "f16", "bf16", "fp8-e4m3", "fp8-e5m2", "i64", "i32",
// "i16", "i8", "u8", "bool".
std::string_view DTypeName(DType t);
std::optional<DType> ParseDType(std::string_view name);
// Every valid name, comma-separated, for error messages.
std::string DTypeNameList();

size_t DTypeSize(DType t);
bool IsFloat(DType t);
// Machine epsilon (unit roundoff × 2) of a float type; 0 for integer types.
double DTypeEpsilon(DType t);

// Conversions between a stored element and double (host side). Float conversions round to
// nearest even; fp8 e4m3 saturates to ±448 (it has no infinity); integers truncate toward zero
// and wrap (NaN stores 0; values beyond the int64 range saturate before wrapping).
double LoadAsDouble(DType t, const void* element);
void StoreFromDouble(DType t, double value, void* element);

}  // namespace kpilot
