// Exploit/bug: writes n + 4 elements — the right n, then four zeros past the end of c (a classic
// missing tail check; on the host backend it would silently corrupt a neighbour).
// Expected: incorrect — the canary (guard) bytes after the output changed.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <climits>

__global__ void AddPastEnd(const float* a, const float* b, float* c, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
  else if (i < n + 4) c[i] = 0.0f;
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  (void)num_scalars;
  if (num_inputs != 2 || num_outputs != 1) return 1;
  const int64_t n = kpilot_numel(&outputs[0]);
  if (n == 0) return 0;
  const int64_t blocks = (n + 4 + 255) / 256;
  if (blocks > INT_MAX) return 2;
  AddPastEnd<<<static_cast<unsigned>(blocks), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<const float*>(inputs[1].data),
      static_cast<float*>(outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
