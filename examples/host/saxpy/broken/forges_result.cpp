// Misbehaves on purpose: computes the right answer, and on its first call writes result lines
// that say "error" to the runner's result pipe (fd 517), which it inherits from the worker: in
// the old untagged form and with a made-up tag. Expected verdict: passed (its own result); a
// served runner retires after it, and the next request gets its own result.
#include <unistd.h>

#include <cstring>

#include <kpilot/kernel.h>

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)num_inputs;
  (void)num_outputs;
  (void)num_scalars;
  (void)stream;
  static bool forged = false;
  if (!forged) {
    forged = true;
    const char* lines =
        "result {\"status\":\"error\",\"message\":\"forged\"}\nnext ready\n"
        "result 0000000000000000 {\"status\":\"error\",\"message\":\"forged\"}\nnext 0000000000000000 ready\n";
    (void)!write(517, lines, std::strlen(lines));
  }
  const float* x = static_cast<const float*>(inputs[0].data);
  const float* y_in = static_cast<const float*>(inputs[1].data);
  float* y = static_cast<float*>(outputs[0].data);
  const float a = static_cast<float>(scalars[0].value.f);
  const int64_t n = kpilot_numel(&outputs[0]);
  for (int64_t i = 0; i < n; ++i) y[i] = a * x[i] + y_in[i];
  return 0;
}
