// Misbehaves: launches a kernel that never ends (it spins on a flag nobody sets) on the given
// stream and returns 0; the runner's synchronize never returns.
// Expected: timeout (run with timeout_s = 10) — the runner is killed with everything it started,
// and the GPU is usable by the next case.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

__device__ volatile int g_stop = 0;

__global__ void Spin(float* c) {
  while (g_stop == 0) {
  }
  c[threadIdx.x] = 0.0f;  // never reached
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)inputs;
  (void)num_inputs;
  (void)scalars;
  (void)num_scalars;
  if (num_outputs != 1) return 1;
  Spin<<<1, 32, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<float*>(outputs[0].data));
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
