// The reference: a plain loop.
#include <kpilot/kernel.h>

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs, const kpilot_tensor* outputs,
                                int num_outputs, const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)stream;
  if (num_inputs != 2 || num_outputs != 1 || num_scalars != 1) return 1;
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* y_in = static_cast<const float*>(inputs[1].data);
  float* y = static_cast<float*>(outputs[0].data);
  const float a = static_cast<float>(scalars[0].value.f);
  const int64_t n = kpilot_numel(&outputs[0]);
  for (int64_t i = 0; i < n; ++i) y[i] = a * x[i] + y_in[i];
  return 0;
}
