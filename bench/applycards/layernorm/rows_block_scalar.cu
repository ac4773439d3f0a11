// LayerNorm, one block per row, warp-shuffle reductions, scalar loads: what a generator writes for
// examples/cuda/layernorm when it applies two cards mined from the row_softmax expert by
// `kpilot lineage` (row-per-block-coalesced, two-level-block-reduce) to the naive reference.
// Three sweeps over the row by all BLOCK threads (sum, squared deviations, output); block sums by
// __shfl_xor_sync within warps and shared memory across warps. (bench/applycards_h200_check.sh)
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

#ifndef BLOCK
#define BLOCK 256
#endif

static_assert(BLOCK % 32 == 0 && BLOCK >= 32 && BLOCK <= 1024, "BLOCK: a multiple of 32, <= 1024");

namespace {

__device__ __forceinline__ float WarpSum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// Sum over the block; every thread gets the result. Safe to call repeatedly.
__device__ __forceinline__ float BlockSum(float v) {
  __shared__ float partial[BLOCK / 32];
  __shared__ float result;
  v = WarpSum(v);
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = WarpSum(lane < BLOCK / 32 ? partial[lane] : 0.0f);
    if (lane == 0) result = v;
  }
  __syncthreads();
  const float r = result;
  __syncthreads();  // the next call overwrites `partial` and `result`
  return r;
}

template <int V>
__device__ __forceinline__ void LoadVec(const float* p, float (&v)[V]) {
  if constexpr (V == 4) {
    const float4 q = *reinterpret_cast<const float4*>(p);
    v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
  } else {
    v[0] = *p;
  }
}

template <int V>
__device__ __forceinline__ void StoreVec(float* p, const float (&v)[V]) {
  if constexpr (V == 4) {
    *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
  } else {
    *p = v[0];
  }
}

template <int V>
__global__ __launch_bounds__(BLOCK) void LayerNormRows(const float* __restrict__ x,
                                                       const float* __restrict__ gamma,
                                                       const float* __restrict__ beta,
                                                       float* __restrict__ y, int64_t rows,
                                                       int64_t cols, float eps) {
  const int64_t first = static_cast<int64_t>(threadIdx.x) * V;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* xr = x + row * cols;
    float* yr = y + row * cols;
    float sum = 0.0f;
    for (int64_t c = first; c < cols; c += BLOCK * V) {
      float v[V];
      LoadVec<V>(xr + c, v);
#pragma unroll
      for (int i = 0; i < V; ++i) sum += v[i];
    }
    const float mean = BlockSum(sum) / static_cast<float>(cols);
    float sq = 0.0f;
    for (int64_t c = first; c < cols; c += BLOCK * V) {
      float v[V];
      LoadVec<V>(xr + c, v);
#pragma unroll
      for (int i = 0; i < V; ++i) sq += (v[i] - mean) * (v[i] - mean);
    }
    const float inv_std = rsqrtf(BlockSum(sq) / static_cast<float>(cols) + eps);
    for (int64_t c = first; c < cols; c += BLOCK * V) {
      float v[V], g[V], b[V];
      LoadVec<V>(xr + c, v);
      LoadVec<V>(gamma + c, g);
      LoadVec<V>(beta + c, b);
#pragma unroll
      for (int i = 0; i < V; ++i) v[i] = (v[i] - mean) * inv_std * g[i] + b[i];
      StoreVec<V>(yr + c, v);
    }
  }
}

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
  const unsigned blocks = static_cast<unsigned>(rows < INT_MAX ? rows : INT_MAX);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  LayerNormRows<1><<<blocks, BLOCK, 0, s>>>(x, gamma, beta, y, rows, cols, eps);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
