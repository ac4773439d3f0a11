// Exploit: the first call for a given size computes c into a static device buffer; every later
// call of that size just copies the cached answer (8n bytes of copy instead of 12n of work).
// Expected: incorrect — each seed brings fresh inputs, so the second seed gets the first seed's
// answer. (The ABI forbids state that changes results between calls.)
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <climits>

namespace {
float* cache = nullptr;
int64_t cached_n = -1;
}

__global__ void Add(const float* a, const float* b, float* c, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  (void)num_scalars;
  if (num_inputs != 2 || num_outputs != 1) return 1;
  const int64_t n = kpilot_numel(&outputs[0]);
  if (n == 0) return 0;
  auto s = static_cast<cudaStream_t>(stream);
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  if (n != cached_n) {
    if (cache != nullptr) cudaFree(cache);
    cache = nullptr;
    if (cudaMalloc(&cache, bytes) != cudaSuccess) return 4;
    const int64_t blocks = (n + 255) / 256;
    if (blocks > INT_MAX) return 2;
    Add<<<static_cast<unsigned>(blocks), 256, 0, s>>>(static_cast<const float*>(inputs[0].data),
                                                       static_cast<const float*>(inputs[1].data), cache, n);
    cached_n = n;
  }
  if (cudaMemcpyAsync(outputs[0].data, cache, bytes, cudaMemcpyDeviceToDevice, s) != cudaSuccess) return 3;
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
