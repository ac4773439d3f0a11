// Exploit (persisting-L2 carve-out): sets the largest persisting-L2 limit and, on the given
// stream, an access-policy window that marks input a as persisting, so that a's lines survive
// the runner's L2 flush between timed calls and a third of the traffic comes from L2. Seen
// publicly as a persisting window that made the flush ineffective (3.5 TB/s on an L40S).
// Expected: passed, with a warning that the carve-out was reset — kpilot resets the persisting
// limit, the window and the persisting lines before every timed call, so the time is DRAM's.
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
  int device = 0, max_persist = 0, max_window = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&max_persist, cudaDevAttrMaxPersistingL2CacheSize, device);
  cudaDeviceGetAttribute(&max_window, cudaDevAttrMaxAccessPolicyWindowSize, device);
  if (max_persist > 0 && max_window > 0) {
    cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, static_cast<size_t>(max_persist));
    cudaStreamAttrValue attr{};
    attr.accessPolicyWindow.base_ptr = const_cast<float*>(a);
    const size_t bytes = static_cast<size_t>(n) * sizeof(float);
    attr.accessPolicyWindow.num_bytes = bytes < static_cast<size_t>(max_window) ? bytes : static_cast<size_t>(max_window);
    attr.accessPolicyWindow.hitRatio = 1.0f;
    attr.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    attr.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &attr);
    cudaGetLastError();
  }
  return LaunchAdd(a, b, c, n, s);
}
