/* kpilot-params
BLOCK = [128, 256, 512, 1024]
*/
// level1/3_RowSoftmax: the row kept in registers — one DRAM read and one write per element.
//
// One block of BLOCK threads per row; thread t holds float4 number t, t + BLOCK, ... of the row (at
// most ITEMS of them, a template picked per launch as the smallest of 1, 2, 4, 8 that covers the
// row), so the max, the exponentials, their sum and the output all come from registers instead of
// three sweeps over memory. Rows longer than BLOCK * 32 floats, rows whose length is not a multiple
// of 4 and misaligned pointers take the three-sweep kernel. Accurate expf (fp32 tolerance 1e-4).
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <climits>
#include <cmath>
#include <cstdint>

#ifndef BLOCK
#define BLOCK 256
#endif

static_assert(BLOCK % 32 == 0 && BLOCK >= 32 && BLOCK <= 1024, "BLOCK: a multiple of 32, <= 1024");

// Reduces over the block; every thread gets the result. Safe to call repeatedly.
template <bool MAX>
__device__ __forceinline__ float BlockReduce(float v) {
  __shared__ float partial[BLOCK / 32];
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
    v = lane < BLOCK / 32 ? partial[lane] : (MAX ? -INFINITY : 0.0f);
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

template <int ITEMS>
__global__ __launch_bounds__(BLOCK) void SoftmaxInRegisters(const float* __restrict__ x, float* __restrict__ y,
                                                            int64_t rows, int64_t cols) {
  const int64_t nvec = cols / 4;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float4* xr = reinterpret_cast<const float4*>(x + row * cols);
    float4* yr = reinterpret_cast<float4*>(y + row * cols);
    float4 v[ITEMS];
    float m = -INFINITY;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const int64_t j = threadIdx.x + static_cast<int64_t>(i) * BLOCK;
      if (j < nvec) {
        v[i] = xr[j];
        m = fmaxf(m, fmaxf(fmaxf(v[i].x, v[i].y), fmaxf(v[i].z, v[i].w)));
      }
    }
    m = BlockReduce<true>(m);
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const int64_t j = threadIdx.x + static_cast<int64_t>(i) * BLOCK;
      if (j < nvec) {
        v[i].x = expf(v[i].x - m);
        v[i].y = expf(v[i].y - m);
        v[i].z = expf(v[i].z - m);
        v[i].w = expf(v[i].w - m);
        sum += (v[i].x + v[i].y) + (v[i].z + v[i].w);
      }
    }
    const float inv = 1.0f / BlockReduce<false>(sum);
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const int64_t j = threadIdx.x + static_cast<int64_t>(i) * BLOCK;
      if (j < nvec) yr[j] = make_float4(v[i].x * inv, v[i].y * inv, v[i].z * inv, v[i].w * inv);
    }
  }
}

// Any row length or alignment: max, sum and output sweeps over memory.
__global__ __launch_bounds__(BLOCK) void SoftmaxSweeps(const float* __restrict__ x, float* __restrict__ y,
                                                       int64_t rows, int64_t cols) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* xr = x + row * cols;
    float* yr = y + row * cols;
    float m = -INFINITY;
    for (int64_t c = threadIdx.x; c < cols; c += BLOCK) m = fmaxf(m, xr[c]);
    m = BlockReduce<true>(m);
    float sum = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += BLOCK) sum += expf(xr[c] - m);
    const float inv = 1.0f / BlockReduce<false>(sum);
    for (int64_t c = threadIdx.x; c < cols; c += BLOCK) yr[c] = expf(xr[c] - m) * inv;
  }
}

namespace {

bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 1 || num_outputs != 1 || num_scalars != 0) return 1;
  if (inputs[0].rank < 1) return 2;
  const float* x = static_cast<const float*>(inputs[0].data);
  float* y = static_cast<float*>(outputs[0].data);
  const int64_t cols = inputs[0].shape[inputs[0].rank - 1];
  const int64_t n = kpilot_numel(&inputs[0]);
  if (n == 0) return 0;
  const int64_t rows = n / cols;
  const unsigned blocks = static_cast<unsigned>(rows < INT_MAX ? rows : INT_MAX);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  const int64_t per_thread = (cols / 4 + BLOCK - 1) / BLOCK;  // float4s each thread holds
  if (cols % 4 != 0 || !Aligned16(x) || !Aligned16(y) || per_thread > 8) {
    SoftmaxSweeps<<<blocks, BLOCK, 0, s>>>(x, y, rows, cols);
  } else if (per_thread <= 1) {
    SoftmaxInRegisters<1><<<blocks, BLOCK, 0, s>>>(x, y, rows, cols);
  } else if (per_thread <= 2) {
    SoftmaxInRegisters<2><<<blocks, BLOCK, 0, s>>>(x, y, rows, cols);
  } else if (per_thread <= 4) {
    SoftmaxInRegisters<4><<<blocks, BLOCK, 0, s>>>(x, y, rows, cols);
  } else {
    SoftmaxInRegisters<8><<<blocks, BLOCK, 0, s>>>(x, y, rows, cols);
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
