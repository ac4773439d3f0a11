// Device-side pieces of a correctness trial on the cuda backend: input generation, poisoning,
// canaries, input hashes and element-wise comparison, all on the GPU so multi-gigabyte tensors
// never cross PCIe. Host-callable; CUDA types appear only as void* (a cudaStream_t) and the
// return value (a cudaError_t as int, 0 = success).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "task/task.h"

namespace kpilot {

// Fills n elements from `init`, deterministic in (seed, stream_id, index): a counter-based hash,
// so any element can be generated independently. Normal values use Box–Muller.
int DeviceFillInit(DType dtype, const InitSpec& init, uint64_t seed, uint64_t stream_id, void* data, int64_t n,
                   void* stream);

// NaN (floats) or 0x5A bytes (integers, bool) in every element.
int DevicePoison(DType dtype, void* data, int64_t n, void* stream);

// Comparison of `out` against `ref` under |out − ref| ≤ atol + rtol·|ref| (NaN/Inf only where
// the reference has the same). Synchronous: returns when the statistics are on the host.
struct DeviceCompareStats {
  int64_t mismatches = 0;
  int64_t first_bad = -1;
  double max_abs = 0;                                         // over finite pairs
  double max_rel = 0;                                         // over finite pairs with ref ≠ 0
  double sum_sq_diff = 0;                                     // Σ (out − ref)² over finite pairs
  double sum_sq_ref = 0;                                      // Σ ref²
  double sum_sq_out = 0;                                      // Σ out² (finite out)
  double out_min = 0, out_max = 0, ref_min = 0, ref_max = 0;  // over finite values
  double max_abs_ref = 0;
  int64_t nonfinite_out = 0;
};
int DeviceCompare(DType dtype, const void* out, const void* ref, int64_t n, double atol, double rtol,
                  DeviceCompareStats* result, void* stream);

// Copies `count` elements, taken every `stride` elements from index 0, converted to double, to
// `host_out` (synchronous). Used for the precision check and for first-bad values.
int DeviceGatherAsDouble(DType dtype, const void* data, int64_t count, int64_t stride, double* host_out, void* stream);

// Number of bytes in [data, data+bytes) that differ from `value` (synchronous).
int DeviceCountNot(const void* data, size_t bytes, unsigned char value, uint64_t* host_count, void* stream);

// A position-dependent 64-bit digest of the bytes (synchronous); equal bytes give equal digests.
int DeviceHash(const void* data, size_t bytes, uint64_t* host_hash, void* stream);

// Evicts the L2 by reading `bytes` (≥ 2× the L2) of `buffer`: afterwards the L2 holds clean lines
// of a buffer nobody else uses, so the next kernel starts cold without paying write-backs (a
// memset would leave the L2 full of dirty lines). Asynchronous on `stream`.
// Its kernel's name contains kFlushKernelName, so traces can leave it out.
int DeviceFlushL2(const void* buffer, size_t bytes, void* stream);
inline constexpr const char* kFlushKernelName = "KpilotL2FlushKernel";

// Calibration: the sustained FP32 FMA rate in FLOP/s (2 per FMA) over about `seconds`, and the
// device-to-device copy bandwidth in bytes/s (read + written) over a buffer of `bytes`.
int DeviceMeasureFp32Peak(int sm_count, double* flops_per_s, void* stream);

// Tensor-core rate with warp-level mma.sync (FLOP/s, 2 per multiply-add) for `kind`: "f16",
// "bf16", "tf32" (sm_80+) or "fp8-e4m3" (sm_89+; cudaErrorNotSupported below). mma.sync is what
// every sm_80+ GPU runs; on Hopper, wgmma reaches about twice this rate, so for sm_90 this is a
// lower bound of the tensor ceiling.
int DeviceMeasureMmaPeak(const char* kind, int sm_count, int cc_major, int cc_minor, double* flops_per_s, void* stream);
// L2 read bandwidth (bytes/s): a buffer of a quarter of the L2 read repeatedly.
int DeviceMeasureL2Bandwidth(int64_t l2_bytes, int sm_count, double* bytes_per_s, void* stream);
// Launch overhead: the mean time per empty kernel when many are queued back to back (device
// side, µs), and the mean host time of one launch call (µs).
int DeviceMeasureLaunchOverhead(double* device_us, double* host_us, void* stream);
int DeviceMeasureCopyBandwidth(size_t bytes, double* bytes_per_s, void* stream);

}  // namespace kpilot
