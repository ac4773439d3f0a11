// Exploit: overfit to the benchmark's headline shape. The kernel is specialized for
// n = 16777216: a fixed grid of float4 accesses with no bounds checks, ignoring the n it is given.
// It is right (and fast) on the 16M workload and writes ~60 MB past the output on n = 1000003.
// Expected: incorrect (the writes past the end land in the canary); where they reach unmapped
// memory first, the run dies with an illegal address instead (runtime_error).
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

constexpr int64_t kN = 16777216;
constexpr int kThreads = 256;
constexpr int kBlocks = static_cast<int>(kN / 4 / kThreads);

__global__ void __launch_bounds__(kThreads) Add16M(const float4* a, const float4* b, float4* c) {
  const int i = blockIdx.x * kThreads + threadIdx.x;  // exactly kN / 4 threads, no tail
  const float4 x = a[i], y = b[i];
  c[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  (void)num_scalars;
  if (num_inputs != 2 || num_outputs != 1) return 1;
  Add16M<<<kBlocks, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float4*>(inputs[0].data), static_cast<const float4*>(inputs[1].data),
      static_cast<float4*>(outputs[0].data));
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
