// BAD ON PURPOSE (held-out set): a "defensive" chunked version. For each of 4 chunks it copies
// the input into a scratch buffer (cudaMemcpyAsync, device to device), runs the kernel on the
// copy, and waits for the stream (cudaStreamSynchronize). The copies double the DRAM traffic and
// serialize with the kernels; each synchronization idles the GPU while the host wakes up and
// launches the next chunk. Expected: memory copies and synchronizations inside the call.
//
// The scratch buffer is allocated once and kept; it never changes the results.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

constexpr int kChunks = 4;

__global__ void ScaleShift(const float* __restrict__ x, float* __restrict__ y, float s, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaf(s, x[i], 1.0f);
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  static float* scratch = nullptr;
  static int64_t scratch_elems = 0;
  if (num_inputs != 1 || num_outputs != 1 || num_scalars != 1) return 1;
  const int64_t n = kpilot_numel(&outputs[0]);
  if (n == 0) return 0;
  const int64_t chunk = (n + kChunks - 1) / kChunks;
  if (chunk > scratch_elems) {
    if (scratch != nullptr && cudaFree(scratch) != cudaSuccess) return 3;
    scratch = nullptr;
    scratch_elems = 0;
    if (cudaMalloc(&scratch, chunk * sizeof(float)) != cudaSuccess) return 3;
    scratch_elems = chunk;
  }
  const float* x = static_cast<const float*>(inputs[0].data);
  float* y = static_cast<float*>(outputs[0].data);
  const float s = static_cast<float>(scalars[0].value.f);
  cudaStream_t st = static_cast<cudaStream_t>(stream);
  for (int64_t begin = 0; begin < n; begin += chunk) {
    const int64_t len = begin + chunk <= n ? chunk : n - begin;
    if (cudaMemcpyAsync(scratch, x + begin, len * sizeof(float), cudaMemcpyDeviceToDevice, st) != cudaSuccess) return 3;
    const int64_t blocks = (len + 255) / 256;
    if (blocks > 0x7fffffff) return 2;
    ScaleShift<<<static_cast<unsigned>(blocks), 256, 0, st>>>(scratch, y + begin, s, len);
    if (cudaStreamSynchronize(st) != cudaSuccess) return 3;
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
