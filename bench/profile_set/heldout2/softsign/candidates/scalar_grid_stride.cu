// BAD ON PURPOSE (held-out set 2): a "persistent" grid-stride loop that moves one 32-bit float per
// thread per iteration. The grid is exactly one full wave (8 blocks of 256 threads per SM: 64
// warps, full occupancy) and `#pragma unroll 1` keeps one load in flight per thread, so an SM has
// at most 2048 x 4 B = 8 KiB of loads outstanding — far too few bytes to cover the DRAM latency at
// 4.8 TB/s. The arrays are 16-byte aligned: float4 loads and stores (or four independent loads per
// iteration) would put four times the bytes in flight with the same warps.
// Expected: memory-bound kernel loading 32 bits at a time.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

constexpr int kThreads = 256;
constexpr int kBlocksPerSm = 8;  // 8 x 256 = 2048 threads: the SM's maximum

__global__ void __launch_bounds__(kThreads) SoftsignGridStride(const float* __restrict__ x, float* __restrict__ y,
                                                                int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
#pragma unroll 1
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float v = x[i];
    y[i] = v / (1.0f + fabsf(v));
  }
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 1 || num_outputs != 1 || num_scalars != 0) return 1;
  const int64_t n = kpilot_numel(&outputs[0]);
  if (n == 0) return 0;
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || sms <= 0)
    return 3;
  const int64_t needed = (n + kThreads - 1) / kThreads;
  const int64_t wave = static_cast<int64_t>(sms) * kBlocksPerSm;
  const unsigned blocks = static_cast<unsigned>(needed < wave ? needed : wave);
  SoftsignGridStride<<<blocks, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<float*>(outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
