/* kpilot-params
BM = [32, 64, 128]
BN = [32, 64, 128]
BK = [8, 16, 32]
TM = [2, 4, 8]
TN = [2, 4, 8]
ROW_BLOCK = [64, 128, 256, 512]
constraints = ["(BM / TM) * (BN / TN) >= 64", "(BM / TM) * (BN / TN) <= 1024"]
*/
// level3/1_MLPBlock: out = x + fc2(gelu_tanh(fc1(layernorm(x)))), x (tokens, hidden).
// Inputs: x, norm_weight, norm_bias, fc1_weight (ffn, hidden), fc1_bias, fc2_weight (hidden, ffn),
// fc2_bias. Three kernels on the stream: LayerNorm rows into scratch (ROW_BLOCK threads a row);
// fc1 as the register-tiled GEMM with bias + GELU (tanhf) applied before its store; fc2 as the same
// GEMM with bias + the residual x applied before the store to out. Scratch (tokens x (hidden + ffn)
// floats) comes from cudaMallocAsync on the stream and is freed on it.
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

#ifndef ROW_BLOCK
#define ROW_BLOCK 256
#endif
static_assert(ROW_BLOCK % 32 == 0 && ROW_BLOCK >= 32 && ROW_BLOCK <= 1024, "ROW_BLOCK: a multiple of 32");

// Reduces over the block (ROW_BLOCK threads); every thread gets the result. Safe to call repeatedly.
template <bool MAX>
__device__ __forceinline__ float BlockReduce(float v) {
  __shared__ float partial[ROW_BLOCK / 32];
  __shared__ float result;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = MAX ? fmaxf(v, w) : v + w;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < ROW_BLOCK / 32 ? partial[lane] : (MAX ? partial[0] : 0.0f);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float w = __shfl_xor_sync(0xffffffffu, v, o);
      v = MAX ? fmaxf(v, w) : v + w;
    }
    if (lane == 0) result = v;
  }
  __syncthreads();
  const float r = result;
  __syncthreads();
  return r;
}

// y = LayerNorm(x) per row (two-pass mean and variance, eps 1e-5), one block per row.
__global__ __launch_bounds__(ROW_BLOCK) void LayerNormRows(const float* __restrict__ x,
                                                           const float* __restrict__ gamma,
                                                           const float* __restrict__ beta,
                                                           float* __restrict__ y, int64_t rows,
                                                           int64_t cols) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* xr = x + row * cols;
    float* yr = y + row * cols;
    float sum = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += ROW_BLOCK) sum += xr[c];
    const float mean = BlockReduce<false>(sum) / static_cast<float>(cols);
    float sq = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += ROW_BLOCK) sq += (xr[c] - mean) * (xr[c] - mean);
    const float inv_std = rsqrtf(BlockReduce<false>(sq) / static_cast<float>(cols) + 1e-5f);
    for (int64_t c = threadIdx.x; c < cols; c += ROW_BLOCK)
      yr[c] = (xr[c] - mean) * inv_std * gamma[c] + beta[c];
  }
}

struct BiasGelu {
  float* c;
  const float* bias;
  int64_t ldc;
  __device__ void operator()(int, int m, int n, float v) const {
    v += bias[n];
    const float k0 = 0.7978845608028654f, k1 = 0.044715f;
    c[m * ldc + n] = 0.5f * v * (1.0f + tanhf(k0 * (v + k1 * v * v * v)));
  }
};

struct BiasResidual {
  float* c;
  const float* bias;
  const float* residual;
  int64_t ldc;
  __device__ void operator()(int, int m, int n, float v) const {
    const int64_t i = m * ldc + n;
    c[i] = residual[i] + (v + bias[n]);
  }
};

namespace {

// Stream-ordered scratch, freed on the same stream at the end of the call (no state kept).
struct Scratch {
  cudaStream_t s;
  float* p = nullptr;
  explicit Scratch(cudaStream_t stream) : s(stream) {}
  bool Get(size_t floats) {
    return cudaMallocAsync(reinterpret_cast<void**>(&p), (floats > 0 ? floats : 1) * sizeof(float), s) ==
           cudaSuccess;
  }
  ~Scratch() {
    if (p != nullptr) cudaFreeAsync(p, s);
  }
};

unsigned RowBlocks(int64_t rows) { return static_cast<unsigned>(rows < INT_MAX ? rows : INT_MAX); }

}  // namespace

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 7 || num_outputs != 1 || num_scalars != 0) return 1;
  const kpilot_tensor& xt = inputs[0];
  const kpilot_tensor& w1 = inputs[3];
  const kpilot_tensor& w2 = inputs[5];
  if (xt.rank < 1 || w1.rank != 2 || w2.rank != 2) return 2;
  const int64_t H = xt.shape[xt.rank - 1], F = w1.shape[0];
  if (w1.shape[1] != H || w2.shape[0] != H || w2.shape[1] != F) return 2;
  if (kpilot_numel(&inputs[1]) != H || kpilot_numel(&inputs[2]) != H ||
      kpilot_numel(&inputs[4]) != F || kpilot_numel(&inputs[6]) != H)
    return 2;
  const int64_t T = H == 0 ? 0 : kpilot_numel(&xt) / H;
  if (T == 0 || H == 0) return 0;
  const float* x = static_cast<const float*>(xt.data);
  float* out = static_cast<float*>(outputs[0].data);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  Scratch scratch(s);
  if (!scratch.Get(static_cast<size_t>(T) * (H + F))) return 5;
  float* normed = scratch.p;
  float* hidden = scratch.p + T * H;
  LayerNormRows<<<RowBlocks(T), ROW_BLOCK, 0, s>>>(x, static_cast<const float*>(inputs[1].data),
                                                   static_cast<const float*>(inputs[2].data), normed, T, H);
  if (cudaGetLastError() != cudaSuccess) return 3;
  BiasGelu e1{hidden, static_cast<const float*>(inputs[4].data), F};
  int rc = LaunchGemm<true>(normed, static_cast<const float*>(w1.data), T, F, H, 1, 0, 0, e1, s);
  if (rc != 0) return rc;
  BiasResidual e2{out, static_cast<const float*>(inputs[6].data), x, H};
  return LaunchGemm<true>(hidden, static_cast<const float*>(w2.data), T, H, F, 1, 0, 0, e2, s);
}
