// bf16 GEMM reference with a bf16 result, as torch.matmul gives for bf16 operands: one thread per
// element of C, a plain loop over k in f32, rounded to bf16 once at the end.
#include <kpilot/kernel.h>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

__global__ void GemmBf16(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* c, int64_t m, int64_t n,
                         int64_t k) {
  const int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t row = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y;
  if (row >= m || col >= n) return;
  float acc = 0.0f;
  for (int64_t p = 0; p < k; ++p) acc += __bfloat162float(a[row * k + p]) * __bfloat162float(b[p * n + col]);
  c[row * n + col] = __float2bfloat16(acc);
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs, const kpilot_tensor* outputs,
                                int num_outputs, const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 2 || num_outputs != 1 || num_scalars != 0) return 1;
  if (inputs[0].rank != 2 || inputs[1].rank != 2) return 2;
  const int64_t m = inputs[0].shape[0];
  const int64_t k = inputs[0].shape[1];
  const int64_t n = inputs[1].shape[1];
  if (inputs[1].shape[0] != k) return 2;
  if (m * n == 0) return 0;
  const int64_t grid_x = (n + 15) / 16;
  const int64_t grid_y = (m + 15) / 16;
  if (grid_x > 0x7fffffff || grid_y > 65535) return 2;
  GemmBf16<<<dim3(static_cast<unsigned>(grid_x), static_cast<unsigned>(grid_y)), dim3(16, 16), 0,
             static_cast<cudaStream_t>(stream)>>>(static_cast<const __nv_bfloat16*>(inputs[0].data),
                                                  static_cast<const __nv_bfloat16*>(inputs[1].data),
                                                  static_cast<__nv_bfloat16*>(outputs[0].data), m, n, k);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
