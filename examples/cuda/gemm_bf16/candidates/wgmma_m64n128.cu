// bf16 GEMM on Hopper's warpgroup MMAs (the `wgmma-cute` card's mechanism, sm_90a): one warpgroup
// (128 threads) computes a 64 x 128 tile of C with wgmma.mma_async m64n128k16, its A and B operands
// read by the tensor cores straight from shared memory through matrix descriptors, the f32
// accumulators in registers (64 per thread). Written in raw PTX: the card's recipe goes through
// CuTe's GMMA atoms, but CUTLASS is not on the harness's include path.
//
// Per k tile of BK = 64, the block stages A (64 x 64) and B (64 x 128, transposed to n-major rows
// of k) in shared memory in the no-swizzle canonical K-major layout: 8 x 8 "core matrices" of
// 8 rows x 16 bytes, contiguous; core matrices adjacent in K are LBO = 128 bytes apart, adjacent in
// M (or N) SBO = BK * 16 bytes apart. A proxy fence makes the threads' stores visible to the
// tensor cores' async proxy; four wgmmas (one per 16-wide k slice, descriptors advanced by 256
// bytes) are committed as one group and waited for before the tile is overwritten. Out-of-range
// elements load as zeros and are not stored. bf16 products are exact in f32; only the order of
// the f32 additions differs from the reference.
#include <kpilot/kernel.h>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

// wgmma exists only in the architecture-specific sm_90a feature set. `-arch=sm_90a` also embeds
// compute_90 PTX, where the wgmma blocks below compile to a trap; the GPU runs the sm_90a code.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define KPILOT_WGMMA 1
#else
#define KPILOT_WGMMA 0
#endif

namespace {

using bf16 = __nv_bfloat16;

constexpr int kBM = 64;    // rows of C per block: one warpgroup's m64
constexpr int kBN = 128;   // columns of C per block: n128
constexpr int kBK = 64;    // k per shared tile: four k16 wgmmas
constexpr int kThreads = 128;
constexpr uint32_t kLbo = 128;       // bytes between core matrices adjacent in K
constexpr uint32_t kSbo = kBK * 16;  // bytes between core matrices adjacent in M / N

// Element (r, c) of a K-major operand tile (r along M or N, c along K), in elements.
__device__ __forceinline__ int Canonical(int r, int c) {
  return (r / 8) * (kSbo / 2) + (c / 8) * (kLbo / 2) + (r % 8) * 8 + (c % 8);
}

// A shared-memory matrix descriptor: start address, LBO and SBO in 16-byte units, no swizzle.
__device__ __forceinline__ uint64_t Descriptor(const void* smem) {
  const uint64_t addr = static_cast<uint64_t>(__cvta_generic_to_shared(smem));
  return ((addr >> 4) & 0x3FFF) | (static_cast<uint64_t>((kLbo >> 4) & 0x3FFF) << 16) |
         (static_cast<uint64_t>((kSbo >> 4) & 0x3FFF) << 32);
}

__device__ __forceinline__ void Mma(float (&d)[64], uint64_t desc_a, uint64_t desc_b) {
#if KPILOT_WGMMA
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(desc_a), "l"(desc_b), "r"(1));
#else
  (void)d, (void)desc_a, (void)desc_b;
  __trap();
#endif
}

