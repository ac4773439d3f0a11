// Triad reference: one thread per element.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

__global__ void Triad(const float* __restrict__ b, const float* __restrict__ c, float* __restrict__ a, float s,
                      int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) a[i] = fmaf(s, c[i], b[i]);
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  if (num_inputs != 2 || num_outputs != 1 || num_scalars != 1) return 1;
  const int64_t n = kpilot_numel(&outputs[0]);
  if (n == 0) return 0;
  const int64_t blocks = (n + 255) / 256;
  if (blocks > 0x7fffffff) return 2;
  Triad<<<static_cast<unsigned>(blocks), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<const float*>(inputs[1].data),
      static_cast<float*>(outputs[0].data), static_cast<float>(scalars[0].value.f), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
