// Transpose through shared memory with a persistent grid: candidates/smem_tiled.cu's tile move
// (TILE x TILE tiles through a shared tile padded by one column; coalesced reads of x and writes
// of y, VEC floats per access where rows, cols and pointers allow it), but the grid is one
// resident wave — SMs x the blocks per SM the occupancy calculator allows — and each block loops
// over tiles with a static round-robin schedule (the `persistent-kernel` card). Tiles are
// independent and no block waits for another, so any grid size is correct; the block's shared
// tile is reused by its next tile after a barrier.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <cstdint>

#ifndef TILE
#define TILE 32
#endif
#ifndef BLOCK_ROWS
#define BLOCK_ROWS 8
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
constexpr int kThreads = TILE / VEC * BLOCK_ROWS;

template <bool kWide>
__global__ __launch_bounds__(kThreads) void TransposePersistent(const float* __restrict__ x, float* __restrict__ y,
                                                                int64_t rows, int64_t cols, int64_t tiles_x,
                                                                int64_t tiles) {
  __shared__ float tile[TILE][TILE + 1];
  const int tx = threadIdx.x * VEC;  // this thread's first column within the tile
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t tile_row = (t / tiles_x) * TILE;  // first row of x
    const int64_t tile_col = (t % tiles_x) * TILE;  // first column of x
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
    __syncthreads();  // the next tile overwrites `tile`
  }
}

namespace {

// SMs x resident blocks per SM for this kernel: one full wave. Device properties, not results,
// so they are safe to keep between calls (one per instantiation: their register counts differ).
template <bool kWide>
int64_t OneWave() {
  static int64_t wave = 0;
  if (wave == 0) {
    int device = 0, sms = 0, per_sm = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, TransposePersistent<kWide>, kThreads, 0) !=
            cudaSuccess ||
        sms <= 0 || per_sm <= 0) {
      (void)cudaGetLastError();
      return 132;
    }
    wave = static_cast<int64_t>(sms) * per_sm;
  }
  return wave;
}

template <bool kWide>
int Launch(const float* x, float* y, int64_t rows, int64_t cols, cudaStream_t stream) {
  const int64_t tiles_x = (cols + TILE - 1) / TILE;
  const int64_t tiles = tiles_x * ((rows + TILE - 1) / TILE);
  int64_t grid = OneWave<kWide>();
  if (grid > tiles) grid = tiles;
  if (grid > 0x7fffffff) grid = 0x7fffffff;
  TransposePersistent<kWide><<<static_cast<unsigned>(grid), dim3(TILE / VEC, BLOCK_ROWS), 0, stream>>>(
      x, y, rows, cols, tiles_x, tiles);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}

}  // namespace

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 1 || num_outputs != 1 || num_scalars != 0) return 1;
  if (inputs[0].rank != 2) return 2;
  const int64_t rows = inputs[0].shape[0];
  const int64_t cols = inputs[0].shape[1];
  if (rows * cols == 0) return 0;
  const float* x = static_cast<const float*>(inputs[0].data);
  float* y = static_cast<float*>(outputs[0].data);
  const uintptr_t align = sizeof(VecT) - 1;
  const bool wide = rows % VEC == 0 && cols % VEC == 0 && (reinterpret_cast<uintptr_t>(x) & align) == 0 &&
                    (reinterpret_cast<uintptr_t>(y) & align) == 0;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  return wide ? Launch<true>(x, y, rows, cols, s) : Launch<false>(x, y, rows, cols, s);
}
