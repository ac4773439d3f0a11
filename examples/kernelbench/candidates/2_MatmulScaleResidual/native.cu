/* kpilot-params
BM = [32, 64, 128]
BN = [32, 64, 128]
BK = [8, 16, 32]
TM = [2, 4, 8]
TN = [2, 4, 8]
constraints = ["(BM / TM) * (BN / TN) >= 64", "(BM / TM) * (BN / TN) <= 1024"]
*/
// level2/2_MatmulScaleResidual: out = (A @ B) * scale + residual, A (M, K), B (K, N),
// residual (M, N), scale a scalar (f64, used as f32 as torch does). One kernel: the register-tiled
// GEMM with the scale and the residual applied to the accumulator before the only store (the
// product is rounded to f32 before scaling, as in the reference).
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <climits>
#include <cmath>
#include <cstdint>

#ifndef BM
#define BM 64
#endif
#ifndef BN
#define BN 64
#endif
#ifndef BK
#define BK 16
#endif
#ifndef TM
#define TM 4
#endif
#ifndef TN
#define TN 4
#endif

constexpr int kGemmThreads = (BM / TM) * (BN / TN);
static_assert(BM % TM == 0 && BN % TN == 0, "TM divides BM, TN divides BN");
static_assert(kGemmThreads >= 32 && kGemmThreads <= 1024, "(BM / TM) * (BN / TN): 32 to 1024 threads");

// C[z][m][n] = epi(z, m, n, sum_k A[z][m][k] * B[z][k][n]) with A row-major (M, K) and B row-major
// (K, N), or (N, K) when TRANS_B (a Linear's weight). A BM x BN tile of C per block, k in BK-wide
// slices staged in shared memory (both operands stored k-major, rows padded by 4 floats), a TM x TN
// register tile per thread, f32 FMAs in k order. Out-of-range elements load as 0.
template <bool TRANS_B, class Epi>
__global__ __launch_bounds__(kGemmThreads) void Gemm(const float* __restrict__ A,
                                                     const float* __restrict__ B, int M, int N, int K,
                                                     int64_t stride_a, int64_t stride_b, Epi epi) {
  __shared__ __align__(16) float As[BK][BM + 4];
  __shared__ __align__(16) float Bs[BK][BN + 4];
  const int tid = threadIdx.x;
  const int tx = tid % (BN / TN), ty = tid / (BN / TN);
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  A += blockIdx.z * stride_a;
  B += blockIdx.z * stride_b;
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int i = tid; i < BM * BK; i += kGemmThreads) {
      const int mm = i / BK, kk = i % BK;
      const int gm = m0 + mm, gk = k0 + kk;
      As[kk][mm] = (gm < M && gk < K) ? A[static_cast<int64_t>(gm) * K + gk] : 0.0f;
    }
    for (int i = tid; i < BN * BK; i += kGemmThreads) {
      if constexpr (TRANS_B) {
        const int nn = i / BK, kk = i % BK;
        const int gn = n0 + nn, gk = k0 + kk;
        Bs[kk][nn] = (gn < N && gk < K) ? B[static_cast<int64_t>(gn) * K + gk] : 0.0f;
      } else {
        const int kk = i / BN, nn = i % BN;
        const int gn = n0 + nn, gk = k0 + kk;
        Bs[kk][nn] = (gn < N && gk < K) ? B[static_cast<int64_t>(gk) * N + gn] : 0.0f;
      }
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      float a[TM], b[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) a[i] = As[kk][ty * TM + i];
#pragma unroll
      for (int j = 0; j < TN; ++j) b[j] = Bs[kk][tx * TN + j];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int m = m0 + ty * TM + i;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int n = n0 + tx * TN + j;
      if (m < M && n < N) epi(blockIdx.z, m, n, acc[i][j]);
    }
  }
}

namespace {

// Launches Gemm over `batch` independent products on `s`; 0, or 3/4 on a launch error/too big.
template <bool TRANS_B, class Epi>
int LaunchGemm(const float* A, const float* B, int64_t M, int64_t N, int64_t K, int64_t batch,
               int64_t stride_a, int64_t stride_b, Epi epi, cudaStream_t s) {
  if (M == 0 || N == 0 || batch == 0) return 0;
  if (M > INT_MAX || N > INT_MAX || K > INT_MAX) return 4;
  const int64_t gy = (M + BM - 1) / BM;
  if (gy > 65535 || batch > 65535) return 4;
  const dim3 grid(static_cast<unsigned>((N + BN - 1) / BN), static_cast<unsigned>(gy),
                  static_cast<unsigned>(batch));
  Gemm<TRANS_B, Epi><<<grid, kGemmThreads, 0, s>>>(A, B, static_cast<int>(M), static_cast<int>(N),
                                                   static_cast<int>(K), stride_a, stride_b, epi);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}

}  // namespace

struct ScaleResidual {
  float* c;
  const float* residual;
  float scale;
  int64_t ldc;
  __device__ void operator()(int, int m, int n, float v) const {
    const int64_t i = m * ldc + n;
    c[i] = v * scale + residual[i];
  }
};

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  if (num_inputs != 3 || num_outputs != 1 || num_scalars != 1) return 1;
  const kpilot_tensor& a = inputs[0];
  const kpilot_tensor& b = inputs[1];
  const kpilot_tensor& r = inputs[2];
  if (a.rank != 2 || b.rank != 2 || a.shape[1] != b.shape[0]) return 2;
  const int64_t M = a.shape[0], K = a.shape[1], N = b.shape[1];
  if (kpilot_numel(&r) != M * N) return 2;
  const double scale = scalars[0].dtype == KPILOT_F64 || scalars[0].dtype == KPILOT_F32
                           ? scalars[0].value.f
                           : static_cast<double>(scalars[0].value.i);
  ScaleResidual epi{static_cast<float*>(outputs[0].data), static_cast<const float*>(r.data),
                    static_cast<float>(scale), N};
  return LaunchGemm<false>(static_cast<const float*>(a.data), static_cast<const float*>(b.data), M, N,
                           K, 1, 0, 0, epi, static_cast<cudaStream_t>(stream));
}
