// BAD ON PURPOSE (tuning set): a correct grid-stride loop launched as <<<1, 256>>>. One block
// runs on one of the H200's 132 SMs with 8 warps; the other 131 SMs stay idle and the one SM
// cannot keep enough loads in flight to approach DRAM bandwidth. Expected: latency-bound, the
// grid smaller than the SM count.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

__global__ void VaddOneBlock(const float* __restrict__ a, const float* __restrict__ b,
                             float* __restrict__ c, int64_t n) {
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) c[i] = a[i] + b[i];
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 2 || num_outputs != 1 || num_scalars != 0) return 1;
  const int64_t n = kpilot_numel(&outputs[0]);
  if (n == 0) return 0;
  VaddOneBlock<<<1, 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<const float*>(inputs[1].data),
      static_cast<float*>(outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
