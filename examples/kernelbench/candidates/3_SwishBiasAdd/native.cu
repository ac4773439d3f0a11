/* kpilot-params
BLOCK = [128, 256, 512, 1024]
VEC = [1, 2, 4]
WAVES = [1, 2, 4, 8]
constraints = ["BLOCK * VEC >= 256"]
*/
// level2/3_SwishBiasAdd: out = x * sigmoid(x) + bias, x (rows, dim), bias (dim,) broadcast over rows.
//
// One fused pass: x is read once, out written once, the bias (dim floats) stays in L1/L2. A
// grid-stride loop over VEC-float vectors; the vector path needs dim % VEC == 0 (a vector never
// crosses a row) and aligned pointers, else the scalar kernel runs. sigmoid as 1 / (1 + expf(-x)),
// accurate expf (the fp32 tolerance is 1e-4).
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <cstdint>

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef VEC
#define VEC 4
#endif
#ifndef WAVES
#define WAVES 4
#endif

static_assert(VEC == 1 || VEC == 2 || VEC == 4, "VEC: 1, 2 or 4");
static_assert(BLOCK >= 32 && BLOCK <= 1024 && BLOCK % 32 == 0, "BLOCK: a multiple of 32, <= 1024");

template <int V>
__global__ __launch_bounds__(BLOCK) void SwishBias(const float* __restrict__ x,
                                                   const float* __restrict__ bias,
                                                   float* __restrict__ y, int64_t n, int64_t dim) {
  const int64_t num_vec = n / V;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * BLOCK;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * BLOCK + threadIdx.x; i < num_vec; i += stride) {
    const int64_t base = i * V;
    const int64_t col = base % dim;  // base .. base + V - 1 lie in one row (dim % V == 0)
    float v[V], b[V];
    if constexpr (V == 4) {
      const float4 q = reinterpret_cast<const float4*>(x)[i];
      const float4 c = *reinterpret_cast<const float4*>(bias + col);
      v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
      b[0] = c.x, b[1] = c.y, b[2] = c.z, b[3] = c.w;
    } else if constexpr (V == 2) {
      const float2 q = reinterpret_cast<const float2*>(x)[i];
      const float2 c = *reinterpret_cast<const float2*>(bias + col);
      v[0] = q.x, v[1] = q.y;
      b[0] = c.x, b[1] = c.y;
    } else {
      v[0] = x[i];
      b[0] = bias[col];
    }
#pragma unroll
    for (int j = 0; j < V; ++j) v[j] = v[j] * (1.0f / (1.0f + expf(-v[j]))) + b[j];
    if constexpr (V == 4) {
      reinterpret_cast<float4*>(y)[i] = make_float4(v[0], v[1], v[2], v[3]);
    } else if constexpr (V == 2) {
      reinterpret_cast<float2*>(y)[i] = make_float2(v[0], v[1]);
    } else {
      y[i] = v[0];
    }
  }
}

namespace {

int MultiprocessorCount() {
  int device = 0, count = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
    return 132;
  }
  return count;
}

bool Aligned(const void* p, int bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

}  // namespace

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 2 || num_outputs != 1 || num_scalars != 0) return 1;
  const kpilot_tensor& xt = inputs[0];
  const kpilot_tensor& bt = inputs[1];
  if (xt.rank < 1 || bt.rank != 1 || bt.shape[0] != xt.shape[xt.rank - 1]) return 2;
  const float* x = static_cast<const float*>(xt.data);
  const float* bias = static_cast<const float*>(bt.data);
  float* y = static_cast<float*>(outputs[0].data);
  const int64_t n = kpilot_numel(&xt);
  const int64_t dim = bt.shape[0];
  if (n == 0) return 0;
  const bool vec_ok = dim % VEC == 0 && Aligned(x, VEC * 4) && Aligned(bias, VEC * 4) && Aligned(y, VEC * 4);
  const int v = vec_ok ? VEC : 1;
  const int64_t needed = (n / v + BLOCK - 1) / BLOCK;
  const int64_t resident = static_cast<int64_t>(MultiprocessorCount()) * (2048 / BLOCK) * WAVES;
  const unsigned blocks = static_cast<unsigned>(needed < resident ? (needed > 0 ? needed : 1) : resident);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (v == VEC) {
    SwishBias<VEC><<<blocks, BLOCK, 0, s>>>(x, bias, y, n, dim);
  } else {
    SwishBias<1><<<blocks, BLOCK, 0, s>>>(x, bias, y, n, dim);
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
