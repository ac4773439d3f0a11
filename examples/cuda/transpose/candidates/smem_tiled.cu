// Transpose through shared memory, so that both the reads of x and the writes of y are
// coalesced.
//
// A block of TILE x BLOCK_ROWS threads moves one TILE x TILE tile: it reads the tile row by row
// (consecutive threads, consecutive addresses), stores it in shared memory, and writes it back
// out row by row of y, reading shared memory down a column. The tile is padded to TILE + 1
// columns so that the column reads of a warp fall in 32 different banks.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#ifndef TILE
#define TILE 32
#endif
#ifndef BLOCK_ROWS
#define BLOCK_ROWS 4
#endif

static_assert(TILE % BLOCK_ROWS == 0, "TILE must be a multiple of BLOCK_ROWS");
static_assert(TILE * BLOCK_ROWS <= 1024, "at most 1024 threads per block");

__global__ __launch_bounds__(TILE * BLOCK_ROWS) void Transpose(const float* __restrict__ x,
                                                               float* __restrict__ y,
                                                               int64_t rows, int64_t cols) {
  __shared__ float tile[TILE][TILE + 1];
  const int64_t tile_row = static_cast<int64_t>(blockIdx.y) * TILE;  // first row of x
  const int64_t tile_col = static_cast<int64_t>(blockIdx.x) * TILE;  // first column of x
  const int tx = threadIdx.x;
#pragma unroll
  for (int j = threadIdx.y; j < TILE; j += BLOCK_ROWS) {
    const int64_t r = tile_row + j;
    const int64_t c = tile_col + tx;
    if (r < rows && c < cols) tile[j][tx] = x[r * cols + c];
  }
  __syncthreads();
  // Row `tile_col + j` of y holds column `tile_col + j` of x.
#pragma unroll
  for (int j = threadIdx.y; j < TILE; j += BLOCK_ROWS) {
    const int64_t r = tile_col + j;
    const int64_t c = tile_row + tx;
    if (r < cols && c < rows) y[r * rows + c] = tile[tx][j];
  }
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
  const int64_t grid_x = (cols + TILE - 1) / TILE;
  const int64_t grid_y = (rows + TILE - 1) / TILE;
  if (grid_x > 0x7fffffff || grid_y > 65535) return 2;
  Transpose<<<dim3(static_cast<unsigned>(grid_x), static_cast<unsigned>(grid_y)),
              dim3(TILE, BLOCK_ROWS), 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<float*>(outputs[0].data), rows, cols);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
