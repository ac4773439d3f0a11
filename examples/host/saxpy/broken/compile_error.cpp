// Broken on purpose: a syntax error (a missing semicolon and an unclosed brace).
// Expected verdict: compile_error.
#include <kpilot/kernel.h>

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)num_inputs;
  (void)num_outputs;
  (void)num_scalars;
  (void)stream;
  const float* x = static_cast<const float*>(inputs[0].data)
  float* y = static_cast<float*>(outputs[0].data);
  for (int64_t i = 0; i < kpilot_numel(&outputs[0]); ++i) {
    y[i] = x[i];
  return 0;
}
