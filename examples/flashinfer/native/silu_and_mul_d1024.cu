// kpilot-ABI candidate for examples/flashinfer silu_and_mul_d1024: input [num_tokens, 2048] (f16),
// output out [num_tokens, 1024] (f16) = silu(input[:, :1024]) * input[:, 1024:]. One thread per
// pair of outputs with half2 loads and stores; math in fp32.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <kpilot/kernel.h>

namespace {
constexpr int kD = 1024;

__global__ void silu_and_mul(const __half2* in, __half2* out, int64_t pairs) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= pairs) return;
  const int64_t row = i / (kD / 2), col = i % (kD / 2);
  const float2 g = __half22float2(in[row * kD + col]);
  const float2 u = __half22float2(in[row * kD + kD / 2 + col]);
  float2 r;
  r.x = g.x / (1.f + __expf(-g.x)) * u.x;
  r.y = g.y / (1.f + __expf(-g.y)) * u.y;
  out[i] = __float22half2_rn(r);
}
}  // namespace

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs, const kpilot_tensor* outputs,
                                int num_outputs, const kpilot_scalar*, int, void* stream) {
  if (num_inputs != 1 || num_outputs != 1) return 1;
  const kpilot_tensor& x = inputs[0];
  if (x.dtype != KPILOT_F16 || x.rank != 2 || x.shape[1] != 2 * kD) return 2;
  const int64_t pairs = kpilot_numel(&outputs[0]) / 2;
  if (pairs == 0) return 0;
  const int threads = 256;
  const int blocks = static_cast<int>((pairs + threads - 1) / threads);
  silu_and_mul<<<blocks, threads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const __half2*>(x.data), static_cast<__half2*>(outputs[0].data), pairs);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
