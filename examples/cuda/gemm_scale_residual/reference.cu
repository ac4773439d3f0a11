// Scaled GEMM with a residual add: C = alpha * (A * B) + R, row-major bf16 A (m x k), B (k x n)
// and R (m x n), f32 accumulation, the scale and the add in f32, a bf16 C, as
// torch.matmul(a, b) * alpha + r computes it in one rounding (here: once at the end). One thread
// per element of C.
#include <kpilot/kernel.h>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void GemmScaleResidual(const __nv_bfloat16* a, const __nv_bfloat16* b, const __nv_bfloat16* r,
                                  __nv_bfloat16* c, float alpha, int64_t m, int64_t n, int64_t k) {
  const int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t row = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y;
  if (row >= m || col >= n) return;
  float acc = 0.0f;
  for (int64_t p = 0; p < k; ++p) acc += __bfloat162float(a[row * k + p]) * __bfloat162float(b[p * n + col]);
  c[row * n + col] = __float2bfloat16(alpha * acc + __bfloat162float(r[row * n + col]));
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs, const kpilot_tensor* outputs,
                                int num_outputs, const kpilot_scalar* scalars, int num_scalars, void* stream) {
  if (num_inputs != 3 || num_outputs != 1 || num_scalars != 1) return 1;
  const int64_t m = inputs[0].shape[0];
  const int64_t k = inputs[0].shape[1];
  const int64_t n = inputs[1].shape[1];
  if (inputs[1].shape[0] != k || inputs[2].shape[0] != m || inputs[2].shape[1] != n) return 2;
  if (m * n == 0) return 0;
  const dim3 grid(static_cast<unsigned>((n + 15) / 16), static_cast<unsigned>((m + 15) / 16));
  GemmScaleResidual<<<grid, dim3(16, 16), 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const __nv_bfloat16*>(inputs[0].data), static_cast<const __nv_bfloat16*>(inputs[1].data),
      static_cast<const __nv_bfloat16*>(inputs[2].data), static_cast<__nv_bfloat16*>(outputs[0].data),
      static_cast<float>(scalars[0].value.f), m, n, k);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
