/* kpilot-params
BM = [32, 64, 128]
BN = [32, 64, 128]
BK = [8, 16, 32]
TM = [2, 4, 8]
TN = [2, 4, 8]
ROW_BLOCK = [64, 128, 256, 512]
BQ = [32, 64]
SPLITK = [2, 4]
TK = [32, 64]
constraints = ["(BM / TM) * (BN / TN) >= 64", "(BM / TM) * (BN / TN) <= 1024", "SPLITK * BQ <= 2 * TK", "SPLITK * BQ <= 256"]
*/
// level3/2_AttentionHead: the attention fused into one kernel (no score buffer).
//
// native.cu writes and reads a (batch, seq, seq) score buffer (32 MB at the problem's shape) and
// launches a softmax between two batched GEMMs. Here, after the three projection GEMMs (as in
// native.cu), one kernel does softmax(q k^T * scale) v flash-style for d_head = 64: a block takes BQ
// queries of one batch entry with BQ * SPLITK threads; K and V tiles of TK keys go through shared
// memory; thread (query, group g) keeps its query and a 64-float accumulator in registers, scores
// keys g, g + SPLITK, ... of each tile (every lane of a warp reads the same key: broadcast), and
// keeps a running max and sum (online softmax, one rescale per tile). The SPLITK partial results of
// a query are merged through shared memory at the end. Other d_head values take native.cu's
// unfused path. Accurate expf; f32 throughout.
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


#ifndef BQ
#define BQ 32
#endif
#ifndef SPLITK
#define SPLITK 4
#endif
#ifndef TK
#define TK 64
#endif

constexpr int kHead = 64;  // d_head of the fused kernel
constexpr int kFlashThreads = BQ * SPLITK;
static_assert(BQ % 32 == 0, "BQ: a multiple of 32 (a warp shares one key group)");
static_assert(TK % SPLITK == 0, "SPLITK divides TK");
static_assert(SPLITK * BQ <= 2 * TK, "the merge buffer fits in the K and V tiles");
static_assert(kHead % SPLITK == 0 && (kHead / SPLITK) % 4 == 0, "merge: whole float4s per thread");

