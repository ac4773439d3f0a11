// BAD ON PURPOSE (held-out set 2): one 1024-thread block per row, each thread looping over 64
// elements of its row. The per-element work is the reference's (256 dependent FMUL+FFMA steps,
// coalesced loads and stores), but the grid is the row count: 140 equal, heavy blocks for the
// H200's 132 SMs. One block (32 warps) keeps an SM's FP32 pipe busy for ~130-150 us. At 14
// registers two blocks fit on an SM, so 8 SMs get two blocks and need twice as long while the
// other 124 finish at half time and idle (with one block per SM it would be a second wave of 8):
// the kernel takes ~2x what its work needs, at ~53% average SM use. (Fix: a flat grid over all
// elements, or split rows into many blocks.) Expected: partial (last) wave.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

constexpr int kSteps = 256;
constexpr int kThreads = 1024;

__global__ void __launch_bounds__(kThreads) ChebyshevRowBlock(const float* __restrict__ x, float* __restrict__ y,
                                                               int64_t cols) {
  const int64_t base = static_cast<int64_t>(blockIdx.x) * cols;
  for (int64_t c = threadIdx.x; c < cols; c += kThreads) {
    float v = x[base + c];
    for (int s = 0; s < kSteps; ++s) v = fmaf(-2.0f * v, v, 1.0f);
    y[base + c] = v;
  }
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 1 || num_outputs != 1 || num_scalars != 0 || inputs[0].rank != 2) return 1;
  const int64_t rows = inputs[0].shape[0], cols = inputs[0].shape[1];
  if (rows * cols == 0) return 0;
  if (rows > 0x7fffffff) return 2;
  ChebyshevRowBlock<<<static_cast<unsigned>(rows), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<float*>(outputs[0].data), cols);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
