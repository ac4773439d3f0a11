// Misbehaves on purpose: on its first call in a process, forks a child that leaves the process
// group and session (setsid) and sleeps for 1000 s, so killing the runner's process group does
// not reach it. The parent computes the right answer. Expected verdict: passed, no process left.
#include <kpilot/kernel.h>

#include <unistd.h>

namespace {
bool forked = false;  // results never depend on it
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)num_inputs;
  (void)num_outputs;
  (void)num_scalars;
  (void)stream;
  // One child per process is enough to test the cleanup; forking on every timed call
  // would only pile up sleepers.
  if (!forked) {
    forked = true;
    if (fork() == 0) {
      setsid();
      sleep(1000);
      _exit(0);
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
