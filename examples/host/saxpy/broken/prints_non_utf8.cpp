// Misbehaves on purpose: on its first call in a process prints bytes that are not UTF-8 (and a
// UTF-8 character placed so that a 4096-byte tail cuts it) to stdout and stderr, then computes
// the right answer. The runner reports the output's tail in its JSON result; it must stay
// writable. Expected verdict: passed.
#include <kpilot/kernel.h>

#include <stdio.h>

namespace {
bool printed = false;  // only decides whether to print; results never depend on it
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)num_inputs;
  (void)num_outputs;
  (void)num_scalars;
  (void)stream;
  if (!printed) {
    printed = true;
    FILE* const streams[] = {stdout, stderr};
    for (FILE* f : streams) {
      fputs("latin-1 \xe9t\xe9, a lone continuation \x80, a cut \xe2\x80", f);
      for (int i = 0; i < 1364; ++i) fputs("\xe2\x80\x98", f);  // ‘ × 1364: 4092 bytes
      fputs("\n", f);
      fflush(f);
    }
  }
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* y_in = static_cast<const float*>(inputs[1].data);
  float* y = static_cast<float*>(outputs[0].data);
  const float a = static_cast<float>(scalars[0].value.f);
  const int64_t n = kpilot_numel(&outputs[0]);
  for (int64_t i = 0; i < n; ++i) y[i] = a * x[i] + y_in[i];
  return 0;
}
