// bf16 GEMM on tensor cores through WMMA, with a cp.async shared-memory pipeline.
//
// A block of WARPS_M x WARPS_N warps computes a BM x BN tile of C; each warp owns a
// (BM / WARPS_M) x (BN / WARPS_N) sub-tile held as 16x16 f32 accumulator fragments. k is walked
// in BK-wide slices through a ring of STAGES shared-memory buffers: while the tensor cores work
// on slice t, slices t+1 .. t+STAGES-1 are already being copied by cp.async (16-byte copies that
// zero-fill out-of-range chunks). Shared rows are padded by 16 bytes so that the 8 rows a
// fragment load touches fall in different banks. When k or n is not a multiple of 8, or a
// pointer is not 16-byte aligned, the same kernel loads element by element instead.
// The epilogue stores whole in-range fragments straight to C and stages the rest through shared
// memory to store only in-range elements.
#include <kpilot/kernel.h>

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cstdint>

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 64
#endif
#ifndef WARPS_M
#define WARPS_M 2
#endif
#ifndef WARPS_N
#define WARPS_N 2
#endif
#ifndef STAGES
#define STAGES 3
#endif

namespace {

namespace wmma = nvcuda::wmma;
using bf16 = __nv_bfloat16;

constexpr int kWarpM = BM / WARPS_M;  // rows of C per warp
constexpr int kWarpN = BN / WARPS_N;  // columns of C per warp
constexpr int kFragsM = kWarpM / 16;
constexpr int kFragsN = kWarpN / 16;
constexpr int kWarps = WARPS_M * WARPS_N;
constexpr int kThreads = 32 * kWarps;
constexpr int kLdA = BK + 8;  // shared row pitches, in elements
constexpr int kLdB = BN + 8;
constexpr int kStageA = BM * kLdA;  // elements per stage
constexpr int kStageB = BK * kLdB;
constexpr int kSmemBytes = STAGES * (kStageA + kStageB) * static_cast<int>(sizeof(bf16));
constexpr int kEpilogueBytes = kWarps * 16 * 16 * static_cast<int>(sizeof(float));

static_assert(BM % (16 * WARPS_M) == 0 && BN % (16 * WARPS_N) == 0, "warp tiles of 16x16 frags");
static_assert(BK % 16 == 0, "BK must be a multiple of 16");
static_assert(STAGES >= 2, "the pipeline needs at least two stages");
static_assert(kThreads <= 1024, "at most 1024 threads per block");
static_assert(kEpilogueBytes <= kSmemBytes, "the epilogue reuses the pipeline's shared memory");
static_assert(kSmemBytes <= 227 * 1024, "shared memory per block on Hopper");

__device__ __forceinline__ void CopyAsync16(void* smem, const void* gmem, bool valid) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const int src_bytes = valid ? 16 : 0;  // 0: write 16 zero bytes, read nothing
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem),
               "r"(src_bytes));
}

__device__ __forceinline__ void CommitGroup() { asm volatile("cp.async.commit_group;\n" ::); }

template <int N>
__device__ __forceinline__ void WaitGroup() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Starts loading k-slice `kt` of this block's A rows and B columns into pipeline stage `stage`.
// kAsync requires k % 8 == 0, n % 8 == 0 and 16-byte aligned a and b.
template <bool kAsync>
__device__ __forceinline__ void LoadStage(bf16* smem, int stage, int kt, const bf16* a,
                                          const bf16* b, int m, int n, int k, int row0, int col0) {
  bf16* as = smem + stage * kStageA;
  bf16* bs = smem + STAGES * kStageA + stage * kStageB;
  const int k0 = kt * BK;
  if constexpr (kAsync) {
    for (int q = threadIdx.x; q < BM * BK / 8; q += kThreads) {
      const int r = q / (BK / 8), c = (q % (BK / 8)) * 8;
      const bool valid = row0 + r < m && k0 + c < k;
      const bf16* src = valid ? a + static_cast<int64_t>(row0 + r) * k + k0 + c : a;
      CopyAsync16(as + r * kLdA + c, src, valid);
    }
    for (int q = threadIdx.x; q < BK * BN / 8; q += kThreads) {
      const int r = q / (BN / 8), c = (q % (BN / 8)) * 8;
      const bool valid = k0 + r < k && col0 + c < n;
      const bf16* src = valid ? b + static_cast<int64_t>(k0 + r) * n + col0 + c : b;
      CopyAsync16(bs + r * kLdB + c, src, valid);
    }
  } else {
    const bf16 zero = __float2bfloat16(0.0f);
    for (int e = threadIdx.x; e < BM * BK; e += kThreads) {
      const int r = e / BK, c = e % BK;
      const bool valid = row0 + r < m && k0 + c < k;
      as[r * kLdA + c] = valid ? a[static_cast<int64_t>(row0 + r) * k + k0 + c] : zero;
    }
    for (int e = threadIdx.x; e < BK * BN; e += kThreads) {
      const int r = e / BN, c = e % BN;
      const bool valid = k0 + r < k && col0 + c < n;
      bs[r * kLdB + c] = valid ? b[static_cast<int64_t>(k0 + r) * n + col0 + c] : zero;
    }
  }
}

