/* kpilot-params
BLOCK = [64, 128, 256, 512, 1024]
VEC = [1, 2, 4]
constraints = ["BLOCK * VEC <= 4096"]
*/
// level1/3_RowSoftmax: out = softmax(x, dim=-1) over rows of length dim (f32, any leading shape).
//
// One block of BLOCK threads per row (a grid-stride loop over rows), three sweeps: the row max,
// the sum of expf(x - max), and the output. VEC floats per access when dim % VEC == 0 and the
// pointers are aligned. The later sweeps mostly hit L1/L2, but the row is read three times; the
// better.cu next to this file keeps the row in registers instead.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <cfloat>
#include <climits>
#include <cstdint>

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef VEC
#define VEC 4
#endif

static_assert(BLOCK % 32 == 0 && BLOCK >= 32 && BLOCK <= 1024, "BLOCK: a multiple of 32, <= 1024");
static_assert(VEC == 1 || VEC == 2 || VEC == 4, "VEC: 1, 2 or 4");

struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct SumOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};

// Reduces over the block (`identity` fills the lanes past the last warp); every thread gets the
// result. Safe to call repeatedly.
template <class Op>
__device__ __forceinline__ float BlockReduce(float v, Op op, float identity) {
  __shared__ float partial[BLOCK / 32];
  __shared__ float result;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < BLOCK / 32 ? partial[lane] : identity;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (lane == 0) result = v;
  }
  __syncthreads();
  const float r = result;
  __syncthreads();
  return r;
}

template <int V>
__device__ __forceinline__ void Load(const float* p, float (&v)[V]) {
  if constexpr (V == 4) {
    const float4 q = *reinterpret_cast<const float4*>(p);
    v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
  } else if constexpr (V == 2) {
    const float2 q = *reinterpret_cast<const float2*>(p);
    v[0] = q.x, v[1] = q.y;
  } else {
    v[0] = *p;
  }
}

template <int V>
__device__ __forceinline__ void Store(float* p, const float (&v)[V]) {
  if constexpr (V == 4) {
    *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
  } else if constexpr (V == 2) {
    *reinterpret_cast<float2*>(p) = make_float2(v[0], v[1]);
  } else {
    *p = v[0];
  }
}

template <int V>
__global__ __launch_bounds__(BLOCK) void SoftmaxRows(const float* __restrict__ x, float* __restrict__ y,
                                                     int64_t rows, int64_t dim) {
  const int64_t first = static_cast<int64_t>(threadIdx.x) * V;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* xr = x + row * dim;
    float* yr = y + row * dim;
    float m = -FLT_MAX;
    for (int64_t c = first; c < dim; c += BLOCK * V) {
      float v[V];
      Load<V>(xr + c, v);
#pragma unroll
      for (int i = 0; i < V; ++i) m = fmaxf(m, v[i]);
    }
    m = BlockReduce(m, MaxOp(), -FLT_MAX);
    float sum = 0.0f;
    for (int64_t c = first; c < dim; c += BLOCK * V) {
      float v[V];
      Load<V>(xr + c, v);
#pragma unroll
      for (int i = 0; i < V; ++i) sum += expf(v[i] - m);
    }
    const float inv = 1.0f / BlockReduce(sum, SumOp(), 0.0f);
    for (int64_t c = first; c < dim; c += BLOCK * V) {
      float v[V];
      Load<V>(xr + c, v);
#pragma unroll
      for (int i = 0; i < V; ++i) v[i] = expf(v[i] - m) * inv;
      Store<V>(yr + c, v);
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
  if (inputs[0].rank < 1) return 2;
  const float* x = static_cast<const float*>(inputs[0].data);
  float* y = static_cast<float*>(outputs[0].data);
  const int64_t dim = inputs[0].shape[inputs[0].rank - 1];
  const int64_t n = kpilot_numel(&inputs[0]);
  if (n == 0) return 0;
  const int64_t rows = n / dim;
  const unsigned blocks = static_cast<unsigned>(rows < INT_MAX ? rows : INT_MAX);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (dim % VEC == 0 && Aligned(x, VEC * 4) && Aligned(y, VEC * 4)) {
    SoftmaxRows<VEC><<<blocks, BLOCK, 0, s>>>(x, y, rows, dim);
  } else {
    SoftmaxRows<1><<<blocks, BLOCK, 0, s>>>(x, y, rows, dim);
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
