// BAD ON PURPOSE (held-out set): one thread per element, path chosen by i % 4. Neighbouring lanes
// take different paths, so every warp runs all four 1024-step loops one after another with only
// 8 of its 32 lanes enabled in each: a quarter of the SIMD width does the work, about 4x the time.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include "../paths.cuh"

__global__ void FourPathsByLane(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = Path(static_cast<int>(i & 3), x[i]);  // lanes 0,1,2,3 diverge
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 1 || num_outputs != 1 || num_scalars != 0) return 1;
  const int64_t n = kpilot_numel(&outputs[0]);
  if (n == 0) return 0;
  const int64_t blocks = (n + 255) / 256;
  if (blocks > 0x7fffffff) return 2;
  FourPathsByLane<<<static_cast<unsigned>(blocks), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<float*>(outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
