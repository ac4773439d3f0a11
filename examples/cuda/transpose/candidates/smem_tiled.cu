// Transpose through shared memory, so that both the reads of x and the writes of y are
// coalesced.
//
// A block of (TILE / VEC) x BLOCK_ROWS threads moves one TILE x TILE tile: it reads the tile row
// by row (consecutive threads, consecutive addresses), stores it in shared memory, and writes it
// back out row by row of y, reading shared memory down a column. Each thread moves VEC
// consecutive floats of a row per access (float2 or float4: fewer, wider memory instructions and
// more bytes in flight per thread). The tile is padded to TILE + 1 columns so that the column
// reads of a warp spread over the banks.
//
// Wide accesses need every row of x and of y to start on a VEC-float boundary, so they are used
// only when rows and cols are multiples of VEC and both pointers are aligned; otherwise the same
// block shape moves its VEC floats one at a time, with a bound check each.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <cstdint>

#ifndef TILE
#define TILE 32
#endif
#ifndef BLOCK_ROWS
#define BLOCK_ROWS 4
#endif
#ifndef VEC
#define VEC 1
#endif

static_assert(VEC == 1 || VEC == 2 || VEC == 4, "VEC is 1, 2 or 4 floats");
static_assert(TILE % VEC == 0, "TILE must be a multiple of VEC");
static_assert(TILE % BLOCK_ROWS == 0, "TILE must be a multiple of BLOCK_ROWS");
static_assert(TILE / VEC * BLOCK_ROWS <= 1024, "at most 1024 threads per block");

template <int N> struct Vec;
template <> struct Vec<1> { using Type = float; };
template <> struct Vec<2> { using Type = float2; };
template <> struct Vec<4> { using Type = float4; };
using VecT = Vec<VEC>::Type;

template <bool kWide>
__global__ __launch_bounds__(TILE / VEC * BLOCK_ROWS) void Transpose(const float* __restrict__ x,
                                                                     float* __restrict__ y,
                                                                     int64_t rows, int64_t cols) {
  __shared__ float tile[TILE][TILE + 1];
  const int64_t tile_row = static_cast<int64_t>(blockIdx.y) * TILE;  // first row of x
  const int64_t tile_col = static_cast<int64_t>(blockIdx.x) * TILE;  // first column of x
  const int tx = threadIdx.x * VEC;  // this thread's first column within the tile
#pragma unroll
  for (int j = threadIdx.y; j < TILE; j += BLOCK_ROWS) {
    const int64_t r = tile_row + j;
    const int64_t c = tile_col + tx;
    if (kWide) {  // cols is a multiple of VEC, so c < cols means all VEC floats are in range
      if (r < rows && c < cols) {
        const VecT v = *reinterpret_cast<const VecT*>(&x[r * cols + c]);
        const float* e = reinterpret_cast<const float*>(&v);
#pragma unroll
        for (int k = 0; k < VEC; ++k) tile[j][tx + k] = e[k];
      }
    } else {
#pragma unroll
      for (int k = 0; k < VEC; ++k)
        if (r < rows && c + k < cols) tile[j][tx + k] = x[r * cols + c + k];
    }
  }
  __syncthreads();
  // Row `tile_col + j` of y holds column `tile_col + j` of x.
#pragma unroll
  for (int j = threadIdx.y; j < TILE; j += BLOCK_ROWS) {
    const int64_t r = tile_col + j;
    const int64_t c = tile_row + tx;
    if (kWide) {
      if (r < cols && c < rows) {
        VecT v;
        float* e = reinterpret_cast<float*>(&v);
#pragma unroll
        for (int k = 0; k < VEC; ++k) e[k] = tile[tx + k][j];
        *reinterpret_cast<VecT*>(&y[r * rows + c]) = v;
      }
    } else {
#pragma unroll
      for (int k = 0; k < VEC; ++k)
        if (r < cols && c + k < rows) y[r * rows + c + k] = tile[tx + k][j];
    }
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
  const float* x = static_cast<const float*>(inputs[0].data);
  float* y = static_cast<float*>(outputs[0].data);
  const uintptr_t align = sizeof(VecT) - 1;
  const bool wide = rows % VEC == 0 && cols % VEC == 0 && (reinterpret_cast<uintptr_t>(x) & align) == 0 &&
                    (reinterpret_cast<uintptr_t>(y) & align) == 0;
  const dim3 grid(static_cast<unsigned>(grid_x), static_cast<unsigned>(grid_y));
  const dim3 block(TILE / VEC, BLOCK_ROWS);
  if (wide)
    Transpose<true><<<grid, block, 0, static_cast<cudaStream_t>(stream)>>>(x, y, rows, cols);
  else
    Transpose<false><<<grid, block, 0, static_cast<cudaStream_t>(stream)>>>(x, y, rows, cols);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
