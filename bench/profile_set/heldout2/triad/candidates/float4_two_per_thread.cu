// GOOD ON PURPOSE (held-out set 2): the control. Each thread handles two float4 of each array, a
// block-width apart (four independent 16-byte loads in flight per thread, then two 16-byte
// stores, all coalesced); 24576 blocks of 256 threads, about 23 waves at 8 blocks per SM. A
// scalar kernel covers the last n % 8 elements and misaligned pointers. Three streams and one FMA
// per 12 bytes: it should sit on the DRAM roof, where the only advice left is to move fewer
// bytes. Expected: memory-bound, DRAM near its peak, nothing else of weight.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <cstdint>

constexpr int kThreads = 256;
constexpr int kPerThread = 2;  // float4s per thread and array

__global__ void __launch_bounds__(kThreads) TriadVec4(const float4* __restrict__ b, const float4* __restrict__ c,
                                                       float4* __restrict__ a, float s, int64_t n4) {
  const int64_t first = static_cast<int64_t>(blockIdx.x) * (kThreads * kPerThread) + threadIdx.x;
  float4 bv[kPerThread], cv[kPerThread];
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const int64_t i = first + k * kThreads;
    if (i < n4) bv[k] = b[i], cv[k] = c[i];
  }
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const int64_t i = first + k * kThreads;
    if (i < n4)
      a[i] = make_float4(fmaf(s, cv[k].x, bv[k].x), fmaf(s, cv[k].y, bv[k].y), fmaf(s, cv[k].z, bv[k].z),
                         fmaf(s, cv[k].w, bv[k].w));
  }
}

__global__ void TriadTail(const float* __restrict__ b, const float* __restrict__ c, float* __restrict__ a, float s,
                          int64_t begin, int64_t n) {
  const int64_t i = begin + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) a[i] = fmaf(s, c[i], b[i]);
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  if (num_inputs != 2 || num_outputs != 1 || num_scalars != 1) return 1;
  const int64_t n = kpilot_numel(&outputs[0]);
  const float s = static_cast<float>(scalars[0].value.f);
  const float* b = static_cast<const float*>(inputs[0].data);
  const float* c = static_cast<const float*>(inputs[1].data);
  float* a = static_cast<float*>(outputs[0].data);
  cudaStream_t st = static_cast<cudaStream_t>(stream);
  const bool aligned =
      (reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b) | reinterpret_cast<uintptr_t>(c)) % 16 == 0;
  const int64_t n4 = aligned ? n / 4 : 0;
  if (n4 > 0) {
    const int64_t blocks = (n4 + kThreads * kPerThread - 1) / (kThreads * kPerThread);
    if (blocks > 0x7fffffff) return 2;
    TriadVec4<<<static_cast<unsigned>(blocks), kThreads, 0, st>>>(reinterpret_cast<const float4*>(b),
                                                                  reinterpret_cast<const float4*>(c),
                                                                  reinterpret_cast<float4*>(a), s, n4);
  }
  if (n > 4 * n4) {
    const int64_t blocks = (n - 4 * n4 + 255) / 256;
    if (blocks > 0x7fffffff) return 2;
    TriadTail<<<static_cast<unsigned>(blocks), 256, 0, st>>>(b, c, a, s, 4 * n4, n);
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
