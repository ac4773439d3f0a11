// SGEMM with grouped (swizzled) tile rasterization for L2 reuse: candidates/register_tiled.cu's
// kernel (shared-memory blocking, TM x TN register tiles, plain f32 FMAs in ascending k order)
// with a one-dimensional grid whose block ids are mapped to output tiles in groups of GROUP_M tile
// rows (the `threadblock-swizzle-l2` card). Each block's tile, and what it computes, is the same
// as in register_tiled.cu; only which blocks run at the same time changes.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <cstdint>

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 16
#endif
#ifndef TM
#define TM 8
#endif
#ifndef TN
#define TN 8
#endif
#ifndef GROUP_M
#define GROUP_M 8  // rows of tiles a group of consecutive blocks sweeps before moving right
#endif
#ifndef MIN_BLOCKS
// Blocks per multiprocessor the register budget must allow. 1 here: the tile mapping keeps two
// more values live than register_tiled.cu, and at 2 (128 registers for 8 x 8 tiles) ptxas spills.
#define MIN_BLOCKS 1
#endif

constexpr int kThreadsN = BN / TN;  // threads along a row of the tile
constexpr int kThreadsM = BM / TM;
constexpr int kThreads = kThreadsM * kThreadsN;
constexpr int kPadA = 4;  // keeps float4 alignment and spreads the transposed stores over banks

static_assert(TM % 4 == 0 && TN % 4 == 0, "TM and TN must be multiples of 4");
static_assert(BM % TM == 0 && BN % TN == 0, "BM, BN must be multiples of TM, TN");
static_assert(kThreads >= 32 && kThreads <= 1024, "threads per block out of range");
static_assert((BM * BK) % kThreads == 0 && (BK * BN) % kThreads == 0,
              "tile loads must divide evenly among the threads");
static_assert((BM * BK + BK * BN + BK * kPadA) * 4 <= 48 * 1024, "static shared memory limit");

__global__ __launch_bounds__(kThreads, MIN_BLOCKS) void Sgemm(const float* __restrict__ a,
                                                  const float* __restrict__ b,
                                                  float* __restrict__ c, int m, int n, int k) {
  __shared__ __align__(16) float a_tile[BK][BM + kPadA];  // a_tile[p][i] = A[row0 + i][k0 + p]
  __shared__ __align__(16) float b_tile[BK][BN];          // b_tile[p][j] = B[k0 + p][col0 + j]

  const int tid = threadIdx.x;
  const int tn = tid % kThreadsN;
  const int tm = tid / kThreadsN;
  // Grouped rasterization: consecutive block ids walk GROUP_M tile rows down one tile column,
  // then the next column, so the blocks resident together share A rows and B columns in L2
  // instead of sweeping a whole row of B tiles each.
  const int tiles_m = (m + BM - 1) / BM;
  const int tiles_n = (n + BN - 1) / BN;
  const int per_group = GROUP_M * tiles_n;
  const int group = static_cast<int>(blockIdx.x) / per_group;
  const int first_m = group * GROUP_M;
  const int group_rows = min(tiles_m - first_m, GROUP_M);
  const int in_group = static_cast<int>(blockIdx.x) % per_group;
  const int tile_m = first_m + in_group % group_rows;
  const int tile_n = in_group / group_rows;
  const int row0 = tile_m * BM;
  const int col0 = tile_n * BN;

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i) {
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
  }

  for (int k0 = 0; k0 < k; k0 += BK) {
#pragma unroll
    for (int l = 0; l < BM * BK / kThreads; ++l) {
      const int e = l * kThreads + tid;
      const int i = e / BK, p = e % BK;
      const int gr = row0 + i, gp = k0 + p;
      a_tile[p][i] = (gr < m && gp < k) ? a[static_cast<int64_t>(gr) * k + gp] : 0.0f;
    }
#pragma unroll
    for (int l = 0; l < BK * BN / kThreads; ++l) {
      const int e = l * kThreads + tid;
      const int p = e / BN, j = e % BN;
      const int gp = k0 + p, gc = col0 + j;
      b_tile[p][j] = (gp < k && gc < n) ? b[static_cast<int64_t>(gp) * n + gc] : 0.0f;
    }
    __syncthreads();

#pragma unroll
    for (int p = 0; p < BK; ++p) {
      float av[TM], bv[TN];
#pragma unroll
      for (int g = 0; g < TM / 4; ++g) {
        const float4 v = *reinterpret_cast<const float4*>(&a_tile[p][4 * (g * kThreadsM + tm)]);
        av[4 * g] = v.x, av[4 * g + 1] = v.y, av[4 * g + 2] = v.z, av[4 * g + 3] = v.w;
      }
#pragma unroll
      for (int g = 0; g < TN / 4; ++g) {
        const float4 v = *reinterpret_cast<const float4*>(&b_tile[p][4 * (g * kThreadsN + tn)]);
        bv[4 * g] = v.x, bv[4 * g + 1] = v.y, bv[4 * g + 2] = v.z, bv[4 * g + 3] = v.w;
      }
#pragma unroll
      for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
      }
    }
    __syncthreads();
  }

  const bool vector_store = n % 4 == 0 && reinterpret_cast<uintptr_t>(c) % 16 == 0;
#pragma unroll
  for (int gi = 0; gi < TM / 4; ++gi) {
#pragma unroll
    for (int ii = 0; ii < 4; ++ii) {
      const int row = row0 + 4 * (gi * kThreadsM + tm) + ii;
      if (row >= m) continue;
      float* c_row = c + static_cast<int64_t>(row) * n;
#pragma unroll
      for (int gj = 0; gj < TN / 4; ++gj) {
        const int col = col0 + 4 * (gj * kThreadsN + tn);
        const int i = 4 * gi + ii, j = 4 * gj;
        if (vector_store && col + 3 < n) {
          *reinterpret_cast<float4*>(c_row + col) =
              make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
        } else {
#pragma unroll
          for (int jj = 0; jj < 4; ++jj) {
            if (col + jj < n) c_row[col + jj] = acc[i][j + jj];
          }
        }
      }
    }
  }
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 2 || num_outputs != 1 || num_scalars != 0) return 1;
  if (inputs[0].rank != 2 || inputs[1].rank != 2) return 2;
  const int64_t m = inputs[0].shape[0];
  const int64_t k = inputs[0].shape[1];
  const int64_t n = inputs[1].shape[1];
  if (inputs[1].shape[0] != k) return 2;
  // 32-bit indices inside the kernel: each extent, and each row offset, fits in int.
  if (m > (1 << 30) || n > (1 << 30) || k > (1 << 30)) return 2;
  if (m * n == 0) return 0;
  const int64_t tiles = ((n + BN - 1) / BN) * ((m + BM - 1) / BM);
  if (tiles > 0x7fffffff) return 2;
  Sgemm<<<static_cast<unsigned>(tiles), kThreads, 0,
          static_cast<cudaStream_t>(stream)>>>(static_cast<const float*>(inputs[0].data),
                                               static_cast<const float*>(inputs[1].data),
                                               static_cast<float*>(outputs[0].data),
                                               static_cast<int>(m), static_cast<int>(n),
                                               static_cast<int>(k));
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
