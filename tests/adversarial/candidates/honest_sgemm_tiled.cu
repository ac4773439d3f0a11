// Control (task sgemm): an honest f32 SGEMM, 32x32 shared-memory tiles, each thread keeping four
// interleaved f32 partial sums (as optimized kernels do), so its rounding differs from the naive
// reference's by normal f32 amounts. Expected: passed — the precision check must accept an
// honest summation order.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

constexpr int kTile = 32;

__global__ void SgemmTiled(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int m,
                           int n, int k) {
  __shared__ float as[kTile][kTile];
  __shared__ float bs[kTile][kTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * kTile + ty, col = blockIdx.x * kTile + tx;
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int t = 0; t < k; t += kTile) {
    as[ty][tx] = (row < m && t + tx < k) ? a[static_cast<int64_t>(row) * k + t + tx] : 0.0f;
    bs[ty][tx] = (t + ty < k && col < n) ? b[static_cast<int64_t>(t + ty) * n + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int p = 0; p < kTile; ++p) acc[p % 4] = fmaf(as[ty][p], bs[p][tx], acc[p % 4]);
    __syncthreads();
  }
  if (row < m && col < n) c[static_cast<int64_t>(row) * n + col] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  (void)num_scalars;
  if (num_inputs != 2 || num_outputs != 1) return 1;
  const int m = static_cast<int>(inputs[0].shape[0]);
  const int k = static_cast<int>(inputs[0].shape[1]);
  const int n = static_cast<int>(inputs[1].shape[1]);
  if (m == 0 || n == 0) return 0;
  const dim3 block(kTile, kTile), grid((n + kTile - 1) / kTile, (m + kTile - 1) / kTile);
  SgemmTiled<<<grid, block, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<const float*>(inputs[0].data),
                                                                      static_cast<const float*>(inputs[1].data),
                                                                      static_cast<float*>(outputs[0].data), m, n, k);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
