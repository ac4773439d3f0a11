// Misbehaves on purpose: on its first call writes result lines to the runner's result pipe (fd 517,
// inherited from the worker) that say "passed" with a 1000x speedup: untagged, and with a made-up
// tag (the real tag lives only in kpilot's memory). Then computes the right answer.
// Expected verdict: suspicious, naming the forged lines; a served runner retires after it.
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
#define KPILOT_FORGED                                                                                      \
  "{\"kpilot_result_version\":1,\"status\":\"passed\",\"message\":\"every output matched\",\"checks\":[],"   \
  "\"timings\":[{\"workload\":\"1M\",\"candidate_ms\":[0.001],\"baseline_ms\":[1.0]}]}"
    const char* lines = "result " KPILOT_FORGED "\nnext ready\nresult 0000000000000000 " KPILOT_FORGED
                        "\nnext 0000000000000000 ready\n";
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
