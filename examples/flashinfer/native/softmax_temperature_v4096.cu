// kpilot-ABI candidate for examples/flashinfer softmax_temperature_v4096: input logits
// [batch_size, 4096] (f32), scalar temperature, output probs [batch_size, 4096] (f32) =
// softmax(logits / temperature). One block of 256 threads per row, 16 values per thread kept in
// registers, max and sum reduced by warp shuffles.
#include <cuda_runtime.h>
#include <kpilot/kernel.h>

namespace {
constexpr int kVocab = 4096;
constexpr int kThreads = 256;
constexpr int kPerThread = kVocab / kThreads;

template <bool kMax>
__device__ float block_reduce(float v, float* scratch) {
  for (int off = 16; off > 0; off >>= 1) {
    const float o = __shfl_xor_sync(0xffffffffu, v, off);
    v = kMax ? fmaxf(v, o) : v + o;
  }
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  float r = scratch[0];
  for (int i = 1; i < kThreads / 32; ++i) r = kMax ? fmaxf(r, scratch[i]) : r + scratch[i];
  __syncthreads();
  return r;
}

__global__ void softmax_rows(const float* logits, float inv_t, float* probs) {
  __shared__ float scratch[kThreads / 32];
  const float* row = logits + static_cast<size_t>(blockIdx.x) * kVocab;
  float v[kPerThread];
  float m = -INFINITY;
  for (int i = 0; i < kPerThread; ++i) {
    v[i] = row[threadIdx.x + i * kThreads] * inv_t;
    m = fmaxf(m, v[i]);
  }
  m = block_reduce<true>(m, scratch);
  float s = 0.f;
  for (int i = 0; i < kPerThread; ++i) {
    v[i] = __expf(v[i] - m);
    s += v[i];
  }
  s = block_reduce<false>(s, scratch);
  float* out = probs + static_cast<size_t>(blockIdx.x) * kVocab;
  for (int i = 0; i < kPerThread; ++i) out[threadIdx.x + i * kThreads] = v[i] / s;
}
}  // namespace

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs, const kpilot_tensor* outputs,
                                int num_outputs, const kpilot_scalar* scalars, int num_scalars, void* stream) {
  if (num_inputs != 1 || num_outputs != 1 || num_scalars != 1) return 1;
  const kpilot_tensor& x = inputs[0];
  if (x.dtype != KPILOT_F32 || x.rank != 2 || x.shape[1] != kVocab) return 2;
  // The temperature is a float scalar (f32 per the definition; f64 when bound from a Python float).
  const double t = scalars[0].value.f;
  if (!(t > 0)) return 4;
  const int rows = static_cast<int>(x.shape[0]);
  if (rows == 0) return 0;
  softmax_rows<<<rows, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(x.data), static_cast<float>(1.0 / t), static_cast<float*>(outputs[0].data));
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
