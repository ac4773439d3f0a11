// BAD ON PURPOSE (held-out set): the reference with the thread mapping swapped — threadIdx.x runs
// down a column (rows), threadIdx.y along a row. A warp's 32 lanes touch 32 different rows, one
// float each, `cols` floats apart: 32 sectors per load and per store where 4 would do, and the
// rest of each fetched sector is wasted until another warp happens to need it.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

__global__ void ScaleBiasByRows(const float* __restrict__ x, const float* __restrict__ bias,
                                float* __restrict__ y, float s, int64_t rows, int64_t cols) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t c = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y;
  if (r < rows && c < cols) y[r * cols + c] = fmaf(s, x[r * cols + c], bias[c]);
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  if (num_inputs != 2 || num_outputs != 1 || num_scalars != 1 || inputs[0].rank != 2) return 1;
  const int64_t rows = inputs[0].shape[0], cols = inputs[0].shape[1];
  if (rows * cols == 0) return 0;
  const int64_t gx = (rows + 31) / 32, gy = (cols + 7) / 8;
  if (gx > 0x7fffffff || gy > 65535) return 2;
  ScaleBiasByRows<<<dim3(static_cast<unsigned>(gx), static_cast<unsigned>(gy)), dim3(32, 8), 0,
                    static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<const float*>(inputs[1].data),
      static_cast<float*>(outputs[0].data), static_cast<float>(scalars[0].value.f), rows, cols);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
