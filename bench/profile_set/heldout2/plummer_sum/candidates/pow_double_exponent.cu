// BAD ON PURPOSE (held-out set 2): the reference with r2^1.5 written as `pow(r2, 1.5)`. The
// exponent 1.5 is a double, so overload resolution picks pow(double, double): r2 is widened to
// f64 and the whole libdevice pow — a log and an exp in double precision, dozens of DFMA/DMUL/
// DADD per call — runs on the FP64 pipe, then the quotient q / pow(...) and the sum are in double
// too (acc += converts back to f32 each step). 2^28 calls per launch; the f32 work around it is a
// handful of instructions. (Fix: powf(r2, 1.5f), or r2 * sqrtf(r2).) Expected: FP64 in an f32
// kernel.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <cmath>

constexpr int kThreads = 256;
constexpr float kEps2 = 0.01f;

__global__ void PlummerSumPow(const float* __restrict__ x, const float* __restrict__ s, const float* __restrict__ q,
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
      acc += qs[j] / pow(r2, 1.5);  // 1.5 is a double: pow(double, double)
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
  PlummerSumPow<<<static_cast<unsigned>(blocks), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<const float*>(inputs[1].data),
      static_cast<const float*>(inputs[2].data), static_cast<float*>(outputs[0].data), n, static_cast<int>(m));
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
