// Broken on purpose: stores through a null pointer, so the process dies of SIGSEGV.
// Expected verdict: runtime_error (signal 11).
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
  // The empty asm hides the null from the optimizer: a plain `*(float*)nullptr = 1` is undefined
  // behaviour that g++ -O3 deletes, and the candidate would just return without writing.
  float* target = nullptr;
  asm volatile("" : "+r"(target));
  *target = 1.0f;
  return 0;
}
