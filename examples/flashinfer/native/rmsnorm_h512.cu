// kpilot-ABI candidate for examples/flashinfer rmsnorm_h512: inputs hidden_states [batch_size, 512]
// and weight [512] (bf16), output [batch_size, 512] (bf16). One block of 128 threads per row, four
// elements per thread, the fp32 sum of squares reduced by warp shuffles (eps 1e-6, as the reference).
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <kpilot/kernel.h>

namespace {
constexpr int kHidden = 512;
constexpr int kThreads = 128;

__global__ void rmsnorm_rows(const __nv_bfloat16* x, const __nv_bfloat16* w, __nv_bfloat16* y) {
  const __nv_bfloat16* row = x + static_cast<size_t>(blockIdx.x) * kHidden;
  float v[kHidden / kThreads];
  float sum = 0.f;
  for (int i = 0; i < kHidden / kThreads; ++i) {
    v[i] = __bfloat162float(row[threadIdx.x + i * kThreads]);
    sum += v[i] * v[i];
  }
  for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
  __shared__ float partial[kThreads / 32];
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = sum;
  __syncthreads();
  float total = 0.f;
  for (int i = 0; i < kThreads / 32; ++i) total += partial[i];
  const float inv_rms = rsqrtf(total / kHidden + 1e-6f);
  __nv_bfloat16* out = y + static_cast<size_t>(blockIdx.x) * kHidden;
  for (int i = 0; i < kHidden / kThreads; ++i) {
    const int c = threadIdx.x + i * kThreads;
    out[c] = __float2bfloat16(v[i] * inv_rms * __bfloat162float(w[c]));
  }
}
}  // namespace

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs, const kpilot_tensor* outputs,
                                int num_outputs, const kpilot_scalar*, int, void* stream) {
  if (num_inputs != 2 || num_outputs != 1) return 1;
  const kpilot_tensor& x = inputs[0];
  if (x.dtype != KPILOT_BF16 || x.rank != 2 || x.shape[1] != kHidden) return 2;
  const int rows = static_cast<int>(x.shape[0]);
  if (rows == 0) return 0;
  rmsnorm_rows<<<rows, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const __nv_bfloat16*>(x.data), static_cast<const __nv_bfloat16*>(inputs[1].data),
      static_cast<__nv_bfloat16*>(outputs[0].data));
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
