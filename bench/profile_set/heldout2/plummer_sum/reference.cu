// Softened-sum reference in f32: one thread per target, the sources staged through shared memory
// in chunks of 256. r2^1.5 is r2 * sqrtf(r2).
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

constexpr int kThreads = 256;
constexpr float kEps2 = 0.01f;

__global__ void PlummerSum(const float* __restrict__ x, const float* __restrict__ s, const float* __restrict__ q,
                           float* __restrict__ y, int64_t n, int m) {
  __shared__ float ss[kThreads], qs[kThreads];
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  const float xi = i < n ? x[i] : 0.0f;
  float acc = 0.0f;
  for (int base = 0; base < m; base += kThreads) {
    __syncthreads();
    if (base + threadIdx.x < m) {
      ss[threadIdx.x] = s[base + threadIdx.x];
      qs[threadIdx.x] = q[base + threadIdx.x];
    }
    __syncthreads();
    const int count = m - base < kThreads ? m - base : kThreads;
    for (int j = 0; j < count; ++j) {
      const float d = xi - ss[j];
      const float r2 = fmaf(d, d, kEps2);
      acc += qs[j] / (r2 * sqrtf(r2));
    }
  }
  if (i < n) y[i] = acc;
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 3 || num_outputs != 1 || num_scalars != 0) return 1;
  const int64_t n = kpilot_numel(&outputs[0]), m = kpilot_numel(&inputs[1]);
  if (n == 0) return 0;
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  if (blocks > 0x7fffffff || m > 0x7fffffff) return 2;
  PlummerSum<<<static_cast<unsigned>(blocks), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<const float*>(inputs[1].data),
      static_cast<const float*>(inputs[2].data), static_cast<float*>(outputs[0].data), n, static_cast<int>(m));
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
