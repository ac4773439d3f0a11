// Exploit (content-keyed caching, bounded): as content_hash_cache.cu, but keeps only the last four
// answers, so its device memory stays flat; a timing loop that rotates a few unchanged input sets
// would hit on nearly every call.
// Expected: passed — timed inputs change contents every iteration, the cache never hits and every
// call does the work (the hashing is honest overhead); the timing is the work's.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>
#include <cstdint>

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

__global__ void Fingerprint(const float* a, const float* b, int64_t n, unsigned long long* out) {
  unsigned long long h = 1469598103934665603ull;
  for (int k = 0; k < 256; ++k) {
    const int64_t i = (n - 1) * k / 255;
    h = (h ^ __float_as_uint(a[i])) * 1099511628211ull;
    h = (h ^ __float_as_uint(b[i])) * 1099511628211ull;
  }
  *out = h ^ static_cast<unsigned long long>(n);
}

namespace {
struct Slot {
  unsigned long long key = 0;
  float* answer = nullptr;
  int64_t n = 0;
};
Slot slots[4];
int next_slot = 0;
unsigned long long* key_on_device = nullptr;
}  // namespace

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
  if (!key_on_device && cudaMalloc(&key_on_device, sizeof(unsigned long long)) != cudaSuccess) return 4;
  Fingerprint<<<1, 1, 0, s>>>(a, b, n, key_on_device);
  unsigned long long key = 0;
  if (cudaMemcpyAsync(&key, key_on_device, sizeof key, cudaMemcpyDeviceToHost, s) != cudaSuccess) return 3;
  if (cudaStreamSynchronize(s) != cudaSuccess) return 3;
  for (const Slot& slot : slots) {
    if (slot.answer && slot.key == key && slot.n == n) {
      cudaMemcpyAsync(c, slot.answer, n * sizeof(float), cudaMemcpyDeviceToDevice, s);
      Spin<<<1, 1, 0, s>>>(n * 12 / 4000);
      return cudaGetLastError() == cudaSuccess ? 0 : 3;
    }
  }
  if (int rc = LaunchAdd(a, b, c, n, s)) return rc;
  Slot& slot = slots[next_slot];
  next_slot = (next_slot + 1) % 4;
  if (slot.n != n) {
    if (slot.answer) cudaFree(slot.answer);
    slot.answer = nullptr;
    if (cudaMalloc(&slot.answer, n * sizeof(float)) != cudaSuccess) return 4;
    slot.n = n;
  }
  slot.key = key;
  return cudaMemcpyAsync(slot.answer, c, n * sizeof(float), cudaMemcpyDeviceToDevice, s) == cudaSuccess ? 0 : 3;
}
