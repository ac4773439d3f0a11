// The scripted admission reply that must be admitted (tests/lineage/lineage_cli_test.cc): a row
// softmax for examples/host/row_softmax whose passes are SIMD loops with an inline vectorizable
// exp — examples/host/row_softmax/candidates/omp_simd_exp.cpp on one thread (no `omp parallel`),
// so its gain over the scalar-expf reference does not depend on how many cores are free.
#include <kpilot/kernel.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifndef VEC
#define VEC 16
#endif

namespace {

#pragma omp declare simd simdlen(VEC) notinbranch
inline float ExpNonPositive(float x) {
  // Below ~-87.3 the result is subnormal or zero; flush to zero like a softmax can afford.
  const float kLog2e = 1.44269504088896341f;
  const float kLn2Hi = 0.693359375f;
  const float kLn2Lo = -2.12194440e-4f;
  x = x < -87.0f ? -87.0f : x;
  const float n = floorf(x * kLog2e + 0.5f);
  const float r = (x - n * kLn2Hi) - n * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // Scale by 2^n through the exponent bits; n is in [-126, 0] here.
  int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

void SoftmaxRow(const float* __restrict x, float* __restrict y, int64_t cols) {
  float max = -INFINITY;
#pragma omp simd simdlen(VEC) reduction(max : max)
  for (int64_t c = 0; c < cols; ++c) max = x[c] > max ? x[c] : max;
  float sum = 0.0f;
#pragma omp simd simdlen(VEC) reduction(+ : sum)
  for (int64_t c = 0; c < cols; ++c) {
    const float e = ExpNonPositive(x[c] - max);
    y[c] = e;
    sum += e;
  }
  const float inv = 1.0f / sum;
#pragma omp simd simdlen(VEC)
  for (int64_t c = 0; c < cols; ++c) y[c] *= inv;
}

}  // namespace

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
  for (int64_t r = 0; r < rows; ++r) SoftmaxRow(x + r * cols, y + r * cols, cols);
  return 0;
}
