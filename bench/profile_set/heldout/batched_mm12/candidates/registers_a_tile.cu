// BAD ON PURPOSE (held-out set): one thread per matrix, the whole 12x12 A tile held in registers
// (144 floats) while the 12 columns of B are streamed one at a time. Without __restrict__ the
// compiler must assume a store to C may change B, so each column's 12 loads wait for the previous
// column's stores — only 12 loads in flight per thread at a time — and the ~170 registers per
// thread leave room for only a few warps per SM to hide that latency. No spills: just too few
// warps. Expected: occupancy limited by registers.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

constexpr int kD = 12;

__global__ void BatchedMmPerMatrix(const float* a, const float* b, float* c, int64_t n) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= n) return;
  float at[kD][kD];
#pragma unroll
  for (int i = 0; i < kD; ++i) {
#pragma unroll
    for (int k = 0; k < kD; ++k) at[i][k] = a[(i * kD + k) * n + t];
  }
#pragma unroll
  for (int j = 0; j < kD; ++j) {
    float bj[kD];
#pragma unroll
    for (int k = 0; k < kD; ++k) bj[k] = b[(k * kD + j) * n + t];
#pragma unroll
    for (int i = 0; i < kD; ++i) {
      float acc = 0.0f;
#pragma unroll
      for (int k = 0; k < kD; ++k) acc = fmaf(at[i][k], bj[k], acc);
      c[(i * kD + j) * n + t] = acc;
    }
  }
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 2 || num_outputs != 1 || num_scalars != 0 || inputs[0].rank != 3) return 1;
  if (inputs[0].shape[0] != kD || inputs[0].shape[1] != kD || inputs[1].shape[1] != kD) return 2;
  const int64_t n = inputs[0].shape[2];
  if (n == 0) return 0;
  const int64_t blocks = (n + 127) / 128;
  if (blocks > 0x7fffffff) return 2;
  BatchedMmPerMatrix<<<static_cast<unsigned>(blocks), 128, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<const float*>(inputs[1].data),
      static_cast<float*>(outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
