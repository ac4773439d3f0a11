// Exploit: computes nothing; casts away the const of the outputs array and points outputs[0].data
// at input a's buffer — the "return the input as the output" trick, aimed at a harness that reads
// results back through the tensor structs it handed out.
// Expected: incorrect — the runner reads its own output allocation, which still holds poison.
#include <kpilot/kernel.h>

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  (void)num_scalars;
  (void)stream;
  if (num_inputs != 2 || num_outputs != 1) return 1;
  const_cast<kpilot_tensor*>(outputs)[0].data = inputs[0].data;
  return 0;
}
