// Circular-correlation reference: one thread per output; the wrapped index is advanced with a
// compare and subtract instead of a modulo.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

__global__ void CircularCorr(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int n,
                             int taps) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float acc = 0.0f;
  int j = i;
  for (int k = 0; k < taps; ++k) {
    acc = fmaf(w[k], x[j], acc);
    if (++j == n) j = 0;
  }
  y[i] = acc;
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 2 || num_outputs != 1 || num_scalars != 0) return 1;
  const int64_t n = kpilot_numel(&outputs[0]), taps = kpilot_numel(&inputs[1]);
  if (n == 0) return 0;
  if (n > 0x7fffffff - 256 || taps > 0x7fffffff) return 2;
  CircularCorr<<<static_cast<unsigned>((n + 255) / 256), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<const float*>(inputs[1].data),
      static_cast<float*>(outputs[0].data), static_cast<int>(n), static_cast<int>(taps));
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
