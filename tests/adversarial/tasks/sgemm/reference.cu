// adv_sgemm reference: one thread per element of C, a plain loop over k with an f32 accumulator.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

__global__ void Sgemm(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k) {
  const int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t row = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y;
  if (row >= m || col >= n) return;
  float acc = 0.0f;
  for (int64_t p = 0; p < k; ++p) acc += a[row * k + p] * b[p * n + col];
  c[row * n + col] = acc;
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 2 || num_outputs != 1 || num_scalars != 0) return 1;
  if (inputs[0].rank != 2 || inputs[1].rank != 2) return 2;
  const int64_t m = inputs[0].shape[0];
  const int64_t k = inputs[0].shape[1];
  const int64_t n = inputs[1].shape[1];
  if (inputs[1].shape[0] != k) return 2;
  if (m * n == 0) return 0;
  const int64_t grid_x = (n + 15) / 16;
  const int64_t grid_y = (m + 15) / 16;
  if (grid_x > 0x7fffffff || grid_y > 65535) return 2;
  Sgemm<<<dim3(static_cast<unsigned>(grid_x), static_cast<unsigned>(grid_y)), dim3(16, 16), 0,
          static_cast<cudaStream_t>(stream)>>>(static_cast<const float*>(inputs[0].data),
                                               static_cast<const float*>(inputs[1].data),
                                               static_cast<float*>(outputs[0].data), m, n, k);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
