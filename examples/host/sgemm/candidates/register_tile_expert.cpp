// SGEMM with a 4 x 16 register tile of C built from 128-bit vectors: the expert kernel of
// `kpilot lineage`'s host test (tests/lineage/host_sgemm walks it back to the naive form).
//
// Full 4 x 16 tiles of C stay in sixteen 128-bit registers for the whole k loop: each step loads
// four vectors of a row of B and four scalars of A and does sixteen vector multiply-adds, so C is
// stored once. The edges (rows past the last full tile, columns past the last full tile) run
// row by row with 128-bit vectors along the row. Each C element sums its k terms in order.
#include <kpilot/kernel.h>

#include <cstring>

namespace {

typedef float v4sf __attribute__((vector_size(16)));

inline v4sf Load4(const float* p) {
  v4sf v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline void Store4(float* p, v4sf v) { std::memcpy(p, &v, sizeof v); }

constexpr int kTileRows = 4;   // rows of C in a register tile
constexpr int kTileVecs = 4;   // 128-bit vectors per row of the tile (16 columns)
constexpr int kTileCols = 4 * kTileVecs;

// C[i0, i0 + 4) x [j0, j0 + 16) = A[i0.., :] * B[:, j0..], accumulated in registers.
inline void Tile(const float* __restrict a, const float* __restrict b, float* __restrict c, int64_t k,
                 int64_t n, int64_t i0, int64_t j0) {
  v4sf acc[kTileRows][kTileVecs] = {};
  for (int64_t p = 0; p < k; ++p) {
    v4sf bv[kTileVecs];
#pragma GCC unroll 4
    for (int v = 0; v < kTileVecs; ++v) bv[v] = Load4(b + p * n + j0 + 4 * v);
#pragma GCC unroll 4
    for (int r = 0; r < kTileRows; ++r) {
      const float av = a[(i0 + r) * k + p];
#pragma GCC unroll 4
      for (int v = 0; v < kTileVecs; ++v) acc[r][v] += av * bv[v];
    }
  }
  for (int r = 0; r < kTileRows; ++r)
    for (int v = 0; v < kTileVecs; ++v) Store4(c + (i0 + r) * n + j0 + 4 * v, acc[r][v]);
}

// Row i of C, columns [j0, n): rank-1 updates along the row, 128-bit vectors then scalars.
inline void Row(const float* __restrict a, const float* __restrict b, float* __restrict c, int64_t k,
                int64_t n, int64_t i, int64_t j0) {
  float* c_row = c + i * n;
  for (int64_t j = j0; j < n; ++j) c_row[j] = 0.0f;
  for (int64_t p = 0; p < k; ++p) {
    const float av = a[i * k + p];
    const float* b_row = b + p * n;
    int64_t j = j0;
    for (; j + 4 <= n; j += 4) Store4(c_row + j, Load4(c_row + j) + av * Load4(b_row + j));
    for (; j < n; ++j) c_row[j] += av * b_row[j];
  }
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
  const int64_t tiled_m = m / kTileRows * kTileRows;
  const int64_t tiled_n = n / kTileCols * kTileCols;
  for (int64_t i0 = 0; i0 < tiled_m; i0 += kTileRows)
    for (int64_t j0 = 0; j0 < tiled_n; j0 += kTileCols) Tile(a, b, c, k, n, i0, j0);
  for (int64_t i = 0; i < m; ++i) Row(a, b, c, k, n, i, i < tiled_m ? tiled_n : 0);
  return 0;
}
