// LayerNorm reference: one thread per row, plain loops: mean, then the mean of squared
// deviations (two-pass variance), then the normalized, scaled and shifted row.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <climits>

__global__ void LayerNormRows(const float* x, const float* gamma, const float* beta, float* y,
                              int64_t rows, int64_t cols, float eps) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const float* xr = x + row * cols;
  float* yr = y + row * cols;
  float sum = 0.0f;
  for (int64_t c = 0; c < cols; ++c) sum += xr[c];
  const float mean = sum / static_cast<float>(cols);
  float sq = 0.0f;
  for (int64_t c = 0; c < cols; ++c) sq += (xr[c] - mean) * (xr[c] - mean);
  const float var = sq / static_cast<float>(cols);
  const float inv_std = 1.0f / sqrtf(var + eps);
  for (int64_t c = 0; c < cols; ++c) yr[c] = (xr[c] - mean) * inv_std * gamma[c] + beta[c];
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  if (num_inputs != 3 || num_outputs != 1 || num_scalars != 1) return 1;
  if (inputs[0].rank != 2) return 2;
  const int64_t rows = inputs[0].shape[0];
  const int64_t cols = inputs[0].shape[1];
  if (rows * cols == 0) return 0;
  const int threads = 128;
  const int64_t blocks = (rows + threads - 1) / threads;
  if (blocks > INT_MAX) return 2;
  LayerNormRows<<<static_cast<unsigned>(blocks), threads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<const float*>(inputs[1].data),
      static_cast<const float*>(inputs[2].data), static_cast<float*>(outputs[0].data), rows, cols,
      static_cast<float>(scalars[0].value.f));
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
