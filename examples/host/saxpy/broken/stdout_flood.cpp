// Misbehaves on purpose: writes 256 MiB to standard output on its first call in a process (every
// call would make timing runs crawl), then computes the right answer. The harness must drain or
// cap the output without stalling or running out of memory.
// Expected verdict: passed (at worst runtime_error, never a broken harness).
#include <kpilot/kernel.h>

#include <string.h>
#include <unistd.h>

namespace {
bool flooded = false;  // only decides whether to print; results never depend on it
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)num_inputs;
  (void)num_outputs;
  (void)num_scalars;
  (void)stream;
  if (!flooded) {
    flooded = true;
    static char line[64 * 1024];
    memset(line, 'x', sizeof line);
    line[sizeof line - 1] = '\n';
    for (int i = 0; i < 4096; ++i) {
      const char* p = line;
      size_t left = sizeof line;
      while (left > 0) {
        const ssize_t written = write(1, p, left);
        if (written <= 0) break;  // a closed pipe: stop flooding, still compute
        p += written;
        left -= static_cast<size_t>(written);
      }
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