// q, k, v: (batch * seq, 64) row-major; out: (batch, seq, 64).
__global__ __launch_bounds__(kFlashThreads) void FlashAttention64(const float* __restrict__ q,
                                                                  const float* __restrict__ k,
                                                                  const float* __restrict__ v,
                                                                  float* __restrict__ out, int64_t seq,
                                                                  float scale) {
  __shared__ __align__(16) float tiles[2 * TK * kHead];  // K tile, V tile; reused by the merge
  __shared__ float m_part[SPLITK][BQ], l_part[SPLITK][BQ];
  float* k_tile = tiles;
  float* v_tile = tiles + TK * kHead;
  const int tid = threadIdx.x;
  const int qi = tid % BQ, g = tid / BQ;
  const int64_t b = blockIdx.y;
  const int64_t query = static_cast<int64_t>(blockIdx.x) * BQ + qi;
  const bool live = query < seq;
  const float* kb = k + b * seq * kHead;
  const float* vb = v + b * seq * kHead;

  float qr[kHead], acc[kHead];
  {
    const float4* qp = reinterpret_cast<const float4*>(q + (b * seq + (live ? query : 0)) * kHead);
#pragma unroll
    for (int d = 0; d < kHead / 4; ++d) {
      const float4 t = qp[d];
      qr[4 * d] = t.x, qr[4 * d + 1] = t.y, qr[4 * d + 2] = t.z, qr[4 * d + 3] = t.w;
    }
  }
#pragma unroll
  for (int d = 0; d < kHead; ++d) acc[d] = 0.0f;
  float m = -INFINITY, l = 0.0f;

  for (int64_t k0 = 0; k0 < seq; k0 += TK) {
    __syncthreads();  // the previous tile is no longer read
    for (int i = tid; i < TK * kHead / 4; i += kFlashThreads) {
      const int64_t key = k0 + (i * 4) / kHead;
      float4 kv = make_float4(0.f, 0.f, 0.f, 0.f), vv = kv;
      if (key < seq) {
        kv = reinterpret_cast<const float4*>(kb + k0 * kHead)[i];
        vv = reinterpret_cast<const float4*>(vb + k0 * kHead)[i];
      }
      reinterpret_cast<float4*>(k_tile)[i] = kv;
      reinterpret_cast<float4*>(v_tile)[i] = vv;
    }
    __syncthreads();
    constexpr int kMine = TK / SPLITK;
    float s[kMine];
    float tile_max = -INFINITY;
#pragma unroll
    for (int j = 0; j < kMine; ++j) {
      const int kk = g + j * SPLITK;
      const float* kr = k_tile + kk * kHead;
      float dot = 0.0f;
#pragma unroll
      for (int d = 0; d < kHead; ++d) dot = fmaf(qr[d], kr[d], dot);
      s[j] = k0 + kk < seq ? dot * scale : -INFINITY;
      tile_max = fmaxf(tile_max, s[j]);
    }
    const float m_new = fmaxf(m, tile_max);
    if (m_new == -INFINITY) continue;  // no live key in this group's share of the tile
    const float corr = expf(m - m_new);
    l *= corr;
#pragma unroll
    for (int d = 0; d < kHead; ++d) acc[d] *= corr;
#pragma unroll
    for (int j = 0; j < kMine; ++j) {
      const int kk = g + j * SPLITK;
      const float p = expf(s[j] - m_new);
      l += p;
      const float* vr = v_tile + kk * kHead;
#pragma unroll
      for (int d = 0; d < kHead; ++d) acc[d] = fmaf(p, vr[d], acc[d]);
    }
    m = m_new;
  }

  // Merge the SPLITK partials of each query: buffer laid out [g][d][qi] (conflict-free).
  __syncthreads();
  m_part[g][qi] = m;
  l_part[g][qi] = l;
#pragma unroll
  for (int d = 0; d < kHead; ++d) tiles[(g * kHead + d) * BQ + qi] = acc[d];
  __syncthreads();
  float mm = -INFINITY;
#pragma unroll
  for (int h = 0; h < SPLITK; ++h) mm = fmaxf(mm, m_part[h][qi]);
  float w[SPLITK], total = 0.0f;
#pragma unroll
  for (int h = 0; h < SPLITK; ++h) {
    w[h] = m_part[h][qi] == -INFINITY ? 0.0f : expf(m_part[h][qi] - mm);
    total += l_part[h][qi] * w[h];
  }
  const float inv = 1.0f / total;
  if (!live) return;
  constexpr int kDims = kHead / SPLITK;  // this thread's share of the query's 64 outputs
  float4* o = reinterpret_cast<float4*>(out + (b * seq + query) * kHead + g * kDims);
#pragma unroll
  for (int d4 = 0; d4 < kDims / 4; ++d4) {
    float r[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int d = g * kDims + d4 * 4 + e;
      float sum = 0.0f;
#pragma unroll
      for (int h = 0; h < SPLITK; ++h) sum += tiles[(h * kHead + d) * BQ + qi] * w[h];
      r[e] = sum * inv;
    }
    o[d4] = make_float4(r[0], r[1], r[2], r[3]);
  }
}

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
  const bool fused = Dh == kHead && reinterpret_cast<uintptr_t>(out) % 16 == 0;
  if (!scratch.Get(static_cast<size_t>(B) * S * (3 * Dh + (fused ? 0 : S)))) return 5;
  float* qkv[3] = {scratch.p, scratch.p + B * S * Dh, scratch.p + 2 * B * S * Dh};
  float* scores = scratch.p + 3 * B * S * Dh;
  for (int i = 0; i < 3; ++i) {
    StoreBatched e{qkv[i], Dh, 0};
    const int rc = LaunchGemm<true>(x, static_cast<const float*>(inputs[1 + i].data), B * S, Dh, D, 1, 0,
                                    0, e, s);
    if (rc != 0) return rc;
  }
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(Dh)));
  if (fused) {
    if ((S + BQ - 1) / BQ > INT_MAX || B > 65535) return 4;
    const dim3 grid(static_cast<unsigned>((S + BQ - 1) / BQ), static_cast<unsigned>(B));
    FlashAttention64<<<grid, kFlashThreads, 0, s>>>(qkv[0], qkv[1], qkv[2], out, S, scale);
    return cudaGetLastError() == cudaSuccess ? 0 : 3;
  }
  StoreScaled es{scores, S, S * S, scale};
  int rc = LaunchGemm<true>(qkv[0], qkv[1], S, S, Dh, B, S * Dh, S * Dh, es, s);
  if (rc != 0) return rc;
  SoftmaxRowsInPlace<<<RowBlocks(B * S), ROW_BLOCK, 0, s>>>(scores, B * S, S);
  if (cudaGetLastError() != cudaSuccess) return 3;
  StoreBatched eo{out, Dh, S * Dh};
  return LaunchGemm<false>(scores, qkv[2], S, Dh, S, B, S * S, S * Dh, eo, s);
}
