// Control: an honest vadd that keeps a 64 MiB workspace allocated from its first call on (a
// split-phase kernel would, say) and writes through it every call. Memory kept once is not a
// cache that grows: it must not be mistaken for one.
// Expected: passed.
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

namespace {
float* workspace = nullptr;
constexpr int64_t kWorkspaceFloats = int64_t{16} << 20;  // 64 MiB
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
  if (!workspace && cudaMalloc(&workspace, kWorkspaceFloats * sizeof(float)) != cudaSuccess) return 4;
  const int64_t m = n < kWorkspaceFloats ? n : kWorkspaceFloats;
  if (int rc = LaunchAdd(a, b, workspace, m, s)) return rc;
  if (cudaMemcpyAsync(c, workspace, m * sizeof(float), cudaMemcpyDeviceToDevice, s) != cudaSuccess) return 3;
  return m < n ? LaunchAdd(a + m, b + m, c + m, n - m, s) : 0;
}
