// Row softmax with each row brought into shared memory by one TMA bulk copy (sm_90a): one block
// per row. Thread 0 arms an mbarrier with the row's byte count and issues
// cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes for the whole row; the Tensor
// Memory Accelerator moves it while no thread issues a load, and every thread waits on the
// mbarrier's phase (the `tma-bulk-copy` card, in its one-dimensional bulk form: a row is
// contiguous, so no tensor map is needed). The block then reduces the maximum and the sum of
// exp(x - max) from shared memory with warp shuffles and writes exp(x - max) / sum. A bulk copy
// needs a 16-byte-aligned source and a size that is a multiple of 16 bytes: rows that do not
// allow it (cols % 4 != 0, a misaligned x) are staged by the threads with plain loads instead.
// Exponentials use __expf (task.toml allows it).
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

#ifndef ROW_THREADS
#define ROW_THREADS 256
#endif
#define BLOCK ROW_THREADS

static_assert(BLOCK % 32 == 0 && BLOCK >= 32 && BLOCK <= 1024, "BLOCK: a multiple of 32, <= 1024");

namespace {

constexpr int64_t kMaxRowBytes = 200 * 1024;  // dynamic shared memory for one row (H200: 227 KB per block)

__device__ __forceinline__ uint32_t SharedAddress(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ float WarpMax(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

__device__ __forceinline__ float WarpSum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// kMax: the block's maximum, else its sum; every thread gets it.
template <bool kMax>
__device__ __forceinline__ float BlockReduce(float v, float* partial) {
  v = kMax ? WarpMax(v) : WarpSum(v);
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  float r = lane < BLOCK / 32 ? partial[lane] : (kMax ? -INFINITY : 0.0f);
  r = kMax ? WarpMax(r) : WarpSum(r);
  __syncthreads();  // `partial` is reused by the next reduction
  return r;
}

template <bool kBulk>
__global__ __launch_bounds__(BLOCK) void SoftmaxRowsTma(const float* __restrict__ x, float* __restrict__ y,
                                                        int64_t rows, int64_t cols) {
  extern __shared__ __align__(128) float row_smem[];
  __shared__ __align__(8) uint64_t full;  // the mbarrier: completes when the row's bytes have landed
  __shared__ float partial[BLOCK / 32];
  const uint32_t bar = SharedAddress(&full);
  const uint32_t bytes = static_cast<uint32_t>(cols * sizeof(float));
  if (kBulk && threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(bar));
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  uint32_t phase = 0;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* xr = x + row * cols;
    if constexpr (kBulk) {
      if (threadIdx.x == 0) {
        // The threads' reads of the previous row (generic proxy) are ordered before the copy's
        // writes (async proxy) by the barrier that ended that row and this proxy fence.
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        uint64_t state;
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 %0, [%1], %2;\n"
                     : "=l"(state)
                     : "r"(bar), "r"(bytes)
                     : "memory");
        (void)state;
        asm volatile(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                SharedAddress(row_smem)),
            "l"(xr), "r"(bytes), "r"(bar)
            : "memory");
      }
      uint32_t done = 0;
      while (!done) {
        asm volatile(
            "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
            : "=r"(done)
            : "r"(bar), "r"(phase)
            : "memory");
      }
      phase ^= 1;
    } else {
      for (int64_t c = threadIdx.x; c < cols; c += BLOCK) row_smem[c] = xr[c];
      __syncthreads();
    }
    float m = -INFINITY;
    for (int64_t c = threadIdx.x; c < cols; c += BLOCK) m = fmaxf(m, row_smem[c]);
    m = BlockReduce<true>(m, partial);
    float s = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += BLOCK) s += __expf(row_smem[c] - m);
    s = BlockReduce<false>(s, partial);
    const float inv = 1.0f / s;
    float* yr = y + row * cols;
    for (int64_t c = threadIdx.x; c < cols; c += BLOCK) yr[c] = __expf(row_smem[c] - m) * inv;
    __syncthreads();  // the next row's copy overwrites row_smem
  }
}

bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <bool kBulk>
int Launch(const float* x, float* y, int64_t rows, int64_t cols, cudaStream_t s) {
  const size_t smem = static_cast<size_t>(cols) * sizeof(float);
  if (smem > 48 * 1024 &&
      cudaFuncSetAttribute(SoftmaxRowsTma<kBulk>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)) !=
          cudaSuccess)
    return 3;
  const unsigned blocks = static_cast<unsigned>(rows < INT_MAX ? rows : INT_MAX);
  SoftmaxRowsTma<kBulk><<<blocks, BLOCK, smem, s>>>(x, y, rows, cols);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}

}  // namespace

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 1 || num_outputs != 1 || num_scalars != 0) return 1;
  if (inputs[0].rank != 2) return 2;
  const float* x = static_cast<const float*>(inputs[0].data);
  float* y = static_cast<float*>(outputs[0].data);
  const int64_t rows = inputs[0].shape[0];
  const int64_t cols = inputs[0].shape[1];
  if (rows * cols == 0) return 0;
  if (cols * static_cast<int64_t>(sizeof(float)) > kMaxRowBytes) return 2;  // a row must fit shared memory
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (cols % 4 == 0 && Aligned16(x)) return Launch<true>(x, y, rows, cols, s);
  return Launch<false>(x, y, rows, cols, s);
}
