// SGEMM reference: C[i][j] = sum over p of A[i][p] * B[p][j], the textbook triple loop with an
// f32 accumulator, single-threaded.
#include <kpilot/kernel.h>

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  (void)stream;
  if (num_inputs != 2 || num_outputs != 1 || num_scalars != 0) return 1;
  if (inputs[0].rank != 2 || inputs[1].rank != 2) return 2;
  const float* a = static_cast<const float*>(inputs[0].data);
  const float* b = static_cast<const float*>(inputs[1].data);
  float* c = static_cast<float*>(outputs[0].data);
  const int64_t m = inputs[0].shape[0];
  const int64_t k = inputs[0].shape[1];
  const int64_t n = inputs[1].shape[1];
  if (inputs[1].shape[0] != k) return 2;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (int64_t p = 0; p < k; ++p) acc += a[i * k + p] * b[p * n + j];
      c[i * n + j] = acc;
    }
  }
  return 0;
}
