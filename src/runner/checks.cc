#include "runner/checks.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

namespace kpilot {

int64_t Numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

void FillInit(DType dtype, const InitSpec& init, uint64_t seed, uint64_t stream_id, void* data, int64_t n) {
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32), static_cast<uint32_t>(stream_id),
                    0x6b70696cu};
  std::mt19937_64 rng(seq);
  auto* bytes = static_cast<unsigned char*>(data);
  size_t size = DTypeSize(dtype);
  switch (init.kind) {
    case InitKind::kNormal: {
      std::normal_distribution<double> d(init.a, init.b);
      for (int64_t i = 0; i < n; ++i) StoreFromDouble(dtype, d(rng), bytes + i * size);
      break;
    }
    case InitKind::kUniform: {
      std::uniform_real_distribution<double> d(init.a, init.b);
      for (int64_t i = 0; i < n; ++i) StoreFromDouble(dtype, d(rng), bytes + i * size);
      break;
    }
    case InitKind::kRandint: {
      std::uniform_int_distribution<int64_t> d(static_cast<int64_t>(init.a), static_cast<int64_t>(init.b) - 1);
      for (int64_t i = 0; i < n; ++i) StoreFromDouble(dtype, static_cast<double>(d(rng)), bytes + i * size);
      break;
    }
    case InitKind::kRange:
      for (int64_t i = 0; i < n; ++i)
        StoreFromDouble(dtype, init.a + static_cast<double>(i) * init.b, bytes + i * size);
      break;
    case InitKind::kConstant:
      for (int64_t i = 0; i < n; ++i) StoreFromDouble(dtype, init.a, bytes + i * size);
      break;
  }
}

void Poison(DType dtype, void* data, int64_t n) {
  if (!IsFloat(dtype)) {
    std::memset(data, 0x5A, static_cast<size_t>(n) * DTypeSize(dtype));
    return;
  }
  size_t size = DTypeSize(dtype);
  unsigned char nan_bits[8];
  StoreFromDouble(dtype, NAN, nan_bits);
  auto* p = static_cast<unsigned char*>(data);
  for (int64_t i = 0; i < n; ++i) std::memcpy(p + i * size, nan_bits, size);
}

void FillGuard(void* data, size_t bytes) { std::memset(data, kGuardByte, bytes); }

bool GuardIntact(const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i)
    if (p[i] != kGuardByte) return false;
  return true;
}

CheckRecord CompareOutput(DType dtype, const void* out, const void* ref, int64_t n, const Tolerance& tol) {
  CheckRecord rec;
  rec.numel = n;
  const auto* o = static_cast<const unsigned char*>(out);
  const auto* r = static_cast<const unsigned char*>(ref);
  size_t size = DTypeSize(dtype);
  bool is_float = IsFloat(dtype);
  for (int64_t i = 0; i < n; ++i) {
    bool match;
    double c, e;
    if (!is_float) {
      // Integers compare exactly by value (bools by truthiness of a valid 0/1 byte).
      match = std::memcmp(o + i * size, r + i * size, size) == 0;
      c = LoadAsDouble(dtype, o + i * size);
      e = LoadAsDouble(dtype, r + i * size);
      if (dtype == DType::kBool && o[i] > 1) match = false;
      double abs_err = std::fabs(c - e);
      rec.max_abs_error = std::max(rec.max_abs_error, abs_err);
      if (e != 0) rec.max_rel_error = std::max(rec.max_rel_error, abs_err / std::fabs(e));
    } else {
      c = LoadAsDouble(dtype, o + i * size);
      e = LoadAsDouble(dtype, r + i * size);
      if (std::isnan(e)) {
        match = std::isnan(c);
      } else if (std::isinf(e)) {
        match = c == e;
      } else if (!std::isfinite(c)) {
        match = false;
      } else {
        double abs_err = std::fabs(c - e);
        match = abs_err <= tol.atol + tol.rtol * std::fabs(e);
        rec.max_abs_error = std::max(rec.max_abs_error, abs_err);
        if (e != 0) rec.max_rel_error = std::max(rec.max_rel_error, abs_err / std::fabs(e));
      }
      if (!std::isfinite(c) && std::isfinite(e)) {
        rec.max_abs_error = INFINITY;
        rec.max_rel_error = INFINITY;
      }
    }
    if (!match) {
      if (rec.mismatches == 0) {
        rec.first_bad_index = i;
        rec.first_bad_value = c;
        rec.first_bad_expected = e;
      }
      ++rec.mismatches;
    }
  }
  rec.ok = MismatchesAllowed(rec.mismatches, n, tol);
  return rec;
}

bool MismatchesAllowed(int64_t mismatches, int64_t n, const Tolerance& tol) {
  return static_cast<double>(mismatches) <= (1.0 - tol.matched_ratio) * static_cast<double>(n) + 1e-9;
}

std::string FirstChange(const StateValues& before, const StateValues& after) {
  for (const auto& [name, value] : after) {
    auto it = std::find_if(before.begin(), before.end(), [&](const auto& b) { return b.first == name; });
    if (it == before.end()) return name + " changed from unknown to " + std::to_string(value);
    if (it->second != value)
      return name + " changed from " + std::to_string(it->second) + " to " + std::to_string(value);
  }
  return "";
}

std::string VisibleDeviceEntry(const char* visible, int device) {
  if (device < 0) return "";
  if (visible == nullptr || *visible == '\0') return std::to_string(device);
  std::string list = visible;
  size_t start = 0;
  for (int i = 0;; ++i) {
    size_t comma = list.find(',', start);
    std::string entry = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (i == device) return entry;
    if (comma == std::string::npos) return "";
    start = comma + 1;
  }
}

}  // namespace kpilot
