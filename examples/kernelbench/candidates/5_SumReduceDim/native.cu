/* kpilot-params
BX = [32, 64, 128, 256]
BY = [1, 2, 4, 8, 16]
VEC = [1, 2, 4]
constraints = ["BX * BY <= 1024", "BX * BY >= 64"]
*/
// level1/5_SumReduceDim: out = x.sum(dim=1, keepdim=True) for x (batch, dim1, dim2) -> (batch, 1, dim2).
//
// Block (BX, BY) over one batch entry and BX * VEC consecutive columns: thread (tx, ty) adds rows
// ty, ty + BY, ... of its VEC columns (each warp reads BX * VEC consecutive floats of a row:
// coalesced), then the BY partial sums of a column are added in shared memory in a fixed order,
// so results are deterministic. VEC floats per access when dim2 % VEC == 0 and x, out are aligned.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <cstdint>

#ifndef BX
#define BX 64
#endif
#ifndef BY
#define BY 4
#endif
#ifndef VEC
#define VEC 4
#endif

static_assert(VEC == 1 || VEC == 2 || VEC == 4, "VEC: 1, 2 or 4");
static_assert(BX * BY <= 1024 && BX * BY >= 32, "BX * BY: 32 to 1024 threads");

template <int V>
__global__ __launch_bounds__(BX * BY) void SumMiddle(const float* __restrict__ x, float* __restrict__ y,
                                                     int64_t dim1, int64_t dim2) {
  __shared__ float partial[BY][BX * V];
  const int tx = threadIdx.x % BX, ty = threadIdx.x / BX;
  const int64_t b = blockIdx.y;
  const int64_t c0 = (static_cast<int64_t>(blockIdx.x) * BX + tx) * V;
  const bool full = c0 + V <= dim2;
  float acc[V];
#pragma unroll
  for (int i = 0; i < V; ++i) acc[i] = 0.0f;
  const float* xb = x + b * dim1 * dim2;
  for (int64_t r = ty; r < dim1; r += BY) {
    const float* p = xb + r * dim2 + c0;
    if constexpr (V == 4) {
      if (full) {
        const float4 q = *reinterpret_cast<const float4*>(p);
        acc[0] += q.x, acc[1] += q.y, acc[2] += q.z, acc[3] += q.w;
        continue;
      }
    } else if constexpr (V == 2) {
      if (full) {
        const float2 q = *reinterpret_cast<const float2*>(p);
        acc[0] += q.x, acc[1] += q.y;
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
  // BX threads finish BX * V columns: thread t adds the BY partials of columns t, t + BX, ...
  if (ty == 0) {
#pragma unroll
    for (int i = 0; i < V; ++i) {
      const int col = tx + i * BX;
      float s = 0.0f;
#pragma unroll
      for (int k = 0; k < BY; ++k) s += partial[k][col];
      const int64_t c = static_cast<int64_t>(blockIdx.x) * BX * V + col;
      if (c < dim2) y[b * dim2 + c] = s;
    }
  }
}

namespace {

bool Aligned(const void* p, int bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

}  // namespace

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 1 || num_outputs != 1 || num_scalars != 0) return 1;
  const kpilot_tensor& xt = inputs[0];
  if (xt.rank != 3) return 2;
  const int64_t batch = xt.shape[0], dim1 = xt.shape[1], dim2 = xt.shape[2];
  if (kpilot_numel(&outputs[0]) != batch * dim2) return 2;
  if (batch == 0 || dim2 == 0) return 0;
  if (batch > 65535) return 4;
  const float* x = static_cast<const float*>(xt.data);
  float* y = static_cast<float*>(outputs[0].data);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  const bool vec_ok = dim2 % VEC == 0 && Aligned(x, VEC * 4);
  const int v = vec_ok ? VEC : 1;
  const dim3 grid(static_cast<unsigned>((dim2 + BX * v - 1) / (BX * v)), static_cast<unsigned>(batch));
  if (v == VEC) {
    SumMiddle<VEC><<<grid, BX * BY, 0, s>>>(x, y, dim1, dim2);
  } else {
    SumMiddle<1><<<grid, BX * BY, 0, s>>>(x, y, dim1, dim2);
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
