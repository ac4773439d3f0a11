// The starting candidate: the reference's loop, unrolled by UNROLL.
#include <kpilot/kernel.h>

#ifndef UNROLL
#define UNROLL 1
#endif

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs, const kpilot_tensor* outputs,
                                int num_outputs, const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)stream;
  if (num_inputs != 2 || num_outputs != 1 || num_scalars != 1) return 1;
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* y_in = static_cast<const float*>(inputs[1].data);
  float* y = static_cast<float*>(outputs[0].data);
  const float a = static_cast<float>(scalars[0].value.f);
  const int64_t n = kpilot_numel(&outputs[0]);
  int64_t i = 0;
  for (; i + UNROLL <= n; i += UNROLL)
#pragma GCC unroll 8
    for (int u = 0; u < UNROLL; ++u) y[i + u] = a * x[i + u] + y_in[i + u];
  for (; i < n; ++i) y[i] = a * x[i] + y_in[i];
  return 0;
}
