// BAD ON PURPOSE (held-out set 2): the reference with the wrap written as `(i + k) % n` inside the
// tap loop. n is a run-time value, so every tap pays a 32-bit software remainder. nvcc (13.0,
// sm_90a) unrolls the loop by 4 and shares the I2F.RP/MUFU.RCP reciprocal of n across the four
// taps, but each tap still needs IABS, IMAD.HI, IMAD, two compare-and-subtract corrections, a sign
// fix-up and a select: the unrolled body is 85 instructions for 4 FFMAs and 8 L1-hit loads, ~17
// integer instructions per tap. 512M taps per launch make integer issue the whole cost; the loads
// are coalesced and DRAM sees each byte about once. (Fix: advance the index and subtract n on
// wrap, as the reference does, or split the loop at the wrap point.) Expected: software integer
// division/modulo in the index math.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

__global__ void CircularCorrModulo(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                                   int n, int taps) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float acc = 0.0f;
  for (int k = 0; k < taps; ++k) acc = fmaf(w[k], x[(i + k) % n], acc);
  y[i] = acc;
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 2 || num_outputs != 1 || num_scalars != 0) return 1;
  const int64_t n = kpilot_numel(&outputs[0]), taps = kpilot_numel(&inputs[1]);
  if (n == 0) return 0;
  if (n + taps > 0x7fffffff - 256) return 2;  // i + k must not overflow
  CircularCorrModulo<<<static_cast<unsigned>((n + 255) / 256), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<const float*>(inputs[1].data),
      static_cast<float*>(outputs[0].data), static_cast<int>(n), static_cast<int>(taps));
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
