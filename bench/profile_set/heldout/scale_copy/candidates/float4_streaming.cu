// GOOD ON PURPOSE (held-out set): the control. Each thread moves one float4 (16-byte loads and
// stores, fully coalesced), 65536 blocks of 256 threads — about 62 waves, so no tail to speak of;
// a scalar kernel handles the last n % 4 elements and misaligned pointers. It should run near the
// DRAM roof, where the only advice left is to move fewer bytes.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <cstdint>

__global__ void ScaleVec4(const float4* __restrict__ x, float4* __restrict__ y, float s, int64_t n4) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n4) return;
  float4 v = x[i];
  v.x *= s, v.y *= s, v.z *= s, v.w *= s;
  y[i] = v;
}

__global__ void ScaleTail(const float* __restrict__ x, float* __restrict__ y, float s, int64_t begin, int64_t n) {
  const int64_t i = begin + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = s * x[i];
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  if (num_inputs != 1 || num_outputs != 1 || num_scalars != 1) return 1;
  const int64_t n = kpilot_numel(&outputs[0]);
  const float s = static_cast<float>(scalars[0].value.f);
  const float* x = static_cast<const float*>(inputs[0].data);
  float* y = static_cast<float*>(outputs[0].data);
  cudaStream_t st = static_cast<cudaStream_t>(stream);
  const bool aligned = (reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y)) % 16 == 0;
  const int64_t n4 = aligned ? n / 4 : 0;
  if (n4 > 0) {
    const int64_t blocks = (n4 + 255) / 256;
    if (blocks > 0x7fffffff) return 2;
    ScaleVec4<<<static_cast<unsigned>(blocks), 256, 0, st>>>(reinterpret_cast<const float4*>(x),
                                                             reinterpret_cast<float4*>(y), s, n4);
  }
  if (n > 4 * n4) {
    const int64_t blocks = (n - 4 * n4 + 255) / 256;
    if (blocks > 0x7fffffff) return 2;
    ScaleTail<<<static_cast<unsigned>(blocks), 256, 0, st>>>(x, y, s, 4 * n4, n);
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
