// Transpose reference: 32x32 tiles through shared memory padded to 33 columns, so both the
// global reads and the global writes are coalesced and the column reads of the tile are
// conflict-free. Blocks of 32x8 threads, each thread moving 4 elements.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

constexpr int kTile = 32;
constexpr int kRows = 8;

__global__ void TransposeTiled(const float* __restrict__ x, float* __restrict__ y, int64_t rows,
                               int64_t cols) {
  __shared__ float tile[kTile][kTile + 1];
  const int64_t c0 = static_cast<int64_t>(blockIdx.x) * kTile;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * kTile;
  for (int j = threadIdx.y; j < kTile; j += kRows) {
    const int64_t r = r0 + j, c = c0 + threadIdx.x;
    if (r < rows && c < cols) tile[j][threadIdx.x] = x[r * cols + c];
  }
  __syncthreads();
  for (int j = threadIdx.y; j < kTile; j += kRows) {
    const int64_t c = c0 + j, r = r0 + threadIdx.x;  // y[c][r] = x[r][c]
    if (c < cols && r < rows) y[c * rows + r] = tile[threadIdx.x][j];
  }
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 1 || num_outputs != 1 || num_scalars != 0 || inputs[0].rank != 2) return 1;
  const int64_t rows = inputs[0].shape[0], cols = inputs[0].shape[1];
  if (rows * cols == 0) return 0;
  const int64_t gx = (cols + kTile - 1) / kTile, gy = (rows + kTile - 1) / kTile;
  if (gx > 0x7fffffff || gy > 65535) return 2;
  TransposeTiled<<<dim3(static_cast<unsigned>(gx), static_cast<unsigned>(gy)), dim3(kTile, kRows), 0,
                   static_cast<cudaStream_t>(stream)>>>(static_cast<const float*>(inputs[0].data),
                                                        static_cast<float*>(outputs[0].data), rows, cols);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
