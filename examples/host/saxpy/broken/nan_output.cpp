// Broken on purpose: writes NaN to every output element. Expected verdict: incorrect.
#include <kpilot/kernel.h>

#include <math.h>

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)num_inputs;
  (void)num_outputs;
  (void)num_scalars;
  (void)stream;
  (void)inputs;
  (void)scalars;
  float* y = static_cast<float*>(outputs[0].data);
  const int64_t n = kpilot_numel(&outputs[0]);
  for (int64_t i = 0; i < n; ++i) y[i] = NAN;
  return 0;
}
