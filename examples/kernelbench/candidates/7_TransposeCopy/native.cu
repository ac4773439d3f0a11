/* kpilot-params
TILE = [16, 32, 64]
BLOCK_ROWS = [2, 4, 8, 16, 32]
PAD = [0, 1]
constraints = ["BLOCK_ROWS <= TILE", "TILE * BLOCK_ROWS >= 64", "TILE * BLOCK_ROWS <= 1024"]
*/
// level1/7_TransposeCopy: out (cols, rows) = x (rows, cols) transposed (f32, bit-exact).
//
// TILE x TILE tiles through shared memory: a block of TILE x BLOCK_ROWS threads reads its tile
// row by row (coalesced), then writes the transposed tile row by row (coalesced). PAD = 1 pads
// each shared row by one float so the column reads hit 32 different banks; PAD = 0 shows the
// bank conflicts. Edge tiles are bounds-checked; any rows and cols.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <cstdint>

#ifndef TILE
#define TILE 32
#endif
#ifndef BLOCK_ROWS
#define BLOCK_ROWS 8
#endif
#ifndef PAD
#define PAD 1
#endif

static_assert(BLOCK_ROWS <= TILE && TILE % BLOCK_ROWS == 0, "BLOCK_ROWS divides TILE");
static_assert(TILE * BLOCK_ROWS <= 1024, "at most 1024 threads");

__global__ __launch_bounds__(TILE * BLOCK_ROWS) void Transpose(const float* __restrict__ x,
                                                               float* __restrict__ y, int64_t rows,
                                                               int64_t cols) {
  __shared__ float tile[TILE][TILE + PAD];
  const int tx = threadIdx.x % TILE, ty = threadIdx.x / TILE;
  const int64_t c = static_cast<int64_t>(blockIdx.x) * TILE + tx;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * TILE;
#pragma unroll
  for (int j = ty; j < TILE; j += BLOCK_ROWS) {
    const int64_t r = r0 + j;
    if (r < rows && c < cols) tile[j][tx] = x[r * cols + c];
  }
  __syncthreads();
  // out[c'][r'] = x[r'][c']: this block writes rows c' of out from blockIdx.x's tile.
  const int64_t out_c = r0 + tx;  // a column of out = a row of x
  const int64_t out_r0 = static_cast<int64_t>(blockIdx.x) * TILE;
#pragma unroll
  for (int j = ty; j < TILE; j += BLOCK_ROWS) {
    const int64_t out_r = out_r0 + j;
    if (out_r < cols && out_c < rows) y[out_r * rows + out_c] = tile[tx][j];
  }
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 1 || num_outputs != 1 || num_scalars != 0) return 1;
  if (inputs[0].rank != 2 || outputs[0].rank != 2) return 2;
  const int64_t rows = inputs[0].shape[0], cols = inputs[0].shape[1];
  if (outputs[0].shape[0] != cols || outputs[0].shape[1] != rows) return 2;
  if (rows == 0 || cols == 0) return 0;
  const int64_t grid_y = (rows + TILE - 1) / TILE;
  if (grid_y > 65535) return 4;
  const dim3 grid(static_cast<unsigned>((cols + TILE - 1) / TILE), static_cast<unsigned>(grid_y));
  Transpose<<<grid, TILE * BLOCK_ROWS, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<float*>(outputs[0].data), rows, cols);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
