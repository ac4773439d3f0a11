// SGEMM with shared-memory blocking and register tiling, every tile size a -D param: the space
// `kpilot sweep` evaluates (bench/spaces/sgemm_space/task.toml lists the params and constraints).
// Generalizes examples/cuda/sgemm/candidates/register_tiled.cu to TM, TN of 2 as well as 4 and 8.
//
// A block computes a BM x BN tile of C. For each BK-wide slice of k it copies the A slice
// (stored transposed, k-major, padded by 4 columns) and the B slice into shared memory; then each
// thread, for every k in the slice, reads TM values of A and TN values of B as vectors of VM = min(TM, 4)
// and VN = min(TN, 4) floats and does TM * TN FMAs into registers. A thread's rows are groups of VM
// consecutive rows, interleaved across threads (group g of thread t starts at VM * (g * threads_m + t)),
// and likewise its columns in groups of VN, so a warp's vector reads of B are consecutive.
// Each C element accumulates its k terms in ascending order with f32 FMAs, like the reference.
// Out-of-range elements of partial tiles load as zeros and are not stored, so any shape works.
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
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif

constexpr int kThreadsN = BN / TN;  // threads along a row of the tile
constexpr int kThreadsM = BM / TM;
constexpr int kThreads = kThreadsM * kThreadsN;
constexpr int kVecM = TM < 4 ? TM : 4;  // floats per shared-memory read of A
constexpr int kVecN = TN < 4 ? TN : 4;  // and of B, and per store of C
constexpr int kPadA = 4;                // keeps 16-byte alignment and spreads the transposed stores

static_assert(TM == 2 || TM == 4 || TM == 8, "TM must be 2, 4 or 8");
static_assert(TN == 2 || TN == 4 || TN == 8, "TN must be 2, 4 or 8");
static_assert(BM % TM == 0 && BN % TN == 0, "BM, BN must be multiples of TM, TN");
static_assert(BM % 4 == 0 && BN % 4 == 0, "BM, BN must be multiples of 4 (16-byte shared rows)");
static_assert(kThreads >= 32 && kThreads <= 1024, "threads per block out of range");
static_assert((BM * BK) % kThreads == 0 && (BK * BN) % kThreads == 0,
              "tile loads must divide evenly among the threads");
static_assert((BK * (BM + kPadA) + BK * BN) * 4 <= 48 * 1024, "static shared memory limit");

// V consecutive floats from shared memory (16-byte aligned for V = 4, 8-byte for V = 2).
template <int V>
__device__ __forceinline__ void LoadVec(const float* src, float* dst) {
  if constexpr (V == 4) {
    const float4 v = *reinterpret_cast<const float4*>(src);
    dst[0] = v.x, dst[1] = v.y, dst[2] = v.z, dst[3] = v.w;
  } else {
    const float2 v = *reinterpret_cast<const float2*>(src);
    dst[0] = v.x, dst[1] = v.y;
  }
}

__global__ __launch_bounds__(kThreads, MIN_BLOCKS) void TiledSgemm(const float* __restrict__ a,
                                                                   const float* __restrict__ b,
                                                                   float* __restrict__ c, int m, int n, int k) {
  __shared__ __align__(16) float a_tile[BK][BM + kPadA];  // a_tile[p][i] = A[row0 + i][k0 + p]
  __shared__ __align__(16) float b_tile[BK][BN];          // b_tile[p][j] = B[k0 + p][col0 + j]

  const int tid = threadIdx.x;
  const int tn = tid % kThreadsN;
  const int tm = tid / kThreadsN;
  const int row0 = blockIdx.y * BM;
  const int col0 = blockIdx.x * BN;

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
      for (int g = 0; g < TM / kVecM; ++g) LoadVec<kVecM>(&a_tile[p][kVecM * (g * kThreadsM + tm)], &av[kVecM * g]);
#pragma unroll
      for (int g = 0; g < TN / kVecN; ++g) LoadVec<kVecN>(&b_tile[p][kVecN * (g * kThreadsN + tn)], &bv[kVecN * g]);
#pragma unroll
      for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
      }
    }
    __syncthreads();
  }

  // Vector stores need the row start aligned: n a multiple of kVecN and an aligned c.
  const bool vector_store = n % kVecN == 0 && reinterpret_cast<uintptr_t>(c) % (4 * kVecN) == 0;
#pragma unroll
  for (int gi = 0; gi < TM / kVecM; ++gi) {
#pragma unroll
    for (int ii = 0; ii < kVecM; ++ii) {
      const int row = row0 + kVecM * (gi * kThreadsM + tm) + ii;
      if (row >= m) continue;
      float* c_row = c + static_cast<int64_t>(row) * n;
      const int i = kVecM * gi + ii;
#pragma unroll
      for (int gj = 0; gj < TN / kVecN; ++gj) {
        const int col = col0 + kVecN * (gj * kThreadsN + tn);
        const int j = kVecN * gj;
        if (vector_store && col + kVecN - 1 < n) {
          if constexpr (kVecN == 4)
            *reinterpret_cast<float4*>(c_row + col) = make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
          else
            *reinterpret_cast<float2*>(c_row + col) = make_float2(acc[i][j], acc[i][j + 1]);
        } else {
#pragma unroll
          for (int jj = 0; jj < kVecN; ++jj) {
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
  const int64_t grid_x = (n + BN - 1) / BN;
  const int64_t grid_y = (m + BM - 1) / BM;
  if (grid_y > 65535) return 2;
  TiledSgemm<<<dim3(static_cast<unsigned>(grid_x), static_cast<unsigned>(grid_y)), kThreads, 0,
               static_cast<cudaStream_t>(stream)>>>(static_cast<const float*>(inputs[0].data),
                                                    static_cast<const float*>(inputs[1].data),
                                                    static_cast<float*>(outputs[0].data), static_cast<int>(m),
                                                    static_cast<int>(n), static_cast<int>(k));
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
