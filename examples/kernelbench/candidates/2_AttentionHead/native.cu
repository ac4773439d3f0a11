/* kpilot-params
BM = [32, 64, 128]
BN = [32, 64, 128]
BK = [8, 16, 32]
TM = [2, 4, 8]
TN = [2, 4, 8]
ROW_BLOCK = [64, 128, 256, 512]
constraints = ["(BM / TM) * (BN / TN) >= 64", "(BM / TM) * (BN / TN) <= 1024"]
*/
// level3/2_AttentionHead: out = softmax(q k^T / sqrt(d_head)) v with q, k, v = x @ W^T,
// x (batch, seq, d_model), q_weight, k_weight, v_weight (d_head, d_model). Unfused on purpose (the
// start of a search): three projection GEMMs into scratch, the batched q k^T GEMM with the scale
// in its epilogue into a (batch, seq, seq) score buffer, a row softmax in place (ROW_BLOCK threads
// a row), and the batched P v GEMM into out. Scratch from cudaMallocAsync on the stream.
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

// Row softmax in place, one block per row: max, sum of expf(x - max), then the scaled values.
__global__ __launch_bounds__(ROW_BLOCK) void SoftmaxRowsInPlace(float* __restrict__ x, int64_t rows,
                                                                int64_t cols) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    float* xr = x + row * cols;
    float m = -INFINITY;
    for (int64_t c = threadIdx.x; c < cols; c += ROW_BLOCK) m = fmaxf(m, xr[c]);
    m = BlockReduce<true>(m);
    float sum = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += ROW_BLOCK) sum += expf(xr[c] - m);
    const float inv = 1.0f / BlockReduce<false>(sum);
    for (int64_t c = threadIdx.x; c < cols; c += ROW_BLOCK) xr[c] = expf(xr[c] - m) * inv;
  }
}

// Writes C[z] (M, N) at c + z * stride_c, times `scale`.
struct StoreScaled {
  float* c;
  int64_t ldc;
  int64_t stride_c;
  float scale;
  __device__ void operator()(int z, int m, int n, float v) const { c[z * stride_c + m * ldc + n] = v * scale; }
};

struct StoreBatched {
  float* c;
  int64_t ldc;
  int64_t stride_c;
  __device__ void operator()(int z, int m, int n, float v) const { c[z * stride_c + m * ldc + n] = v; }
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
  if (num_inputs != 4 || num_outputs != 1 || num_scalars != 0) return 1;
  const kpilot_tensor& xt = inputs[0];
  if (xt.rank != 3) return 2;
  const int64_t B = xt.shape[0], S = xt.shape[1], D = xt.shape[2];
  const int64_t Dh = inputs[1].shape[0];
  for (int i = 1; i < 4; ++i)
    if (inputs[i].rank != 2 || inputs[i].shape[0] != Dh || inputs[i].shape[1] != D) return 2;
  if (B * S * Dh == 0) return 0;
  const float* x = static_cast<const float*>(xt.data);
  float* out = static_cast<float*>(outputs[0].data);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  Scratch scratch(s);
  if (!scratch.Get(static_cast<size_t>(B) * S * (3 * Dh + S))) return 5;
  float* qkv[3] = {scratch.p, scratch.p + B * S * Dh, scratch.p + 2 * B * S * Dh};
  float* scores = scratch.p + 3 * B * S * Dh;
  for (int i = 0; i < 3; ++i) {
    StoreBatched e{qkv[i], Dh, 0};
    const int rc = LaunchGemm<true>(x, static_cast<const float*>(inputs[1 + i].data), B * S, Dh, D, 1, 0,
                                    0, e, s);
    if (rc != 0) return rc;
  }
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(Dh)));
  StoreScaled es{scores, S, S * S, scale};
  int rc = LaunchGemm<true>(qkv[0], qkv[1], S, S, Dh, B, S * Dh, S * Dh, es, s);
  if (rc != 0) return rc;
  SoftmaxRowsInPlace<<<RowBlocks(B * S), ROW_BLOCK, 0, s>>>(scores, B * S, S);
  if (cudaGetLastError() != cudaSuccess) return 3;
  StoreBatched eo{out, Dh, S * Dh};
  return LaunchGemm<false>(scores, qkv[2], S, Dh, S, B, S * S, S * Dh, eo, s);
}
