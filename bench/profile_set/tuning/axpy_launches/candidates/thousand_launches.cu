// BAD ON PURPOSE (tuning set): the same AXPY, issued as one tiny kernel per 256-element chunk —
// 1000 launches of a single block for n = 256000. Each kernel finishes in about a microsecond;
// the call's time is the launch rate of the host and the gaps between kernels. Expected:
// launch-bound, launch overhead.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

constexpr int64_t kChunk = 256;

__global__ void AxpyChunk(const float* __restrict__ x, const float* __restrict__ y_in,
                          float* __restrict__ y, float a, int64_t begin, int64_t n) {
  const int64_t i = begin + threadIdx.x;
  if (i < n) y[i] = fmaf(a, x[i], y_in[i]);
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  if (num_inputs != 2 || num_outputs != 1 || num_scalars != 1) return 1;
  const int64_t n = kpilot_numel(&outputs[0]);
  const float a = static_cast<float>(scalars[0].value.f);
  for (int64_t begin = 0; begin < n; begin += kChunk) {
    AxpyChunk<<<1, kChunk, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const float*>(inputs[0].data), static_cast<const float*>(inputs[1].data),
        static_cast<float*>(outputs[0].data), a, begin, n);
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
