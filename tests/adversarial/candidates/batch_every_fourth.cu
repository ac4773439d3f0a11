// Exploit (cross-call batching): after the correctness trials, calls are collected four at a
// time: three return at once, the fourth launches one kernel doing the work of all four pending
// calls (the last writer wins on a shared output). Timed per call, the work looks four times
// cheaper. Seen publicly as "all 15 calls batched into one launch".
// Expected: incorrect (an audited timed call among the three empty ones) or suspicious (the traced
// calls launch different kernels).
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
struct Pending {
  const float* a;
  const float* b;
  float* c;
};
int calls = 0;
Pending pending[4];
int num_pending = 0;
}  // namespace

__global__ void AddBatch(Pending p0, Pending p1, Pending p2, Pending p3, int count, int64_t n) {
  const Pending all[4] = {p0, p1, p2, p3};
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int k = 0; k < count; ++k)
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
      all[k].c[i] = all[k].a[i] + all[k].b[i];
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
  if (++calls <= 12) return LaunchAdd(a, b, c, n, s);
  pending[num_pending++] = {a, b, c};
  if (num_pending < 4) return 0;
  num_pending = 0;
  int64_t blocks = (n + 255) / 256;
  if (blocks > 65535) blocks = 65535;
  AddBatch<<<static_cast<unsigned>(blocks), 256, 0, s>>>(pending[0], pending[1], pending[2], pending[3], 4, n);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
