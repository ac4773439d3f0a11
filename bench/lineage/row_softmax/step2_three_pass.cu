// Row softmax, lineage step 2 (the online softmax removed): one block per row, threads strided
// along the row, three passes (max, sum of exp, write) and a two-level block reduction.
//
// Each reduction runs with warp shuffles, then the warps' partials through shared memory.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <climits>

#define BLOCK 256

namespace {

struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

struct SumOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};

template <typename Op>
__device__ __forceinline__ float WarpReduce(float v, Op op) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Reduces the block's values: shuffles within each warp, then the warps' partials in warp 0.
template <typename Op>
__device__ __forceinline__ float BlockReduce(float v, Op op, float identity) {
  __shared__ float partial[BLOCK / 32];
  __shared__ float result;
  v = WarpReduce(v, op);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = WarpReduce(threadIdx.x < BLOCK / 32 ? partial[threadIdx.x] : identity, op);
    if (threadIdx.x == 0) result = v;
  }
  __syncthreads();
  return result;
}

// One block per row.
__global__ void SoftmaxRows(const float* x, float* y, int64_t cols) {
  const float* xr = x + blockIdx.x * cols;
  float* yr = y + blockIdx.x * cols;
  float max = -INFINITY;
  for (int64_t c = threadIdx.x; c < cols; c += BLOCK) max = fmaxf(max, xr[c]);
  max = BlockReduce(max, MaxOp(), -INFINITY);
  float sum = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += BLOCK) sum += expf(xr[c] - max);
  sum = BlockReduce(sum, SumOp(), 0.0f);
  for (int64_t c = threadIdx.x; c < cols; c += BLOCK) yr[c] = expf(xr[c] - max) / sum;
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
  if (rows > INT_MAX) return 2;
  SoftmaxRows<<<static_cast<unsigned>(rows), BLOCK, 0, static_cast<cudaStream_t>(stream)>>>(x, y, cols);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
