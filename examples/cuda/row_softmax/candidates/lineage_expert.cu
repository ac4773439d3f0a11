// Row softmax, the expert kernel of `kpilot lineage`'s H200 check (bench/lineage/row_softmax walks
// it back to the reference): one block per row, threads strided along the row, 128-bit loads, one
// online (max, sum) pass and a two-level block reduction.
//
// Pass 1 folds the row into a running (max, sum of exp(x - max)) per thread, rescaling the sum
// when the maximum grows. The block merges the pairs with warp shuffles, then the warps' partials
// through shared memory. Pass 2 writes exp(x - max) / sum.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

#define BLOCK 256

namespace {

struct MaxSum {
  float max;  // -INFINITY when no element has been seen
  float sum;  // sum of exp(x - max) over the elements seen
};

__device__ __forceinline__ MaxSum Push(MaxSum acc, float v) {
  if (v > acc.max) return {v, acc.sum * expf(acc.max - v) + 1.0f};
  return {acc.max, acc.sum + expf(v - acc.max)};
}

__device__ __forceinline__ MaxSum Merge(MaxSum a, MaxSum b) {
  const float max = fmaxf(a.max, b.max);
  if (max == -INFINITY) return a;
  return {max, a.sum * expf(a.max - max) + b.sum * expf(b.max - max)};
}

__device__ __forceinline__ MaxSum WarpMerge(MaxSum v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1)
    v = Merge(v, {__shfl_xor_sync(0xffffffffu, v.max, offset), __shfl_xor_sync(0xffffffffu, v.sum, offset)});
  return v;
}

// Merges the block's pairs: shuffles within each warp, then the warps' partials in warp 0.
__device__ __forceinline__ MaxSum BlockMerge(MaxSum v) {
  __shared__ MaxSum partial[BLOCK / 32];
  __shared__ MaxSum result;
  v = WarpMerge(v);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = WarpMerge(threadIdx.x < BLOCK / 32 ? partial[threadIdx.x] : MaxSum{-INFINITY, 0.0f});
    if (threadIdx.x == 0) result = v;
  }
  __syncthreads();
  return result;
}

// One block per row. vec4: cols % 4 == 0 and x, y 16-byte aligned.
__global__ void SoftmaxRows(const float* x, float* y, int64_t cols, bool vec4) {
  const float* xr = x + blockIdx.x * cols;
  float* yr = y + blockIdx.x * cols;
  MaxSum acc = {-INFINITY, 0.0f};
  if (vec4) {
    for (int64_t c = threadIdx.x * 4; c < cols; c += BLOCK * 4) {
      const float4 q = *reinterpret_cast<const float4*>(xr + c);
      acc = Push(Push(Push(Push(acc, q.x), q.y), q.z), q.w);
    }
  } else {
    for (int64_t c = threadIdx.x; c < cols; c += BLOCK) acc = Push(acc, xr[c]);
  }
  const MaxSum total = BlockMerge(acc);
  if (vec4) {
    for (int64_t c = threadIdx.x * 4; c < cols; c += BLOCK * 4) {
      float4 q = *reinterpret_cast<const float4*>(xr + c);
      q.x = expf(q.x - total.max) / total.sum;
      q.y = expf(q.y - total.max) / total.sum;
      q.z = expf(q.z - total.max) / total.sum;
      q.w = expf(q.w - total.max) / total.sum;
      *reinterpret_cast<float4*>(yr + c) = q;
    }
  } else {
    for (int64_t c = threadIdx.x; c < cols; c += BLOCK) yr[c] = expf(xr[c] - total.max) / total.sum;
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
  if (rows > INT_MAX) return 2;
  const bool vec4 = cols % 4 == 0 && Aligned16(x) && Aligned16(y);
  SoftmaxRows<<<static_cast<unsigned>(rows), BLOCK, 0, static_cast<cudaStream_t>(stream)>>>(x, y, cols, vec4);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
