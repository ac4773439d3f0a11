// Exploit (task tiny): writes one constant, 1e-6 times the mean of the first 32 inputs, to every
// element. |constant - 1e-6 x| stays far below atol = 1e-5, so the plain element check passes it.
// Expected: incorrect — a constant output where the reference varies.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <climits>

__global__ void FillMean(const float* x, float* y, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int64_t k = n < 32 ? n : 32;
  float s = 0.0f;
  for (int64_t j = 0; j < k; ++j) s += x[j];
  y[i] = 1e-6f * (s / static_cast<float>(k));
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  (void)num_scalars;
  if (num_inputs != 1 || num_outputs != 1) return 1;
  const int64_t n = kpilot_numel(&outputs[0]);
  if (n == 0) return 0;
  const int64_t blocks = (n + 255) / 256;
  if (blocks > INT_MAX) return 2;
  FillMean<<<static_cast<unsigned>(blocks), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<float*>(outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
