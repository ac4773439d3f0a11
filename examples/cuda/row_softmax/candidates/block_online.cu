// Row softmax, one block per row, online max/sum and warp-shuffle reductions.
//
// Pass 1 reads the row once (float4 when cols % 4 == 0 and the pointers are 16-byte aligned) and
// keeps, per thread, a running maximum m and a sum s of exp(x - m), rescaling s whenever m grows
// (the "online softmax" recurrence). The block then merges the (m, s) pairs: within each warp by
// shuffles, across warps through shared memory. Pass 2 reads the row again (mostly from L1/L2,
// the row is at most a few tens of KB) and writes exp(x - m) / s. Exponentials use __expf.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

// The task's threads-per-row param (ROW_THREADS, shared with block_in_registers.cu) is this
// kernel's BLOCK: one block per row.
#if !defined(BLOCK) && defined(ROW_THREADS)
#define BLOCK ROW_THREADS
#endif
#ifndef BLOCK
#define BLOCK 512
#endif

static_assert(BLOCK % 32 == 0 && BLOCK >= 32 && BLOCK <= 1024, "BLOCK: a multiple of 32, <= 1024");

namespace {

struct MaxSum {
  float max;  // -INFINITY when no element has been seen
  float sum;  // sum of exp(x - max) over the elements seen
};

__device__ __forceinline__ MaxSum Merge(MaxSum a, MaxSum b) {
  const float max = fmaxf(a.max, b.max);
  if (max == -INFINITY) return a;  // both empty
  return {max, a.sum * __expf(a.max - max) + b.sum * __expf(b.max - max)};
}

// Folds up to four new values into a running (max, sum).
template <int V>
__device__ __forceinline__ MaxSum Fold(MaxSum acc, const float (&v)[V]) {
  float local_max = v[0];
#pragma unroll
  for (int i = 1; i < V; ++i) local_max = fmaxf(local_max, v[i]);
  const float max = fmaxf(acc.max, local_max);
  float sum = acc.sum * __expf(acc.max - max);  // exp(-inf) = 0 on the first fold
#pragma unroll
  for (int i = 0; i < V; ++i) sum += __expf(v[i] - max);
  return {max, sum};
}

// Merges the block's (max, sum) pairs; every thread gets the result.
__device__ __forceinline__ MaxSum BlockMerge(MaxSum v) {
  __shared__ MaxSum partial[BLOCK / 32];
  __shared__ MaxSum result;
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    const MaxSum other = {__shfl_xor_sync(0xffffffffu, v.max, offset),
                          __shfl_xor_sync(0xffffffffu, v.sum, offset)};
    v = Merge(v, other);
  }
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < BLOCK / 32 ? partial[lane] : MaxSum{-INFINITY, 0.0f};
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
      const MaxSum other = {__shfl_xor_sync(0xffffffffu, v.max, offset),
                            __shfl_xor_sync(0xffffffffu, v.sum, offset)};
      v = Merge(v, other);
    }
    if (lane == 0) result = v;
  }
  __syncthreads();
  const MaxSum r = result;
  __syncthreads();  // `partial` and `result` are reused by the next row
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

// V = 4 requires cols % 4 == 0 and 16-byte aligned x and y.
template <int V>
__global__ __launch_bounds__(BLOCK) void SoftmaxRows(const float* __restrict__ x,
                                                     float* __restrict__ y, int64_t rows,
                                                     int64_t cols) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* xr = x + row * cols;
    float* yr = y + row * cols;
    MaxSum acc = {-INFINITY, 0.0f};
    for (int64_t c = static_cast<int64_t>(threadIdx.x) * V; c < cols; c += BLOCK * V) {
      float v[V];
      LoadVec<V>(xr + c, v);
      acc = Fold<V>(acc, v);
    }
    const MaxSum total = BlockMerge(acc);
    const float inv_sum = 1.0f / total.sum;
    for (int64_t c = static_cast<int64_t>(threadIdx.x) * V; c < cols; c += BLOCK * V) {
      float v[V];
      LoadVec<V>(xr + c, v);
#pragma unroll
      for (int i = 0; i < V; ++i) v[i] = __expf(v[i] - total.max) * inv_sum;
      StoreVec<V>(yr + c, v);
    }
  }
}

bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

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
  const unsigned blocks = static_cast<unsigned>(rows < INT_MAX ? rows : INT_MAX);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (cols % 4 == 0 && Aligned16(x) && Aligned16(y)) {
    SoftmaxRows<4><<<blocks, BLOCK, 0, s>>>(x, y, rows, cols);
  } else {
    SoftmaxRows<1><<<blocks, BLOCK, 0, s>>>(x, y, rows, cols);
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
