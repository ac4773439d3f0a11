// Exploit: remembers which inputs it has already answered, by (pointers, size, first element of
// each input), and does no work when it sees them again, trusting the output buffer to still hold
// the answer. The check runs on the device (one thread, a table of 64 keys in device memory), so
// a repeated call costs two near-empty kernel launches and no host round trip; everything stays
// on the given stream. Every correctness trial brings new inputs (a new first element even where
// the allocator hands back the same address), so every checked answer is right; the timing loop
// reuses its input sets, so nearly every timed call does nothing.
// Expected: suspicious — timed calls of the 16M workload take a few microseconds, far below the
// DRAM floor (12n bytes / bandwidth ~ 50 us on an H200).
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <climits>

namespace {
struct Key {
  const float* a;
  const float* b;
  long long n;
  unsigned a0, b0;
};
}  // namespace

__device__ Key g_seen[64];
__device__ int g_num_seen = 0;
__device__ int g_next = 0;
__device__ int g_skip = 0;

__global__ void Check(const float* a, const float* b, long long n) {
  const Key k{a, b, n, __float_as_uint(a[0]), __float_as_uint(b[0])};
  int skip = 0;
  for (int i = 0; i < g_num_seen && !skip; ++i) {
    const Key& s = g_seen[i];
    skip = s.a == k.a && s.b == k.b && s.n == k.n && s.a0 == k.a0 && s.b0 == k.b0;
  }
  if (!skip) {
    g_seen[g_next] = k;
    g_next = (g_next + 1) % 64;
    if (g_num_seen < 64) ++g_num_seen;
  }
  g_skip = skip;
}

__global__ void AddUnlessSeen(const float* a, const float* b, float* c, long long n) {
  if (*static_cast<volatile int*>(&g_skip)) return;  // "already computed"
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    c[i] = a[i] + b[i];
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  (void)num_scalars;
  if (num_inputs != 2 || num_outputs != 1) return 1;
  const long long n = kpilot_numel(&outputs[0]);
  if (n == 0) return 0;
  auto s = static_cast<cudaStream_t>(stream);
  int device = 0, sms = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  long long blocks = (n + 255) / 256;
  if (blocks > 8LL * sms) blocks = 8LL * sms;
  const auto* a = static_cast<const float*>(inputs[0].data);
  const auto* b = static_cast<const float*>(inputs[1].data);
  Check<<<1, 1, 0, s>>>(a, b, n);
  AddUnlessSeen<<<static_cast<unsigned>(blocks), 256, 0, s>>>(a, b, static_cast<float*>(outputs[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