template <bool kAsync>
__global__ __launch_bounds__(kThreads) void GemmBf16(const bf16* __restrict__ a,
                                                     const bf16* __restrict__ b,
                                                     float* __restrict__ c, int m, int n, int k) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  bf16* smem = reinterpret_cast<bf16*>(smem_raw);
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int warp_m = warp / WARPS_N;
  const int warp_n = warp % WARPS_N;
  const int row0 = blockIdx.y * BM;
  const int col0 = blockIdx.x * BN;

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[kFragsM][kFragsN];
#pragma unroll
  for (int i = 0; i < kFragsM; ++i) {
#pragma unroll
    for (int j = 0; j < kFragsN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
  }

  // Pipeline: group g of cp.async copies holds slice g. Before computing slice t, wait until at
  // most STAGES - 2 groups are pending (so slice t has landed) and for every warp (so nobody
  // still reads the stage that slice t + STAGES - 1 overwrites: the one slice t - 1 used).
  const int num_k_tiles = (k + BK - 1) / BK;
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < num_k_tiles) LoadStage<kAsync>(smem, s, s, a, b, m, n, k, row0, col0);
    CommitGroup();
  }
  for (int kt = 0; kt < num_k_tiles; ++kt) {
    WaitGroup<STAGES - 2>();
    __syncthreads();
    const int next = kt + STAGES - 1;
    if (next < num_k_tiles) LoadStage<kAsync>(smem, next % STAGES, next, a, b, m, n, k, row0, col0);
    CommitGroup();

    const int stage = kt % STAGES;
    const bf16* as = smem + stage * kStageA + warp_m * kWarpM * kLdA;
    const bf16* bs = smem + STAGES * kStageA + stage * kStageB + warp_n * kWarpN;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> a_frag[kFragsM];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major> b_frag[kFragsN];
#pragma unroll
      for (int i = 0; i < kFragsM; ++i) wmma::load_matrix_sync(a_frag[i], as + i * 16 * kLdA + kk, kLdA);
#pragma unroll
      for (int j = 0; j < kFragsN; ++j) wmma::load_matrix_sync(b_frag[j], bs + kk * kLdB + j * 16, kLdB);
#pragma unroll
      for (int i = 0; i < kFragsM; ++i) {
#pragma unroll
        for (int j = 0; j < kFragsN; ++j) wmma::mma_sync(acc[i][j], a_frag[i], b_frag[j], acc[i][j]);
      }
    }
  }
  WaitGroup<0>();
  __syncthreads();  // the epilogue reuses the pipeline's shared memory

  // A fragment goes straight to C when it is wholly in range and its rows are 32-byte aligned.
  const bool direct = n % 8 == 0 && reinterpret_cast<uintptr_t>(c) % 32 == 0;
  float* staging = reinterpret_cast<float*>(smem_raw) + warp * 256;
#pragma unroll
  for (int i = 0; i < kFragsM; ++i) {
#pragma unroll
    for (int j = 0; j < kFragsN; ++j) {
      const int r = row0 + warp_m * kWarpM + i * 16;
      const int col = col0 + warp_n * kWarpN + j * 16;
      if (direct && r + 16 <= m && col + 16 <= n) {
        wmma::store_matrix_sync(c + static_cast<int64_t>(r) * n + col, acc[i][j], n,
                                wmma::mem_row_major);
      } else {
        wmma::store_matrix_sync(staging, acc[i][j], 16, wmma::mem_row_major);
        __syncwarp();
        for (int e = lane; e < 256; e += 32) {
          const int rr = r + e / 16, cc = col + e % 16;
          if (rr < m && cc < n) c[static_cast<int64_t>(rr) * n + cc] = staging[e];
        }
        __syncwarp();
      }
    }
  }
}

template <bool kAsync>
int Launch(const bf16* a, const bf16* b, float* c, int m, int n, int k, cudaStream_t stream) {
  // Above 48 KB a block's dynamic shared memory must be allowed explicitly.
  if (cudaFuncSetAttribute(GemmBf16<kAsync>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           kSmemBytes) != cudaSuccess) {
    return 4;
  }
  const dim3 grid((n + BN - 1) / BN, (m + BM - 1) / BM);
  GemmBf16<kAsync><<<grid, kThreads, kSmemBytes, stream>>>(a, b, c, m, n, k);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}

bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

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
  // 32-bit indices inside the kernel for extents and in-tile offsets.
  if (m > (1 << 30) || n > (1 << 30) || k > (1 << 30)) return 2;
  if ((m + BM - 1) / BM > 65535) return 2;
  if (m * n == 0) return 0;
  const auto* a = static_cast<const bf16*>(inputs[0].data);
  const auto* b = static_cast<const bf16*>(inputs[1].data);
  auto* c = static_cast<float*>(outputs[0].data);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  const int mi = static_cast<int>(m), ni = static_cast<int>(n), ki = static_cast<int>(k);
  if (k % 8 == 0 && n % 8 == 0 && Aligned16(a) && Aligned16(b)) {
    return Launch<true>(a, b, c, mi, ni, ki, s);
  }
  return Launch<false>(a, b, c, mi, ni, ki, s);
}
