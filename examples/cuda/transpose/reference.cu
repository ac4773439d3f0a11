// Transpose reference: one thread per element, y[c][r] = x[r][c]. Reads are coalesced along a
// row of x; writes stride by `rows` floats.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

__global__ void Transpose(const float* x, float* y, int64_t rows, int64_t cols) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t r = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y;
  if (r < rows && c < cols) y[c * rows + r] = x[r * cols + c];
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
  const dim3 block(16, 16);
  const int64_t grid_x = (cols + 15) / 16;
  const int64_t grid_y = (rows + 15) / 16;
  if (grid_x > 0x7fffffff || grid_y > 65535) return 2;
  Transpose<<<dim3(static_cast<unsigned>(grid_x), static_cast<unsigned>(grid_y)), block, 0,
              static_cast<cudaStream_t>(stream)>>>(static_cast<const float*>(inputs[0].data),
                                                   static_cast<float*>(outputs[0].data), rows,
                                                   cols);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
