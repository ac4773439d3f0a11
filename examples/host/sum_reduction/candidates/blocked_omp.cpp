// Sum reduction across all cores: the input is cut into blocks of BLOCK elements; each block is
// summed with a vectorized f32 loop (the simd reduction lets the compiler keep several vector
// accumulators), and block sums are added into a per-thread f64 total, so rounding error stays
// that of a BLOCK-element f32 sum rather than an n-element one.
#include <kpilot/kernel.h>

#ifndef BLOCK
#define BLOCK 4096
#endif

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  (void)stream;
  if (num_inputs != 1 || num_outputs != 1 || num_scalars != 0) return 1;
  const float* __restrict x = static_cast<const float*>(inputs[0].data);
  const int64_t n = kpilot_numel(&inputs[0]);
  const int64_t num_blocks = (n + BLOCK - 1) / BLOCK;
  double total = 0.0;
#pragma omp parallel for schedule(dynamic) reduction(+ : total)
  for (int64_t b = 0; b < num_blocks; ++b) {
    const int64_t begin = b * BLOCK;
    const int64_t end = begin + BLOCK < n ? begin + BLOCK : n;
    float block_sum = 0.0f;
#pragma omp simd reduction(+ : block_sum)
    for (int64_t i = begin; i < end; ++i) block_sum += x[i];
    total += block_sum;
  }
  *static_cast<float*>(outputs[0].data) = static_cast<float>(total);
  return 0;
}
