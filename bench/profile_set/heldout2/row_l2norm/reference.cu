// Row-normalization reference: one 256-thread block per row, two passes over global memory: the
// sum of squares in f64 (shared-memory tree), then the scaled copy.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

constexpr int kThreads = 256;

__global__ void RowL2Norm(const float* __restrict__ x, float* __restrict__ y, int64_t cols) {
  __shared__ double sums[kThreads];
  const float* row = x + static_cast<int64_t>(blockIdx.x) * cols;
  double acc = 0.0;
  for (int64_t c = threadIdx.x; c < cols; c += kThreads) acc += static_cast<double>(row[c]) * row[c];
  sums[threadIdx.x] = acc;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) sums[threadIdx.x] += sums[threadIdx.x + stride];
    __syncthreads();
  }
  const float inv = static_cast<float>(1.0 / sqrt(sums[0]));
  float* out = y + static_cast<int64_t>(blockIdx.x) * cols;
  for (int64_t c = threadIdx.x; c < cols; c += kThreads) out[c] = row[c] * inv;
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 1 || num_outputs != 1 || num_scalars != 0 || inputs[0].rank != 2) return 1;
  const int64_t rows = inputs[0].shape[0], cols = inputs[0].shape[1];
  if (rows * cols == 0) return 0;
  if (rows > 0x7fffffff) return 2;
  RowL2Norm<<<static_cast<unsigned>(rows), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<float*>(outputs[0].data), cols);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
