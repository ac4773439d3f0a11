// SGEMM with 128-bit vectors along the rows of C (lineage step 1: the register tile removed).
#include <kpilot/kernel.h>

#include <cstring>

namespace {

typedef float v4sf __attribute__((vector_size(16)));

inline v4sf Load4(const float* p) {
  v4sf v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline void Store4(float* p, v4sf v) { std::memcpy(p, &v, sizeof v); }

// Row i of C, columns [j0, n): rank-1 updates along the row, 128-bit vectors then scalars.
inline void Row(const float* __restrict a, const float* __restrict b, float* __restrict c, int64_t k,
                int64_t n, int64_t i, int64_t j0) {
  float* c_row = c + i * n;
  for (int64_t j = j0; j < n; ++j) c_row[j] = 0.0f;
  for (int64_t p = 0; p < k; ++p) {
    const float av = a[i * k + p];
    const float* b_row = b + p * n;
    int64_t j = j0;
    for (; j + 4 <= n; j += 4) Store4(c_row + j, Load4(c_row + j) + av * Load4(b_row + j));
    for (; j < n; ++j) c_row[j] += av * b_row[j];
  }
}

}  // namespace

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
  for (int64_t i = 0; i < m; ++i) Row(a, b, c, k, n, i, 0);
  return 0;
}
