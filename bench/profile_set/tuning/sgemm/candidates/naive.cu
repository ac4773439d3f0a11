// BAD ON PURPOSE (tuning set): the naive SGEMM — one thread per element of C, no tiling. Every
// multiply-add issues two global loads (A's row element, broadcast across the warp, and B's
// column element), so the kernel is held by the load/store path and its latency, not by the FMA
// units: no operand is reused from shared memory or registers. Expected: compute-bound work,
// warps dominated by one memory-wait stall reason.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

__global__ void SgemmNaive(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                           int m, int n, int k) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= m || col >= n) return;
  float acc = 0.0f;
  for (int p = 0; p < k; ++p) acc = fmaf(a[static_cast<int64_t>(row) * k + p], b[static_cast<int64_t>(p) * n + col], acc);
  c[static_cast<int64_t>(row) * n + col] = acc;
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 2 || num_outputs != 1 || num_scalars != 0) return 1;
  if (inputs[0].rank != 2 || inputs[1].rank != 2) return 2;
  const int64_t m = inputs[0].shape[0], k = inputs[0].shape[1], n = inputs[1].shape[1];
  if (inputs[1].shape[0] != k || m > 0x7fffffff || n > 0x7fffffff || k > 0x7fffffff) return 2;
  if (m * n == 0) return 0;
  const int64_t gx = (n + 15) / 16, gy = (m + 15) / 16;
  if (gy > 65535) return 2;
  SgemmNaive<<<dim3(static_cast<unsigned>(gx), static_cast<unsigned>(gy)), dim3(16, 16), 0,
               static_cast<cudaStream_t>(stream)>>>(static_cast<const float*>(inputs[0].data),
                                                    static_cast<const float*>(inputs[1].data),
                                                    static_cast<float*>(outputs[0].data), static_cast<int>(m),
                                                    static_cast<int>(n), static_cast<int>(k));
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
