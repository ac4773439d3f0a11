// Matrix-power reference: one warp per matrix, A staged in shared memory with a padded row
// (float[32][33]) so lane i reading A[i][j] hits bank (i*33 + j) % 32: conflict free.
// v <- A v, 64 times; lane i owns v[i].
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

constexpr int kN = 32;
constexpr int kSteps = 64;
constexpr int kWarps = 4;

__global__ void MatvecPowerPadded(const float* __restrict__ a, const float* __restrict__ x, float* __restrict__ y,
                                  int64_t batch) {
  __shared__ float as[kWarps][kN][kN + 1];
  __shared__ float vs[kWarps][kN];
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t b = static_cast<int64_t>(blockIdx.x) * kWarps + w;
  if (b >= batch) return;
  const float* ab = a + b * kN * kN;
  for (int e = lane; e < kN * kN; e += 32) as[w][e / kN][e % kN] = ab[e];
  vs[w][lane] = x[b * kN + lane];
  __syncwarp();
  for (int s = 0; s < kSteps; ++s) {
    float acc = 0.0f;
#pragma unroll
    for (int j = 0; j < kN; ++j) acc = fmaf(as[w][lane][j], vs[w][j], acc);
    __syncwarp();
    vs[w][lane] = acc;
    __syncwarp();
  }
  y[b * kN + lane] = vs[w][lane];
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 2 || num_outputs != 1 || num_scalars != 0 || inputs[0].rank != 3) return 1;
  const int64_t batch = inputs[0].shape[0];
  if (inputs[0].shape[1] != kN || inputs[0].shape[2] != kN) return 2;
  if (batch == 0) return 0;
  const int64_t blocks = (batch + kWarps - 1) / kWarps;
  if (blocks > 0x7fffffff) return 2;
  MatvecPowerPadded<<<static_cast<unsigned>(blocks), 32 * kWarps, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<const float*>(inputs[1].data),
      static_cast<float*>(outputs[0].data), batch);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
