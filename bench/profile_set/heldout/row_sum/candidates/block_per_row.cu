// BAD ON PURPOSE (held-out set): one 1024-thread block per row. The kernel itself is sound —
// float4 loads, per-thread partials, warp-shuffle and shared-memory block reduction — but with 16
// rows the grid has 16 blocks for the H200's 132 SMs: 116 SMs get nothing, and 16 SMs cannot
// pull anywhere near the DRAM bandwidth. (Splitting each row over several blocks fixes it.)
// Expected: grid smaller than the SM count.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <cstdint>

constexpr int kThreads = 1024;

__global__ void __launch_bounds__(kThreads) RowSumBlock(const float* __restrict__ x, float* __restrict__ y,
                                                        int64_t cols, bool vec4) {
  __shared__ float warp_sums[kThreads / 32];
  const float* row = x + static_cast<int64_t>(blockIdx.x) * cols;
  float acc = 0.0f;
  int64_t done = 0;
  if (vec4) {
    const float4* row4 = reinterpret_cast<const float4*>(row);
    const int64_t n4 = cols / 4;
    for (int64_t i = threadIdx.x; i < n4; i += kThreads) {
      const float4 v = row4[i];
      acc += (v.x + v.y) + (v.z + v.w);
    }
    done = 4 * n4;
  }
  for (int64_t i = done + threadIdx.x; i < cols; i += kThreads) acc += row[i];
  for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_down_sync(0xffffffffu, acc, offset);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x < 32) {
    acc = warp_sums[threadIdx.x];
    for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_down_sync(0xffffffffu, acc, offset);
    if (threadIdx.x == 0) y[blockIdx.x] = acc;
  }
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 1 || num_outputs != 1 || num_scalars != 0 || inputs[0].rank != 2) return 1;
  const int64_t rows = inputs[0].shape[0], cols = inputs[0].shape[1];
  if (rows == 0) return 0;
  if (rows > 0x7fffffff) return 2;
  const bool vec4 = reinterpret_cast<uintptr_t>(inputs[0].data) % 16 == 0 && cols % 4 == 0;
  RowSumBlock<<<static_cast<unsigned>(rows), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<float*>(outputs[0].data), cols, vec4);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
