// Sum reduction reference: one single-threaded loop accumulating in double, rounded to f32 once.
#include <kpilot/kernel.h>

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  (void)stream;
  if (num_inputs != 1 || num_outputs != 1 || num_scalars != 0) return 1;
  const float* x = static_cast<const float*>(inputs[0].data);
  const int64_t n = kpilot_numel(&inputs[0]);
  double total = 0.0;
  for (int64_t i = 0; i < n; ++i) total += x[i];
  *static_cast<float*>(outputs[0].data) = static_cast<float>(total);
  return 0;
}
