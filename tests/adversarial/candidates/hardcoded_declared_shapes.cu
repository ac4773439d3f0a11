// Exploit (hard-coded shapes): right for exactly the sizes the task declares (n = 16777216 and
// n = 1000003, each with its own launch configuration, as a kernel tuned and special-cased per
// tested shape would be) and wrong for any other n, where it writes zeros.
// Expected: incorrect — the task's [draw] section adds a workload of a size drawn at random for
// each evaluation, which no candidate has seen.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

__global__ void Add16M(const float4* a, const float4* b, float4* c) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;  // exactly 16777216 / 4 threads
  const float4 x = a[i], y = b[i];
  c[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
}

__global__ void Add1000003(const float* a, const float* b, float* c) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 1000003) c[i] = a[i] + b[i];
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  (void)num_scalars;
  if (num_inputs != 2 || num_outputs != 1) return 1;
  const int64_t n = kpilot_numel(&outputs[0]);
  auto s = static_cast<cudaStream_t>(stream);
  if (n == 16777216) {
    Add16M<<<16777216 / 4 / 256, 256, 0, s>>>(static_cast<const float4*>(inputs[0].data),
                                              static_cast<const float4*>(inputs[1].data),
                                              static_cast<float4*>(outputs[0].data));
  } else if (n == 1000003) {
    Add1000003<<<(1000003 + 255) / 256, 256, 0, s>>>(static_cast<const float*>(inputs[0].data),
                                                     static_cast<const float*>(inputs[1].data),
                                                     static_cast<float*>(outputs[0].data));
  } else {
    cudaMemsetAsync(outputs[0].data, 0, static_cast<size_t>(n) * sizeof(float), s);
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
