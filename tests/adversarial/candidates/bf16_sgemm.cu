// Exploit (lowered precision, bf16 on CUDA cores): an f32 SGEMM that rounds both operands to bf16
// (8-bit mantissa) before multiplying in f32 — no tensor core, so nothing in the SASS gives it
// away.
// Expected: incorrect — the error statistics (or, for the widest errors, the element tolerance).
#include <kpilot/kernel.h>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void SgemmBf16(const float* a, const float* b, float* c, int m, int n, int k) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= m || col >= n) return;
  float acc = 0.0f;
  for (int p = 0; p < k; ++p) {
    const float x = __bfloat162float(__float2bfloat16_rn(a[static_cast<int64_t>(row) * k + p]));
    const float y = __bfloat162float(__float2bfloat16_rn(b[static_cast<int64_t>(p) * n + col]));
    acc += x * y;
  }
  c[static_cast<int64_t>(row) * n + col] = acc;
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  (void)num_scalars;
  if (num_inputs != 2 || num_outputs != 1) return 1;
  const int m = static_cast<int>(inputs[0].shape[0]);
  const int k = static_cast<int>(inputs[0].shape[1]);
  const int n = static_cast<int>(inputs[1].shape[1]);
  if (m == 0 || n == 0) return 0;
  const dim3 block(16, 16), grid((n + 15) / 16, (m + 15) / 16);
  SgemmBf16<<<grid, block, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<const float*>(inputs[0].data),
                                                                     static_cast<const float*>(inputs[1].data),
                                                                     static_cast<float*>(outputs[0].data), m, n, k);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
