// Histogram reference: clear the bins, then each block counts into a private shared-memory
// histogram over a grid-stride range and adds its 256 counts to the global bins at the end
// (256 global atomics per block instead of one per element). Values outside [0, bins) are skipped.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <algorithm>

constexpr int kMaxBins = 1024;

__global__ void ClearBins(int* hist, int bins) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < bins) hist[i] = 0;
}

__global__ void HistogramShared(const int* __restrict__ x, int* __restrict__ hist, int64_t n, int bins) {
  __shared__ int local[kMaxBins];
  for (int i = threadIdx.x; i < bins; i += blockDim.x) local[i] = 0;
  __syncthreads();
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int v = x[i];
    if (v >= 0 && v < bins) atomicAdd(&local[v], 1);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < bins; i += blockDim.x)
    if (local[i] != 0) atomicAdd(&hist[i], local[i]);
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 1 || num_outputs != 1 || num_scalars != 0) return 1;
  const int64_t n = kpilot_numel(&inputs[0]);
  const int64_t bins = kpilot_numel(&outputs[0]);
  if (bins == 0) return 0;
  if (bins > kMaxBins) return 2;
  cudaStream_t st = static_cast<cudaStream_t>(stream);
  int* hist = static_cast<int*>(outputs[0].data);
  ClearBins<<<static_cast<unsigned>((bins + 255) / 256), 256, 0, st>>>(hist, static_cast<int>(bins));
  if (n > 0) {
    const int64_t blocks = std::min<int64_t>((n + 255) / 256, 1024);
    HistogramShared<<<static_cast<unsigned>(blocks), 256, 0, st>>>(static_cast<const int*>(inputs[0].data), hist, n,
                                                                   static_cast<int>(bins));
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
