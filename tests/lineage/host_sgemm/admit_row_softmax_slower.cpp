// The scripted admission reply that must be rejected (tests/lineage/lineage_cli_test.cc): a
// correct row softmax for examples/host/row_softmax that is slower than the task's reference —
// it computes every row three times over, with exp in double precision.
#include <kpilot/kernel.h>

#include <math.h>

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  (void)stream;
  if (num_inputs != 1 || num_outputs != 1 || num_scalars != 0) return 1;
  if (inputs[0].rank != 2) return 2;
  const float* x = static_cast<const float*>(inputs[0].data);
  float* y = static_cast<float*>(outputs[0].data);
  const int64_t rows = inputs[0].shape[0];
  const int64_t cols = inputs[0].shape[1];
  for (int repeat = 0; repeat < 3; ++repeat) {
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x + r * cols;
      float* yr = y + r * cols;
      float max = -INFINITY;
      for (int64_t c = 0; c < cols; ++c) max = xr[c] > max ? xr[c] : max;
      double sum = 0.0;
      for (int64_t c = 0; c < cols; ++c) {
        yr[c] = static_cast<float>(exp(static_cast<double>(xr[c] - max)));
        sum += yr[c];
      }
      for (int64_t c = 0; c < cols; ++c) yr[c] = static_cast<float>(yr[c] / sum);
    }
  }
  return 0;
}
