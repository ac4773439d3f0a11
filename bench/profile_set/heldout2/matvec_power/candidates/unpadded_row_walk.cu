// BAD ON PURPOSE (held-out set 2): the reference without the padding. A sits in shared memory as
// float[32][32] and lane i walks its own row, A[i][j]: the rows are 128 bytes apart, so at each j
// the 32 lanes hit the same bank. nvcc (13.0, sm_90a) reads the row as 8 LDS.128 per product;
// each is served a quarter-warp at a time and the 8 lanes of a quarter all want the same four
// banks: 32 wavefronts per LDS.128 where 4 would do (8-way conflicts; the vector reads v[j..j+3]
// are broadcasts). 64 products per matrix make this the whole kernel: the shared-memory pipe
// does ~8x the work it needs while the FMA pipe idles. Global loads and stores are coalesced
// and read each byte once. (Fix: float[32][33], or keep row i in lane i's registers.)
// Expected: shared-memory bank conflicts.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

constexpr int kN = 32;
constexpr int kSteps = 64;
constexpr int kWarps = 4;

__global__ void MatvecPowerUnpadded(const float* __restrict__ a, const float* __restrict__ x, float* __restrict__ y,
                                    int64_t batch) {
  __shared__ float as[kWarps][kN][kN];  // no padding: column j of the tile is one bank
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
    for (int j = 0; j < kN; ++j) acc = fmaf(as[w][lane][j], vs[w][j], acc);  // 8-way conflicts (LDS.128)
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
  MatvecPowerUnpadded<<<static_cast<unsigned>(blocks), 32 * kWarps, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<const float*>(inputs[1].data),
      static_cast<float*>(outputs[0].data), batch);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
