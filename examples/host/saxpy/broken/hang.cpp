// Broken on purpose: never returns (the loop reads a volatile, so it is not undefined behaviour
// the compiler may remove). Expected verdict: timeout.
#include <kpilot/kernel.h>

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)num_inputs;
  (void)num_outputs;
  (void)num_scalars;
  (void)stream;
  (void)inputs;
  (void)outputs;
  (void)scalars;
  volatile bool forever = true;
  while (forever) {
  }
  return 0;
}
