// What the ring-smoothing reference and candidates share: one column's 64 values smoothed 128
// times, and the launch. Each kernel wraps RingSmoothColumn (force-inlined, so its registers are
// the kernel's) with its own attributes; the arithmetic is the same fmaf sequence everywhere.
// (kpilot's compile cache keys a source by its own text only: after editing this header, profile
// with --no-store or --fresh.)
#pragma once

#include <kpilot/kernel.h>

#include <cuda_runtime.h>

constexpr int kRing = 64;
constexpr int kSteps = 128;
constexpr int kRingThreads = 256;

__device__ __forceinline__ void RingSmoothColumn(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= n) return;
  float s[kRing];
#pragma unroll
  for (int i = 0; i < kRing; ++i) s[i] = x[i * n + j];
#pragma unroll 1
  for (int t = 0; t < kSteps; ++t) {
    const float first = s[0];
#pragma unroll
    for (int i = 0; i < kRing - 1; ++i) s[i] = fmaf(0.75f, s[i], 0.25f * s[i + 1]);
    s[kRing - 1] = fmaf(0.75f, s[kRing - 1], 0.25f * first);
  }
#pragma unroll
  for (int i = 0; i < kRing; ++i) y[i * n + j] = s[i];
}

// One thread per column, blocks of kRingThreads.
inline int LaunchRing(void (*kernel)(const float*, float*, int64_t), const kpilot_tensor* inputs, int num_inputs,
                      const kpilot_tensor* outputs, int num_outputs, int num_scalars, void* stream) {
  if (num_inputs != 1 || num_outputs != 1 || num_scalars != 0 || inputs[0].rank != 2) return 1;
  if (inputs[0].shape[0] != kRing) return 2;
  const int64_t n = inputs[0].shape[1];
  if (n == 0) return 0;
  const int64_t blocks = (n + kRingThreads - 1) / kRingThreads;
  if (blocks > 0x7fffffff) return 2;
  kernel<<<static_cast<unsigned>(blocks), kRingThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<float*>(outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
