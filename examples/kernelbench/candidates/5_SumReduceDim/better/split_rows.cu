/* kpilot-params
BX = [32, 64, 128]
BY = [1, 2, 4, 8]
SPLIT = [2, 4, 8, 16, 32]
constraints = ["BX * BY <= 1024", "BX * BY >= 64"]
*/
// level1/5_SumReduceDim: dim1 split over SPLIT times more blocks, then a second pass adds the parts.
//
// native.cu gives each (batch entry, BX * 4 columns) one block, 128 blocks at the problem's shape:
// too few to keep the H200's 132 SMs streaming. Here block (cx, b, z) sums rows z, z + SPLIT, ...
// (interleaved, so every block reads whole 2 KB rows spread over dim1) of its columns with BX x BY
// threads and float4 loads, and writes a partial; a second kernel adds the SPLIT partials of each
// output in a fixed order (deterministic). Partials: SPLIT * batch * dim2 floats from
// cudaMallocAsync on the stream. dim2 % 4 != 0 or misaligned x: one float per thread.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <cstdint>

#ifndef BX
#define BX 64
#endif
#ifndef BY
#define BY 4
#endif
#ifndef SPLIT
#define SPLIT 8
#endif

static_assert(BX * BY <= 1024 && BX * BY >= 32, "BX * BY: 32 to 1024 threads");
static_assert(SPLIT >= 1 && SPLIT <= 65535, "SPLIT: a grid dimension");

template <int V>
__global__ __launch_bounds__(BX * BY) void PartialSums(const float* __restrict__ x, float* __restrict__ part,
                                                       int64_t batch, int64_t dim1, int64_t dim2) {
  __shared__ float partial[BY][BX * V];
  const int tx = threadIdx.x % BX, ty = threadIdx.x / BX;
  const int64_t b = blockIdx.y, z = blockIdx.z;
  const int64_t c0 = (static_cast<int64_t>(blockIdx.x) * BX + tx) * V;
  const bool full = c0 + V <= dim2;
  float acc[V];
#pragma unroll
  for (int i = 0; i < V; ++i) acc[i] = 0.0f;
  const float* xb = x + b * dim1 * dim2;
  for (int64_t r = z + static_cast<int64_t>(ty) * SPLIT; r < dim1; r += static_cast<int64_t>(BY) * SPLIT) {
    const float* p = xb + r * dim2 + c0;
    if constexpr (V == 4) {
      if (full) {
        const float4 q = *reinterpret_cast<const float4*>(p);
        acc[0] += q.x, acc[1] += q.y, acc[2] += q.z, acc[3] += q.w;
        continue;
      }
    }
#pragma unroll
    for (int i = 0; i < V; ++i)
      if (c0 + i < dim2) acc[i] += p[i];
  }
#pragma unroll
  for (int i = 0; i < V; ++i) partial[ty][tx * V + i] = acc[i];
  __syncthreads();
  if (ty == 0) {
#pragma unroll
    for (int i = 0; i < V; ++i) {
      const int col = tx + i * BX;
      float s = 0.0f;
#pragma unroll
      for (int k = 0; k < BY; ++k) s += partial[k][col];
      const int64_t c = static_cast<int64_t>(blockIdx.x) * BX * V + col;
      if (c < dim2) part[(z * batch + b) * dim2 + c] = s;
    }
  }
}

// out[i] = sum over z of part[z][i], z in order.
__global__ void AddParts(const float* __restrict__ part, float* __restrict__ y, int64_t n) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float s = 0.0f;
#pragma unroll
    for (int z = 0; z < SPLIT; ++z) s += part[z * n + i];
    y[i] = s;
  }
}

namespace {

bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 1 || num_outputs != 1 || num_scalars != 0) return 1;
  const kpilot_tensor& xt = inputs[0];
  if (xt.rank != 3) return 2;
  const int64_t batch = xt.shape[0], dim1 = xt.shape[1], dim2 = xt.shape[2];
  const int64_t n = batch * dim2;
  if (kpilot_numel(&outputs[0]) != n) return 2;
  if (n == 0) return 0;
  if (batch > 65535) return 4;
  const float* x = static_cast<const float*>(xt.data);
  float* y = static_cast<float*>(outputs[0].data);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  float* part = nullptr;
  if (cudaMallocAsync(reinterpret_cast<void**>(&part), static_cast<size_t>(SPLIT) * n * sizeof(float), s) !=
      cudaSuccess)
    return 5;
  const bool vec = dim2 % 4 == 0 && Aligned16(x);
  const int v = vec ? 4 : 1;
  const dim3 grid(static_cast<unsigned>((dim2 + BX * v - 1) / (BX * v)), static_cast<unsigned>(batch), SPLIT);
  if (vec) {
    PartialSums<4><<<grid, BX * BY, 0, s>>>(x, part, batch, dim1, dim2);
  } else {
    PartialSums<1><<<grid, BX * BY, 0, s>>>(x, part, batch, dim1, dim2);
  }
  int rc = cudaGetLastError() == cudaSuccess ? 0 : 3;
  if (rc == 0) {
    const int64_t blocks = (n + 255) / 256;
    AddParts<<<static_cast<unsigned>(blocks < 65535 ? blocks : 65535), 256, 0, s>>>(part, y, n);
    rc = cudaGetLastError() == cudaSuccess ? 0 : 3;
  }
  cudaFreeAsync(part, s);
  return rc;
}
