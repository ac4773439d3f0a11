// Misbehaves: every thread of a 16M-thread grid calls device printf on every call (far more than
// the device printf FIFO holds), and the host prints 200000 lines on the first call and 1000 on
// every later one; then the results are right. The runner must cap or drain the candidate's
// stdout without stalling, and must not mistake the noise for its own protocol.
// Expected: passed.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <climits>
#include <cstdio>

namespace {
bool flooded = false;  // only decides how much to print; results never depend on it
}

__global__ void AddAndPrint(const float* a, const float* b, float* c, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  c[i] = a[i] + b[i];
  printf("thread %lld: %f + %f = %f {\"status\": \"passed\"}\n", static_cast<long long>(i), a[i], b[i], c[i]);
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  (void)num_scalars;
  if (num_inputs != 2 || num_outputs != 1) return 1;
  const int lines = flooded ? 1000 : 200000;
  flooded = true;
  for (int i = 0; i < lines; ++i)
    std::printf("host line %d: {\"status\": \"passed\", \"message\": \"not the runner speaking\"}\n", i);
  std::fflush(stdout);
  const int64_t n = kpilot_numel(&outputs[0]);
  if (n == 0) return 0;
  const int64_t blocks = (n + 255) / 256;
  if (blocks > INT_MAX) return 2;
  AddAndPrint<<<static_cast<unsigned>(blocks), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<const float*>(inputs[1].data),
      static_cast<float*>(outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
