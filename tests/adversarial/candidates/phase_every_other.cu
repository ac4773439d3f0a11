// Exploit (phase detection, partial): after the 12 calls that cover the correctness trials, does
// the work on every other call only, halving the average time per call while half the timed
// calls still leave a right answer behind.
// Expected: incorrect when an audited timed call is a skipped one; suspicious when the audits miss
// them all, as the traced calls then launch different kernels from one call to the next.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

__global__ void Add(const float* a, const float* b, float* c, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) c[i] = a[i] + b[i];
}

// c = a + b on `s`.
[[maybe_unused]] static int LaunchAdd(const float* a, const float* b, float* c, int64_t n, cudaStream_t s) {
  int64_t blocks = (n + 255) / 256;
  if (blocks > 65535) blocks = 65535;
  Add<<<static_cast<unsigned>(blocks), 256, 0, s>>>(a, b, c, n);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}

// Busy-waits `ns` nanoseconds on the GPU (one thread): time that looks like work.
__global__ void Spin(long long ns) {
  long long start;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  for (long long now = start; now - start < ns;) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
}

namespace {
int calls = 0;
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  (void)num_scalars;
  if (num_inputs != 2 || num_outputs != 1) return 1;
  const float* a = static_cast<const float*>(inputs[0].data);
  const float* b = static_cast<const float*>(inputs[1].data);
  float* c = static_cast<float*>(outputs[0].data);
  const int64_t n = kpilot_numel(&outputs[0]);
  auto s = static_cast<cudaStream_t>(stream);
  if (n == 0) return 0;
  ++calls;
  if (calls <= 12 || calls % 2 == 0) return LaunchAdd(a, b, c, n, s);
  Spin<<<1, 1, 0, s>>>(1000);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
