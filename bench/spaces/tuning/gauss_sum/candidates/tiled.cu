// Gaussian kernel sum with several targets per thread and optional shared-memory staging of the
// sources, every choice a -D param (task.toml lists them): a tuning space for the search.
//
// A block of BLOCK threads handles BLOCK*ITEMS targets; thread t holds targets t + k*BLOCK in
// registers. With SMEM the block walks the sources TILE at a time: it copies a tile's x, y and
// weight into shared memory, then every thread runs over it; without it every thread reads the
// sources through the read-only cache. Each target sums its sources in ascending order, as the
// reference does, with expf.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <cstdint>

#ifndef BLOCK
#define BLOCK 128
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef SMEM
#define SMEM 0
#endif
#ifndef TILE
#define TILE 32
#endif
#ifndef UNROLL
#define UNROLL 1
#endif

constexpr int kUnroll = UNROLL;  // a #pragma takes no macro, but takes a constant
static_assert(BLOCK >= 32 && BLOCK <= 1024, "threads per block out of range");

template <int N>
__device__ __forceinline__ void Accumulate(const float (&px)[N], const float (&py)[N], float (&acc)[N], float x,
                                           float y, float w) {
#pragma unroll
  for (int k = 0; k < N; ++k) {
    const float dx = px[k] - x, dy = py[k] - y;
    acc[k] += w * expf(-(dx * dx + dy * dy));
  }
}

__global__ __launch_bounds__(BLOCK) void GaussSumTiled(const float* __restrict__ tx, const float* __restrict__ ty,
                                                       const float* __restrict__ sx, const float* __restrict__ sy,
                                                       const float* __restrict__ sw, float* __restrict__ out, int n,
                                                       int m) {
  const int base = blockIdx.x * (BLOCK * ITEMS) + threadIdx.x;
  float px[ITEMS], py[ITEMS], acc[ITEMS];
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    const int i = base + k * BLOCK;
    px[k] = i < n ? tx[i] : 0.0f;
    py[k] = i < n ? ty[i] : 0.0f;
    acc[k] = 0.0f;
  }
#if SMEM
  __shared__ float tile_x[TILE], tile_y[TILE], tile_w[TILE];
  for (int j0 = 0; j0 < m; j0 += TILE) {
    const int len = m - j0 < TILE ? m - j0 : TILE;
    __syncthreads();
    for (int e = threadIdx.x; e < len; e += BLOCK) {
      tile_x[e] = sx[j0 + e];
      tile_y[e] = sy[j0 + e];
      tile_w[e] = sw[j0 + e];
    }
    __syncthreads();
    if (len == TILE) {
#pragma unroll kUnroll
      for (int j = 0; j < TILE; ++j) Accumulate(px, py, acc, tile_x[j], tile_y[j], tile_w[j]);
    } else {
      for (int j = 0; j < len; ++j) Accumulate(px, py, acc, tile_x[j], tile_y[j], tile_w[j]);
    }
  }
#else
#pragma unroll kUnroll
  for (int j = 0; j < m; ++j) Accumulate(px, py, acc, __ldg(sx + j), __ldg(sy + j), __ldg(sw + j));
#endif
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    const int i = base + k * BLOCK;
    if (i < n) out[i] = acc[k];
  }
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 5 || num_outputs != 1 || num_scalars != 0) return 1;
  const int64_t n = inputs[0].shape[0], m = inputs[2].shape[0];
  if (n > (1 << 30) || m > (1 << 30)) return 2;
  if (n == 0) return 0;
  const int64_t blocks = (n + BLOCK * ITEMS - 1) / (BLOCK * ITEMS);
  GaussSumTiled<<<static_cast<unsigned>(blocks), BLOCK, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<const float*>(inputs[1].data),
      static_cast<const float*>(inputs[2].data), static_cast<const float*>(inputs[3].data),
      static_cast<const float*>(inputs[4].data), static_cast<float*>(outputs[0].data), static_cast<int>(n),
      static_cast<int>(m));
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
