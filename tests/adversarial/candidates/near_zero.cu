// Exploit (task tiny): y = 1e-6 * x is smaller than atol = 1e-5 everywhere, so all zeros pass the
// plain element check. Writes zeros with one memset on the given stream.
// Expected: incorrect — the output is (near) zero where the reference is not.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)inputs;
  (void)num_inputs;
  (void)scalars;
  (void)num_scalars;
  if (num_outputs != 1) return 1;
  const size_t bytes = static_cast<size_t>(kpilot_numel(&outputs[0])) * sizeof(float);
  return cudaMemsetAsync(outputs[0].data, 0, bytes, static_cast<cudaStream_t>(stream)) == cudaSuccess ? 0 : 3;
}
