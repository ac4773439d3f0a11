// SGEMM, cache-blocked and vectorized, across all cores.
//
// C is cut into TILE_M x TILE_N tiles, one OpenMP iteration each. For a tile, k is walked in
// slices of TILE_K so that the TILE_K x TILE_N panel of B it reads stays in cache while every
// row of the tile uses it. The innermost loop runs along a row of C (contiguous in C and B, so it
// vectorizes) and applies UNROLL rank-1 updates per pass, which divides the loads and stores of
// C by UNROLL. Each C element still accumulates its k terms in ascending order.
#include <kpilot/kernel.h>

#ifndef TILE_M
#define TILE_M 32
#endif
#ifndef TILE_N
#define TILE_N 256
#endif
#ifndef TILE_K
#define TILE_K 128
#endif
#ifndef UNROLL
#define UNROLL 4
#endif

static_assert(UNROLL >= 1 && UNROLL <= TILE_K, "UNROLL must be in [1, TILE_K]");

namespace {

inline int64_t Min(int64_t x, int64_t y) { return x < y ? x : y; }

// c[j0, j1) += sum over u < UNROLL of a[u * a_stride] * b[u * n + j] for one row of the tile.
inline void RowUpdate(float* __restrict c, const float* __restrict a, int64_t a_stride,
                      const float* __restrict b, int64_t n, int64_t j0, int64_t j1) {
  float av[UNROLL];
  for (int u = 0; u < UNROLL; ++u) av[u] = a[u * a_stride];
#pragma omp simd
  for (int64_t j = j0; j < j1; ++j) {
    float s = c[j];
#pragma GCC unroll 16
    for (int u = 0; u < UNROLL; ++u) s += av[u] * b[u * n + j];
    c[j] = s;
  }
}

inline void RowUpdateOne(float* __restrict c, float a, const float* __restrict b, int64_t j0,
                         int64_t j1) {
#pragma omp simd
  for (int64_t j = j0; j < j1; ++j) c[j] += a * b[j];
}

}  // namespace

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  (void)stream;
  if (num_inputs != 2 || num_outputs != 1 || num_scalars != 0) return 1;
  if (inputs[0].rank != 2 || inputs[1].rank != 2) return 2;
  const float* a = static_cast<const float*>(inputs[0].data);
  const float* b = static_cast<const float*>(inputs[1].data);
  float* c = static_cast<float*>(outputs[0].data);
  const int64_t m = inputs[0].shape[0];
  const int64_t k = inputs[0].shape[1];
  const int64_t n = inputs[1].shape[1];
  if (inputs[1].shape[0] != k) return 2;

  const int64_t tiles_m = (m + TILE_M - 1) / TILE_M;
  const int64_t tiles_n = (n + TILE_N - 1) / TILE_N;
#pragma omp parallel for collapse(2) schedule(dynamic)
  for (int64_t ti = 0; ti < tiles_m; ++ti) {
    for (int64_t tj = 0; tj < tiles_n; ++tj) {
      const int64_t i0 = ti * TILE_M, i1 = Min(i0 + TILE_M, m);
      const int64_t j0 = tj * TILE_N, j1 = Min(j0 + TILE_N, n);
      for (int64_t i = i0; i < i1; ++i) {
        for (int64_t j = j0; j < j1; ++j) c[i * n + j] = 0.0f;
      }
      for (int64_t p0 = 0; p0 < k; p0 += TILE_K) {
        const int64_t p1 = Min(p0 + TILE_K, k);
        for (int64_t i = i0; i < i1; ++i) {
          float* c_row = c + i * n;
          const float* a_row = a + i * k;
          int64_t p = p0;
          for (; p + UNROLL <= p1; p += UNROLL) RowUpdate(c_row, a_row + p, 1, b + p * n, n, j0, j1);
          for (; p < p1; ++p) RowUpdateOne(c_row, a_row[p], b + p * n, j0, j1);
        }
      }
    }
  }
  return 0;
}
