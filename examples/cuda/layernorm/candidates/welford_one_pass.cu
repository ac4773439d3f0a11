// LayerNorm with one-pass Welford statistics: one block of BLOCK threads per row. Each thread
// folds its strided share of the row into (count, mean, M2) with Welford updates; the block
// merges the triples with Chan's parallel combine — across lanes by warp shuffles, then across
// warps through shared memory — giving the row's mean and population variance M2 / cols from one
// read of x (the `welford-layernorm` card; candidates/block_two_pass.cu reads the row twice for
// them). A second sweep writes (x - mean) * rsqrt(var + eps) * gamma + beta. Welford's updates
// are as stable as the two-pass variance; the sums run in another order than the reference's.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

#ifndef BLOCK
#define BLOCK 256
#endif

static_assert(BLOCK % 32 == 0 && BLOCK >= 32 && BLOCK <= 1024, "BLOCK: a multiple of 32, <= 1024");

namespace {

struct Stats {
  float n;     // elements folded in
  float mean;  // their mean
  float m2;    // the sum of their squared deviations from the mean
};

__device__ __forceinline__ Stats Push(Stats s, float v) {
  s.n += 1.0f;
  const float delta = v - s.mean;
  s.mean += delta / s.n;
  s.m2 += delta * (v - s.mean);
  return s;
}

// Chan et al.'s combine of two partial triples; an empty side leaves the other unchanged.
__device__ __forceinline__ Stats Combine(Stats a, Stats b) {
  const float n = a.n + b.n;
  if (n == 0.0f) return a;
  const float delta = b.mean - a.mean;
  const float wb = b.n / n;
  return {n, a.mean + delta * wb, a.m2 + b.m2 + delta * delta * a.n * wb};
}

__device__ __forceinline__ Stats WarpCombine(Stats s) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    Stats o{__shfl_xor_sync(0xffffffffu, s.n, offset), __shfl_xor_sync(0xffffffffu, s.mean, offset),
            __shfl_xor_sync(0xffffffffu, s.m2, offset)};
    s = Combine(s, o);
  }
  return s;
}

// The block's triple; every thread gets it. Safe to call once per row iteration.
__device__ __forceinline__ Stats BlockCombine(Stats s) {
  __shared__ Stats partial[BLOCK / 32];
  __shared__ Stats result;
  s = WarpCombine(s);
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (lane == 0) partial[warp] = s;
  __syncthreads();
  if (warp == 0) {
    s = lane < BLOCK / 32 ? partial[lane] : Stats{0.0f, 0.0f, 0.0f};
    s = WarpCombine(s);
    if (lane == 0) result = s;
  }
  __syncthreads();
  const Stats r = result;
  __syncthreads();  // the next row overwrites `partial` and `result`
  return r;
}

template <int V>
__global__ __launch_bounds__(BLOCK) void LayerNormWelford(const float* __restrict__ x, const float* __restrict__ gamma,
                                                          const float* __restrict__ beta, float* __restrict__ y,
                                                          int64_t rows, int64_t cols, float eps) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* xr = x + row * cols;
    float* yr = y + row * cols;
    Stats s{0.0f, 0.0f, 0.0f};
    for (int64_t c = static_cast<int64_t>(threadIdx.x) * V; c < cols; c += static_cast<int64_t>(BLOCK) * V) {
      if constexpr (V == 4) {
        const float4 q = *reinterpret_cast<const float4*>(xr + c);
        s = Push(Push(Push(Push(s, q.x), q.y), q.z), q.w);
      } else {
        s = Push(s, xr[c]);
      }
    }
    const Stats all = BlockCombine(s);
    const float mean = all.mean;
    const float inv_std = rsqrtf(all.m2 / static_cast<float>(cols) + eps);
    for (int64_t c = static_cast<int64_t>(threadIdx.x) * V; c < cols; c += static_cast<int64_t>(BLOCK) * V) {
      if constexpr (V == 4) {
        const float4 q = *reinterpret_cast<const float4*>(xr + c);
        const float4 g = *reinterpret_cast<const float4*>(gamma + c);
        const float4 b = *reinterpret_cast<const float4*>(beta + c);
        *reinterpret_cast<float4*>(yr + c) =
            make_float4((q.x - mean) * inv_std * g.x + b.x, (q.y - mean) * inv_std * g.y + b.y,
                        (q.z - mean) * inv_std * g.z + b.z, (q.w - mean) * inv_std * g.w + b.w);
      } else {
        yr[c] = (xr[c] - mean) * inv_std * gamma[c] + beta[c];
      }
    }
  }
}

bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  if (num_inputs != 3 || num_outputs != 1 || num_scalars != 1) return 1;
  if (inputs[0].rank != 2) return 2;
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* gamma = static_cast<const float*>(inputs[1].data);
  const float* beta = static_cast<const float*>(inputs[2].data);
  float* y = static_cast<float*>(outputs[0].data);
  const int64_t rows = inputs[0].shape[0];
  const int64_t cols = inputs[0].shape[1];
  const float eps = static_cast<float>(scalars[0].value.f);
  if (rows * cols == 0) return 0;
  if (cols > (1 << 24)) return 2;  // counts are exact floats up to 2^24
  const unsigned blocks = static_cast<unsigned>(rows < INT_MAX ? rows : INT_MAX);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (cols % 4 == 0 && Aligned16(x) && Aligned16(gamma) && Aligned16(beta) && Aligned16(y)) {
    LayerNormWelford<4><<<blocks, BLOCK, 0, s>>>(x, gamma, beta, y, rows, cols, eps);
  } else {
    LayerNormWelford<1><<<blocks, BLOCK, 0, s>>>(x, gamma, beta, y, rows, cols, eps);
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
