// BAD ON PURPOSE (tuning set): the textbook naive transpose. One thread per element, blocks of
// 32x8; threadIdx.x walks a row of x, so the reads are coalesced, but the write y[c][r] puts the
// 32 lanes of a warp `rows` floats apart: every lane's 4-byte store lands in its own 32-byte
// sector (32 sectors per request where 4 would do). Expected: memory side, uncoalesced stores.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

__global__ void TransposeNaive(const float* __restrict__ x, float* __restrict__ y, int64_t rows,
                               int64_t cols) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t r = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y;
  if (r < rows && c < cols) y[c * rows + r] = x[r * cols + c];
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 1 || num_outputs != 1 || num_scalars != 0 || inputs[0].rank != 2) return 1;
  const int64_t rows = inputs[0].shape[0], cols = inputs[0].shape[1];
  if (rows * cols == 0) return 0;
  const int64_t gx = (cols + 31) / 32, gy = (rows + 7) / 8;
  if (gx > 0x7fffffff || gy > 65535) return 2;
  TransposeNaive<<<dim3(static_cast<unsigned>(gx), static_cast<unsigned>(gy)), dim3(32, 8), 0,
                   static_cast<cudaStream_t>(stream)>>>(static_cast<const float*>(inputs[0].data),
                                                        static_cast<float*>(outputs[0].data), rows, cols);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
