// Misbehaves: asks cudaMalloc for 1 TiB of device memory (no managed memory: oversubscribing
// that can stall the GPU for everyone). The allocation fails, and the candidate reports it by
// returning 7. Expected: runtime_error — a non-zero return is the candidate's failure, and the
// failed allocation must not poison the runner's own CUDA state.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)inputs;
  (void)num_inputs;
  (void)outputs;
  (void)num_outputs;
  (void)scalars;
  (void)num_scalars;
  (void)stream;
  void* p = nullptr;
  const cudaError_t err = cudaMalloc(&p, size_t{1} << 40);
  if (err != cudaSuccess) {
    cudaGetLastError();  // clear the (non-sticky) error
    return 7;
  }
  cudaFree(p);  // a machine with 1 TiB free: still refuse, so the verdict does not depend on it
  return 7;
}
