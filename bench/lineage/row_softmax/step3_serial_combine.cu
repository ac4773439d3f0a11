// Row softmax, lineage step 3 (the block reduction removed): one block per row, threads strided
// along the row, three passes (max, sum of exp, write); thread 0 combines the threads' partials.
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

// Combines the block's values: every thread writes its own, thread 0 folds them in order.
template <typename Op>
__device__ __forceinline__ float BlockCombine(float v, Op op) {
  __shared__ float partial[BLOCK];
  __shared__ float result;
  partial[threadIdx.x] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float r = partial[0];
    for (int t = 1; t < BLOCK; ++t) r = op(r, partial[t]);
    result = r;
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
  max = BlockCombine(max, MaxOp());
  float sum = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += BLOCK) sum += expf(xr[c] - max);
  sum = BlockCombine(sum, SumOp());
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
