// Pure pieces of a correctness trial on host memory: input generation, output poisoning, guard
// bytes and element-wise comparison. The host backend uses them directly; the cuda backend
// uses them on copies.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "runner/protocol.h"

namespace kpilot {

// Fills `n` elements of `dtype` at `data` from `init`, deterministically from `seed` and
// `stream_id` (use the input's index, so inputs differ from each other).
void FillInit(DType dtype, const InitSpec& init, uint64_t seed, uint64_t stream_id, void* data, int64_t n);

// Poisons an output: NaN for float types, the byte 0x5A for integer and bool types (a value the
// reference is unlikely to produce everywhere, and not a valid bool).
void Poison(DType dtype, void* data, int64_t n);

// Guard pattern written around every output allocation; checked after each call.
inline constexpr unsigned char kGuardByte = 0xA5;
void FillGuard(void* data, size_t bytes);
bool GuardIntact(const void* data, size_t bytes);

// Compares `out` against `ref` element by element. An element matches when
// |out − ref| ≤ atol + rtol·|ref|; NaN/Inf in `out` match only the same value in `ref`.
// The record's `ok` is mismatches ≤ (1 − matched_ratio)·n. Fills numel, mismatches,
// max errors (over finite pairs), first bad index/value/expected; not workload/seed/output.
CheckRecord CompareOutput(DType dtype, const void* out, const void* ref, int64_t n, const Tolerance& tol);

int64_t Numel(const std::vector<int64_t>& shape);

// Whether `mismatches` of `n` elements out of tolerance still pass: at most (1 − matched_ratio)·n.
bool MismatchesAllowed(int64_t mismatches, int64_t n, const Tolerance& tol);

// The CUDA_VISIBLE_DEVICES entry that names device `device` as the caller numbers them: the
// device's own number when `visible` is unset or empty, else the list's entry at that place
// (an index, a UUID or a MIG name); "" when the list has no such entry.
std::string VisibleDeviceEntry(const char* visible, int device);

// Named values of a process's state read at two moments (a served runner's CUDA state after it
// opened and after a request: serve_cuda.cc). Pure: "NAME changed from A to B" for the first
// value of `after` that differs from `before`'s, or is missing there; "" when none does.
using StateValues = std::vector<std::pair<std::string, int64_t>>;
std::string FirstChange(const StateValues& before, const StateValues& after);

}  // namespace kpilot
