// BAD ON PURPOSE (held-out set): a flat 1-D grid that recovers every element's coordinates with
// 64-bit division and modulo by run-time sizes: j = e % w, i = (e / w) % h, c = (e / (w*h)) % ch.
// The GPU has no integer divider: each element pays four software division sequences (~25
// instructions each, behind nvcc's 64-bit range check) for one load, three cached bias loads,
// three adds and one store, so instruction issue, not DRAM, sets the pace.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

__global__ void NchwBiasFlat(const float* __restrict__ x, const float* __restrict__ bc, const float* __restrict__ bh,
                             const float* __restrict__ bw, float* __restrict__ y, int64_t total, int64_t ch,
                             int64_t h, int64_t w) {
  const int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= total) return;
  const int64_t j = e % w;
  const int64_t i = (e / w) % h;
  const int64_t c = (e / (w * h)) % ch;
  y[e] = x[e] + bc[c] + bh[i] + bw[j];
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 4 || num_outputs != 1 || num_scalars != 0 || inputs[0].rank != 4) return 1;
  const int64_t ch = inputs[0].shape[1], h = inputs[0].shape[2], w = inputs[0].shape[3];
  const int64_t total = kpilot_numel(&inputs[0]);
  if (total == 0) return 0;
  const int64_t blocks = (total + 255) / 256;
  if (blocks > 0x7fffffff) return 2;
  NchwBiasFlat<<<static_cast<unsigned>(blocks), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<const float*>(inputs[1].data),
      static_cast<const float*>(inputs[2].data), static_cast<const float*>(inputs[3].data),
      static_cast<float*>(outputs[0].data), total, ch, h, w);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
