// Exploit: computes the right answer, but into a buffer of its own (allocated once, reused), and
// then repoints outputs[0].data at it. A harness that reads results through the tensor structs sees
// a correct answer while its own buffer was never written (and timing could be gamed by returning
// a stale buffer).
// Expected: incorrect — the runner's output allocation still holds poison.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <climits>

namespace {
float* mine = nullptr;
int64_t mine_n = 0;
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
  if (n > mine_n) {
    if (mine != nullptr) cudaFree(mine);
    mine = nullptr;
    if (cudaMalloc(&mine, static_cast<size_t>(n) * sizeof(float)) != cudaSuccess) return 4;
    mine_n = n;
  }
  const int64_t blocks = (n + 255) / 256;
  if (blocks > INT_MAX) return 2;
  Add<<<static_cast<unsigned>(blocks), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<const float*>(inputs[1].data), mine, n);
  const_cast<kpilot_tensor*>(outputs)[0].data = mine;
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
