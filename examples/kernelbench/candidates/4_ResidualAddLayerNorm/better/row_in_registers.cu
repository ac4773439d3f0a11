/* kpilot-params
BLOCK = [128, 256, 512, 1024]
*/
// level2/4_ResidualAddLayerNorm: the row x + residual kept in registers — one DRAM read of each.
//
// One block of BLOCK threads per row; thread t adds float4 number t, t + BLOCK, ... of x and of the
// residual once and keeps the sums (at most ITEMS, the smallest of 1, 2, 4, 8 that covers the row),
// so the mean, the variance (two-pass, from registers) and the output need no further reads. Other
// rows (longer than BLOCK * 32 floats, length not a multiple of 4, misaligned) take three sweeps.
// Inputs: x, residual, norm_weight, norm_bias.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

#ifndef BLOCK
#define BLOCK 256
#endif

static_assert(BLOCK % 32 == 0 && BLOCK >= 32 && BLOCK <= 1024, "BLOCK: a multiple of 32, <= 1024");

constexpr float kEps = 1e-5f;  // the problem's nn.LayerNorm eps

// Sum over the block; every thread gets the result. Safe to call repeatedly.
__device__ __forceinline__ float BlockSum(float v) {
  __shared__ float partial[BLOCK / 32];
  __shared__ float result;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < BLOCK / 32 ? partial[lane] : 0.0f;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) result = v;
  }
  __syncthreads();
  const float r = result;
  __syncthreads();
  return r;
}

__device__ __forceinline__ float4 Add4(float4 a, float4 b) {
  return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}

// The row (x, or x + residual when RES) held as float4s in registers: sum -> mean, squared
// deviations -> variance (two-pass, as torch), output — one DRAM read of each input.
template <int ITEMS, bool RES>
__global__ __launch_bounds__(BLOCK) void LayerNormInRegisters(const float* __restrict__ x,
                                                              const float* __restrict__ res,
                                                              const float* __restrict__ gamma,
                                                              const float* __restrict__ beta,
                                                              float* __restrict__ y, int64_t rows,
                                                              int64_t cols) {
  const int64_t nvec = cols / 4;
  const float4* g4 = reinterpret_cast<const float4*>(gamma);
  const float4* b4 = reinterpret_cast<const float4*>(beta);
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float4* xr = reinterpret_cast<const float4*>(x + row * cols);
    const float4* rr = RES ? reinterpret_cast<const float4*>(res + row * cols) : nullptr;
    float4* yr = reinterpret_cast<float4*>(y + row * cols);
    float4 v[ITEMS];
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const int64_t j = threadIdx.x + static_cast<int64_t>(i) * BLOCK;
      if (j < nvec) {
        v[i] = xr[j];
        if constexpr (RES) v[i] = Add4(v[i], rr[j]);
        sum += (v[i].x + v[i].y) + (v[i].z + v[i].w);
      }
    }
    const float mean = BlockSum(sum) / static_cast<float>(cols);
    float sq = 0.0f;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const int64_t j = threadIdx.x + static_cast<int64_t>(i) * BLOCK;
      if (j < nvec) {
        const float a = v[i].x - mean, b = v[i].y - mean, c = v[i].z - mean, d = v[i].w - mean;
        sq += (a * a + b * b) + (c * c + d * d);
      }
    }
    const float inv_std = rsqrtf(BlockSum(sq) / static_cast<float>(cols) + kEps);
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const int64_t j = threadIdx.x + static_cast<int64_t>(i) * BLOCK;
      if (j < nvec) {
        const float4 g = g4[j], b = b4[j];
        yr[j] = make_float4((v[i].x - mean) * inv_std * g.x + b.x, (v[i].y - mean) * inv_std * g.y + b.y,
                            (v[i].z - mean) * inv_std * g.z + b.z, (v[i].w - mean) * inv_std * g.w + b.w);
      }
    }
  }
}

// Any row length or alignment: three sweeps over memory, one float at a time.
template <bool RES>
__global__ __launch_bounds__(BLOCK) void LayerNormSweeps(const float* __restrict__ x, const float* __restrict__ res,
                                                         const float* __restrict__ gamma,
                                                         const float* __restrict__ beta, float* __restrict__ y,
                                                         int64_t rows, int64_t cols) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* xr = x + row * cols;
    const float* rr = RES ? res + row * cols : nullptr;
    float* yr = y + row * cols;
    float sum = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += BLOCK) sum += RES ? xr[c] + rr[c] : xr[c];
    const float mean = BlockSum(sum) / static_cast<float>(cols);
    float sq = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += BLOCK) {
      const float d = (RES ? xr[c] + rr[c] : xr[c]) - mean;
      sq += d * d;
    }
    const float inv_std = rsqrtf(BlockSum(sq) / static_cast<float>(cols) + kEps);
    for (int64_t c = threadIdx.x; c < cols; c += BLOCK)
      yr[c] = ((RES ? xr[c] + rr[c] : xr[c]) - mean) * inv_std * gamma[c] + beta[c];
  }
}

namespace {

bool Aligned16(const void* p) { return p == nullptr || reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <bool RES>
int Launch(const float* x, const float* r, const float* gamma, const float* beta, float* y, int64_t rows,
           int64_t cols, cudaStream_t s) {
  const unsigned blocks = static_cast<unsigned>(rows < INT_MAX ? rows : INT_MAX);
  const int64_t per_thread = (cols / 4 + BLOCK - 1) / BLOCK;  // float4s each thread holds
  if (cols % 4 != 0 || !Aligned16(x) || !Aligned16(r) || !Aligned16(gamma) || !Aligned16(beta) ||
      !Aligned16(y) || per_thread > 8) {
    LayerNormSweeps<RES><<<blocks, BLOCK, 0, s>>>(x, r, gamma, beta, y, rows, cols);
  } else if (per_thread <= 1) {
    LayerNormInRegisters<1, RES><<<blocks, BLOCK, 0, s>>>(x, r, gamma, beta, y, rows, cols);
  } else if (per_thread <= 2) {
    LayerNormInRegisters<2, RES><<<blocks, BLOCK, 0, s>>>(x, r, gamma, beta, y, rows, cols);
  } else if (per_thread <= 4) {
    LayerNormInRegisters<4, RES><<<blocks, BLOCK, 0, s>>>(x, r, gamma, beta, y, rows, cols);
  } else {
    LayerNormInRegisters<8, RES><<<blocks, BLOCK, 0, s>>>(x, r, gamma, beta, y, rows, cols);
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}

}  // namespace

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 4 || num_outputs != 1 || num_scalars != 0) return 1;
  const kpilot_tensor& xt = inputs[0];
  if (xt.rank < 1) return 2;
  const int64_t cols = xt.shape[xt.rank - 1];
  const int64_t n = kpilot_numel(&xt);
  if (kpilot_numel(&inputs[1]) != n) return 2;
  if (kpilot_numel(&inputs[2]) != cols || kpilot_numel(&inputs[3]) != cols) return 2;
  if (n == 0) return 0;
  return Launch<true>(static_cast<const float*>(xt.data), static_cast<const float*>(inputs[1].data),
                      static_cast<const float*>(inputs[2].data), static_cast<const float*>(inputs[3].data),
                      static_cast<float*>(outputs[0].data), n / cols, cols, static_cast<cudaStream_t>(stream));
}
