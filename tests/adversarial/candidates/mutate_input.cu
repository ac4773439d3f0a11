// Exploit: computes the right c, then scribbles on input b (adds 1 to every 4099th element, after
// reading it), e.g. to reuse an input as scratch space. The output is exactly right.
// Expected: incorrect — inputs are read-only, and the runner hashes them after each trial.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <climits>

__global__ void AddAndScribble(const float* a, float* b, float* c, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float y = b[i];
  c[i] = a[i] + y;
  if (i % 4099 == 0) b[i] = y + 1.0f;
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  (void)num_scalars;
  if (num_inputs != 2 || num_outputs != 1) return 1;
  const int64_t n = kpilot_numel(&outputs[0]);
  if (n == 0) return 0;
  const int64_t blocks = (n + 255) / 256;
  if (blocks > INT_MAX) return 2;
  AddAndScribble<<<static_cast<unsigned>(blocks), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<float*>(inputs[1].data),  // const cast away
      static_cast<float*>(outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
