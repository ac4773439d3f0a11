// BAD ON PURPOSE (held-out set 2): one 128-thread block per row that keeps the whole row in
// dynamic shared memory (cols * 4 = 96 KiB per block, opted in with cudaFuncSetAttribute) so it
// reads global memory once. Loads and stores are coalesced float4 and the arithmetic is trivial,
// but 96 KiB per block leaves room for 2 blocks on an SM (228 KiB): 8 warps of 64, 12.5%
// occupancy, in a kernel that has nothing to do but stream. Those 8 warps cannot keep enough
// bytes in flight, and while a block reduces or waits at its barrier no other warps are there to
// load. (Fix: the row fits in registers — 24576 floats over 1024 threads is 24 per thread — or
// read it twice; either lets 64 warps per SM stream.) Expected: occupancy limited by shared
// memory.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <cstdint>

constexpr int kThreads = 128;

__global__ void __launch_bounds__(kThreads) RowL2NormStaged(const float4* __restrict__ x, float4* __restrict__ y,
                                                             int64_t cols4) {
  extern __shared__ float4 row[];  // cols4 float4: the whole row
  __shared__ float warp_sums[kThreads / 32];
  const float4* in = x + static_cast<int64_t>(blockIdx.x) * cols4;
  float acc = 0.0f;
  for (int64_t c = threadIdx.x; c < cols4; c += kThreads) {
    const float4 v = in[c];
    row[c] = v;
    acc = fmaf(v.x, v.x, acc);
    acc = fmaf(v.y, v.y, acc);
    acc = fmaf(v.z, v.z, acc);
    acc = fmaf(v.w, v.w, acc);
  }
  for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, offset);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = acc;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < kThreads / 32; ++w) total += warp_sums[w];
  const float inv = 1.0f / sqrtf(total);
  float4* out = y + static_cast<int64_t>(blockIdx.x) * cols4;
  for (int64_t c = threadIdx.x; c < cols4; c += kThreads) {
    float4 v = row[c];
    v.x *= inv, v.y *= inv, v.z *= inv, v.w *= inv;
    out[c] = v;
  }
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 1 || num_outputs != 1 || num_scalars != 0 || inputs[0].rank != 2) return 1;
  const int64_t rows = inputs[0].shape[0], cols = inputs[0].shape[1];
  if (rows * cols == 0) return 0;
  const bool aligned =
      (reinterpret_cast<uintptr_t>(inputs[0].data) | reinterpret_cast<uintptr_t>(outputs[0].data)) % 16 == 0;
  const int64_t smem = cols * static_cast<int64_t>(sizeof(float));
  if (rows > 0x7fffffff || cols % 4 != 0 || !aligned || smem > 200 * 1024) return 2;
  if (cudaFuncSetAttribute(RowL2NormStaged, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)) !=
      cudaSuccess)
    return 3;
  RowL2NormStaged<<<static_cast<unsigned>(rows), kThreads, static_cast<size_t>(smem),
                    static_cast<cudaStream_t>(stream)>>>(static_cast<const float4*>(inputs[0].data),
                                                         static_cast<float4*>(outputs[0].data), cols / 4);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