__device__ __forceinline__ void WgmmaFence() {
#if KPILOT_WGMMA
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void WgmmaCommitAndWait() {
#if KPILOT_WGMMA
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#endif
}

// Keeps the compiler from moving accumulator reads or writes across the wgmma fences.
__device__ __forceinline__ void FenceOperands(float (&d)[64]) {
#pragma unroll
  for (int i = 0; i < 64; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

__global__ __launch_bounds__(kThreads) void GemmWgmma(const bf16* __restrict__ a, const bf16* __restrict__ b,
                                                      float* __restrict__ c, int m, int n, int k, bool vector_a) {
  __shared__ __align__(128) bf16 a_s[kBM * kBK];  // A[row0 + r][k0 + c] at Canonical(r, c)
  __shared__ __align__(128) bf16 b_s[kBN * kBK];  // B[k0 + c][col0 + r] at Canonical(r, c)
  const int tid = threadIdx.x;
  const int row0 = blockIdx.y * kBM;
  const int col0 = blockIdx.x * kBN;
  const bf16 zero = __float2bfloat16(0.0f);

  float d[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) d[i] = 0.0f;

  for (int k0 = 0; k0 < k; k0 += kBK) {
    // A: 16-byte chunks of 8 k values of a row, when rows are 16-byte aligned; else elements.
    if (vector_a) {
#pragma unroll
      for (int l = 0; l < kBM * kBK / 8 / kThreads; ++l) {
        const int e = l * kThreads + tid;
        const int r = e / (kBK / 8), c = (e % (kBK / 8)) * 8;
        const int gr = row0 + r, gc = k0 + c;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (gr < m && gc < k) v = *reinterpret_cast<const uint4*>(a + static_cast<int64_t>(gr) * k + gc);
        *reinterpret_cast<uint4*>(&a_s[Canonical(r, c)]) = v;
      }
    } else {
      for (int e = tid; e < kBM * kBK; e += kThreads) {
        const int r = e / kBK, c = e % kBK;
        const int gr = row0 + r, gc = k0 + c;
        a_s[Canonical(r, c)] = (gr < m && gc < k) ? a[static_cast<int64_t>(gr) * k + gc] : zero;
      }
    }
    // B: read along n (coalesced), stored transposed into n-major rows of k.
    for (int e = tid; e < kBN * kBK; e += kThreads) {
      const int c = e / kBN, r = e % kBN;
      const int gk = k0 + c, gn = col0 + r;
      b_s[Canonical(r, c)] = (gk < k && gn < n) ? b[static_cast<int64_t>(gk) * n + gn] : zero;
    }
    // The generic-proxy stores must be visible to the tensor cores' async proxy.
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();

    FenceOperands(d);
    WgmmaFence();
#pragma unroll
    for (int s = 0; s < kBK / 16; ++s)
      Mma(d, Descriptor(&a_s[s * 16 / 8 * (kLbo / 2)]), Descriptor(&b_s[s * 16 / 8 * (kLbo / 2)]));
    WgmmaCommitAndWait();
    FenceOperands(d);
    __syncthreads();  // the next tile overwrites a_s and b_s
  }

  // The accumulator fragment: warp w holds rows 16w..16w+15; register i of lane l is row
  // 16w + l/4 + 8 * ((i % 4) / 2), column 8 * (i / 4) + 2 * (l % 4) + i % 2.
  const int warp = tid / 32, lane = tid % 32;
#pragma unroll
  for (int i = 0; i < 64; ++i) {
    const int r = row0 + 16 * warp + lane / 4 + 8 * ((i % 4) / 2);
    const int col = col0 + 8 * (i / 4) + 2 * (lane % 4) + i % 2;
    if (r < m && col < n) c[static_cast<int64_t>(r) * n + col] = d[i];
  }
}

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
  if (m > (1 << 30) || n > (1 << 30) || k > (1 << 30)) return 2;
  if (m * n == 0) return 0;
  const bf16* a = static_cast<const bf16*>(inputs[0].data);
  const bf16* b = static_cast<const bf16*>(inputs[1].data);
  float* c = static_cast<float*>(outputs[0].data);
  if (k == 0) return cudaMemsetAsync(c, 0, static_cast<size_t>(m * n) * sizeof(float),
                                     static_cast<cudaStream_t>(stream)) == cudaSuccess ? 0 : 3;
  const bool vector_a = k % 8 == 0 && reinterpret_cast<uintptr_t>(a) % 16 == 0;
  const int64_t grid_x = (n + kBN - 1) / kBN;
  const int64_t grid_y = (m + kBM - 1) / kBM;
  if (grid_y > 65535) return 2;
  GemmWgmma<<<dim3(static_cast<unsigned>(grid_x), static_cast<unsigned>(grid_y)), kThreads, 0,
              static_cast<cudaStream_t>(stream)>>>(a, b, c, static_cast<int>(m), static_cast<int>(n),
                                                   static_cast<int>(k), vector_a);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
