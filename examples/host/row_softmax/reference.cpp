// Row softmax reference: three plain passes per row (max, sum of exp, scale), single-threaded,
// with the C library's expf.
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
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float max = -INFINITY;
    for (int64_t c = 0; c < cols; ++c) max = xr[c] > max ? xr[c] : max;
    float sum = 0.0f;
    for (int64_t c = 0; c < cols; ++c) {
      yr[c] = expf(xr[c] - max);
      sum += yr[c];
    }
    for (int64_t c = 0; c < cols; ++c) yr[c] = yr[c] / sum;
  }
  return 0;
}
