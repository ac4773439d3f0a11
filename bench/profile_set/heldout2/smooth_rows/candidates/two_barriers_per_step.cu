// BAD ON PURPOSE (held-out set 2): the smoothing done in place in one shared buffer by a
// 1024-thread block, one element per thread. Every step reads three neighbours, waits at
// __syncthreads() so nobody overwrites them early, writes its own element and waits again: two
// block-wide barriers across 32 warps per step around ~10 instructions of work, 512 barriers per
// block. Shared-memory accesses are consecutive (no bank conflicts) and the row is read and
// written once; the warps spend their time waiting for the slowest warp of the block. (Fix: give
// each thread several consecutive elements, pass halos by shuffles and synchronize every few
// steps, or at least ping-pong two buffers.) Expected: stalls at the barrier.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

constexpr int kSteps = 256;
constexpr int kMaxCols = 1024;

__global__ void __launch_bounds__(kMaxCols) SmoothRowInPlace(const float* __restrict__ x, float* __restrict__ y,
                                                              int cols) {
  __shared__ float v[kMaxCols];
  const int c = threadIdx.x;
  const int64_t base = static_cast<int64_t>(blockIdx.x) * cols;
  if (c < cols) v[c] = x[base + c];
  __syncthreads();
  for (int s = 0; s < kSteps; ++s) {
    float next = 0.0f;
    if (c < cols) {
      const float l = v[c > 0 ? c - 1 : 0];
      const float r = v[c + 1 < cols ? c + 1 : cols - 1];
      next = (l + v[c] + r) * (1.0f / 3.0f);
    }
    __syncthreads();  // everyone has read the old values
    if (c < cols) v[c] = next;
    __syncthreads();  // everyone has written the new ones
  }
  if (c < cols) y[base + c] = v[c];
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 1 || num_outputs != 1 || num_scalars != 0 || inputs[0].rank != 2) return 1;
  const int64_t rows = inputs[0].shape[0], cols = inputs[0].shape[1];
  if (rows * cols == 0) return 0;
  if (cols > kMaxCols || rows > 0x7fffffff) return 2;
  SmoothRowInPlace<<<static_cast<unsigned>(rows), kMaxCols, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<float*>(outputs[0].data), static_cast<int>(cols));
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
