// Misbehaves: a kernel stores through a wild device pointer ((float*)0x10). The fault is a sticky
// CUDA error (cudaErrorIllegalAddress): the context is unusable afterwards.
// Expected: runtime_error, naming the error (an illegal memory access).
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

__global__ void WildStore(float* wild, const float* a) {
  if (threadIdx.x == 0) wild[0] = a[0];
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)outputs;
  (void)num_outputs;
  (void)scalars;
  (void)num_scalars;
  if (num_inputs < 1) return 1;
  WildStore<<<1, 32, 0, static_cast<cudaStream_t>(stream)>>>(reinterpret_cast<float*>(uintptr_t{0x10}),
                                                              static_cast<const float*>(inputs[0].data));
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
