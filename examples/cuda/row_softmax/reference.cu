// Row softmax reference: one thread per row, three plain passes (max, sum of exp, scale) with
// the library expf.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <climits>

__global__ void SoftmaxRows(const float* x, float* y, int64_t rows, int64_t cols) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const float* xr = x + row * cols;
  float* yr = y + row * cols;
  float max = -INFINITY;
  for (int64_t c = 0; c < cols; ++c) max = fmaxf(max, xr[c]);
  float sum = 0.0f;
  for (int64_t c = 0; c < cols; ++c) sum += expf(xr[c] - max);
  for (int64_t c = 0; c < cols; ++c) yr[c] = expf(xr[c] - max) / sum;
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 1 || num_outputs != 1 || num_scalars != 0) return 1;
  if (inputs[0].rank != 2) return 2;
  const int64_t rows = inputs[0].shape[0];
  const int64_t cols = inputs[0].shape[1];
  if (rows * cols == 0) return 0;
  const int threads = 128;
  const int64_t blocks = (rows + threads - 1) / threads;
  if (blocks > INT_MAX) return 2;
  SoftmaxRows<<<static_cast<unsigned>(blocks), threads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<float*>(outputs[0].data), rows, cols);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
