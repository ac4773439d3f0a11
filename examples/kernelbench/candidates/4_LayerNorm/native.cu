/* kpilot-params
BLOCK = [64, 128, 256, 512, 1024]
VEC = [1, 2, 4]
constraints = ["BLOCK * VEC <= 4096"]
*/
// level1/4_LayerNorm: out = LayerNorm(dim)(x) with ln.weight and ln.bias, eps 1e-5, over the last
// dimension (f32, any leading shape). Inputs: x, ln_weight, ln_bias.
//
// One block of BLOCK threads per row, three sweeps (sum -> mean, squared deviations -> variance,
// output): the same two-pass statistics as torch, the row read from DRAM once and from L1/L2 after.
// VEC floats per access when the row length is a multiple of VEC and the pointers are aligned.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

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

constexpr float kEps = 1e-5f;  // the problem's nn.LayerNorm eps

// Sum over the block; every thread gets the result. Safe to call repeatedly.
__device__ __forceinline__ float BlockSum(float v) {
  __shared__ float partial[BLOCK / 32];
  __shared__ float result;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < BLOCK / 32 ? partial[lane] : 0.0f;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
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

// The row's values: x, or x + residual when RES.
template <int V, bool RES>
__device__ __forceinline__ void LoadRow(const float* x, const float* r, int64_t c, float (&v)[V]) {
  Load<V>(x + c, v);
  if constexpr (RES) {
    float w[V];
    Load<V>(r + c, w);
#pragma unroll
    for (int i = 0; i < V; ++i) v[i] += w[i];
  }
}

template <int V, bool RES>
__global__ __launch_bounds__(BLOCK) void LayerNormRows(const float* __restrict__ x,
                                                       const float* __restrict__ res,
                                                       const float* __restrict__ gamma,
                                                       const float* __restrict__ beta,
                                                       float* __restrict__ y, int64_t rows,
                                                       int64_t cols) {
  const int64_t first = static_cast<int64_t>(threadIdx.x) * V;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* xr = x + row * cols;
    const float* rr = RES ? res + row * cols : nullptr;
    float* yr = y + row * cols;
    float sum = 0.0f;
    for (int64_t c = first; c < cols; c += BLOCK * V) {
      float v[V];
      LoadRow<V, RES>(xr, rr, c, v);
#pragma unroll
      for (int i = 0; i < V; ++i) sum += v[i];
    }
    const float mean = BlockSum(sum) / static_cast<float>(cols);
    float sq = 0.0f;
    for (int64_t c = first; c < cols; c += BLOCK * V) {
      float v[V];
      LoadRow<V, RES>(xr, rr, c, v);
#pragma unroll
      for (int i = 0; i < V; ++i) sq += (v[i] - mean) * (v[i] - mean);
    }
    const float inv_std = rsqrtf(BlockSum(sq) / static_cast<float>(cols) + kEps);
    for (int64_t c = first; c < cols; c += BLOCK * V) {
      float v[V], g[V], b[V];
      LoadRow<V, RES>(xr, rr, c, v);
      Load<V>(gamma + c, g);
      Load<V>(beta + c, b);
#pragma unroll
      for (int i = 0; i < V; ++i) v[i] = (v[i] - mean) * inv_std * g[i] + b[i];
      Store<V>(yr + c, v);
    }
  }
}

namespace {

bool Aligned(const void* p, int bytes) { return p == nullptr || reinterpret_cast<uintptr_t>(p) % bytes == 0; }

}  // namespace

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 3 || num_outputs != 1 || num_scalars != 0) return 1;
  const kpilot_tensor& xt = inputs[0];
  if (xt.rank < 1) return 2;
  const int64_t cols = xt.shape[xt.rank - 1];
  if (kpilot_numel(&inputs[1]) != cols || kpilot_numel(&inputs[2]) != cols) return 2;
  const float* x = static_cast<const float*>(xt.data);
  const float* gamma = static_cast<const float*>(inputs[1].data);
  const float* beta = static_cast<const float*>(inputs[2].data);
  float* y = static_cast<float*>(outputs[0].data);
  const int64_t n = kpilot_numel(&xt);
  if (n == 0) return 0;
  const int64_t rows = n / cols;
  const unsigned blocks = static_cast<unsigned>(rows < INT_MAX ? rows : INT_MAX);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  const int b = VEC * 4;
  if (cols % VEC == 0 && Aligned(x, b) && Aligned(gamma, b) && Aligned(beta, b) && Aligned(y, b)) {
    LayerNormRows<VEC, false><<<blocks, BLOCK, 0, s>>>(x, nullptr, gamma, beta, y, rows, cols);
  } else {
    LayerNormRows<1, false><<<blocks, BLOCK, 0, s>>>(x, nullptr, gamma, beta, y, rows, cols);
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
