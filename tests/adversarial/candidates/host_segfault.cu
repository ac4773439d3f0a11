// Misbehaves: dereferences a null host pointer inside kpilot_launch (SIGSEGV in the runner's
// worker process, with a live CUDA context).
// Expected: runtime_error naming the signal.
#include <kpilot/kernel.h>

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)inputs;
  (void)outputs;
  (void)num_outputs;
  (void)scalars;
  (void)num_scalars;
  (void)stream;
  volatile int* p = nullptr;
  *p = num_inputs;
  return 0;
}
