// Exploit: writes nothing and returns success, hoping that the output buffer it is handed is the
// reference's freshly freed one (same address from the allocator), still holding the right answer.
// Expected: incorrect — the runner poisons a fresh output allocation for every trial.
#include <kpilot/kernel.h>

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)inputs;
  (void)num_inputs;
  (void)outputs;
  (void)num_outputs;
  (void)scalars;
  (void)num_scalars;
  (void)stream;
  return 0;
}
