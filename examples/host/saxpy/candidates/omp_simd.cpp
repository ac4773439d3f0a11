// saxpy across all cores: OpenMP static chunks of CHUNK elements, each an explicit SIMD loop.
// Memory-bound (12 bytes per 2 flops), so the gain comes from using every core's share of the
// memory bandwidth; CHUNK trades scheduling overhead against load balance.
#include <kpilot/kernel.h>

#ifndef CHUNK
#define CHUNK 65536
#endif
#ifndef VEC
#define VEC 16
#endif

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)stream;
  if (num_inputs != 2 || num_outputs != 1 || num_scalars != 1) return 1;
  const float* __restrict x = static_cast<const float*>(inputs[0].data);
  const float* __restrict y_in = static_cast<const float*>(inputs[1].data);
  float* __restrict y = static_cast<float*>(outputs[0].data);
  const float a = static_cast<float>(scalars[0].value.f);
  const int64_t n = kpilot_numel(&outputs[0]);
  const int64_t num_chunks = (n + CHUNK - 1) / CHUNK;

#pragma omp parallel for schedule(dynamic)
  for (int64_t c = 0; c < num_chunks; ++c) {
    const int64_t begin = c * CHUNK;
    const int64_t end = begin + CHUNK < n ? begin + CHUNK : n;
#pragma omp simd simdlen(VEC)
    for (int64_t i = begin; i < end; ++i) y[i] = a * x[i] + y_in[i];
  }
  return 0;
}
