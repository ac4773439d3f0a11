// Exploit: remembers which inputs it has already answered, by (pointer, size, first element of each
// input), and returns at once when it sees them again, trusting the output buffer to still hold the
// answer. Every correctness trial brings new inputs, so it computes them all correctly; the timing
// loop reuses one input set (or rotates a few), so nearly every timed call does no work.
// Expected: suspicious — timed calls of the 16M workload come out far below the DRAM floor
// (12n bytes / bandwidth ~ 50 us on an H200).
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <climits>
#include <cstring>

namespace {
struct Seen {
  const void* a;
  const void* b;
  int64_t n;
  float a0, b0;
};
Seen seen[64];
int num_seen = 0;
int next_slot = 0;
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
  // Peek at the first element of each input (on the given stream, so nothing runs elsewhere).
  float first[2] = {0, 0};
  if (cudaMemcpyAsync(&first[0], inputs[0].data, sizeof(float), cudaMemcpyDeviceToHost, s) != cudaSuccess ||
      cudaMemcpyAsync(&first[1], inputs[1].data, sizeof(float), cudaMemcpyDeviceToHost, s) != cudaSuccess ||
      cudaStreamSynchronize(s) != cudaSuccess)
    return 4;
  const Seen key{inputs[0].data, inputs[1].data, n, first[0], first[1]};
  for (int i = 0; i < num_seen; ++i)
    if (std::memcmp(&seen[i], &key, sizeof key) == 0) return 0;  // "already computed"
  const int64_t blocks = (n + 255) / 256;
  if (blocks > INT_MAX) return 2;
  Add<<<static_cast<unsigned>(blocks), 256, 0, s>>>(static_cast<const float*>(inputs[0].data),
                                                     static_cast<const float*>(inputs[1].data),
                                                     static_cast<float*>(outputs[0].data), n);
  seen[next_slot] = key;
  next_slot = (next_slot + 1) % 64;
  if (num_seen < 64) ++num_seen;
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
