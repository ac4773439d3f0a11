// bias_gelu reference: one thread per element, f32 arithmetic with the library tanhf, rounded to
// bf16 to nearest-even.
#include <kpilot/kernel.h>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <climits>

__device__ float GeluTanh(float v) {
  const float kSqrt2OverPi = 0.7978845608028654f;
  return 0.5f * v * (1.0f + tanhf(kSqrt2OverPi * (v + 0.044715f * v * v * v)));
}

__global__ void BiasGelu(const __nv_bfloat16* x, const __nv_bfloat16* bias, __nv_bfloat16* y,
                         int64_t rows, int64_t cols) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows * cols) return;
  const float v = __bfloat162float(x[i]) + __bfloat162float(bias[i % cols]);
  y[i] = __float2bfloat16(GeluTanh(v));
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 2 || num_outputs != 1 || num_scalars != 0) return 1;
  if (inputs[0].rank != 2) return 2;
  const int64_t rows = inputs[0].shape[0];
  const int64_t cols = inputs[0].shape[1];
  if (rows * cols == 0) return 0;
  const int threads = 256;
  const int64_t blocks = (rows * cols + threads - 1) / threads;
  if (blocks > INT_MAX) return 2;
  BiasGelu<<<static_cast<unsigned>(blocks), threads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const __nv_bfloat16*>(inputs[0].data),
      static_cast<const __nv_bfloat16*>(inputs[1].data),
      static_cast<__nv_bfloat16*>(outputs[0].data), rows, cols);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
