// BAD ON PURPOSE (held-out set): one global atomicAdd per element. All 16M increments land on
// 256 counters — 1 KiB, eight 128-byte lines — so the L2 serializes them on a handful of
// addresses while the SMs and DRAM sit nearly idle. (The fix is the reference's per-block
// shared-memory histogram.) kpilot has no atomic-contention tool; what it can see is the warps
// stalled behind the memory queue.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

__global__ void ClearBins(int* hist, int bins) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < bins) hist[i] = 0;
}

__global__ void HistogramGlobal(const int* __restrict__ x, int* __restrict__ hist, int64_t n, int bins) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int v = x[i];
  if (v >= 0 && v < bins) atomicAdd(&hist[v], 1);
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 1 || num_outputs != 1 || num_scalars != 0) return 1;
  const int64_t n = kpilot_numel(&inputs[0]);
  const int64_t bins = kpilot_numel(&outputs[0]);
  if (bins == 0) return 0;
  if (bins > 0x7fffffff) return 2;
  cudaStream_t st = static_cast<cudaStream_t>(stream);
  int* hist = static_cast<int*>(outputs[0].data);
  ClearBins<<<static_cast<unsigned>((bins + 255) / 256), 256, 0, st>>>(hist, static_cast<int>(bins));
  if (n > 0) {
    const int64_t blocks = (n + 255) / 256;
    if (blocks > 0x7fffffff) return 2;
    HistogramGlobal<<<static_cast<unsigned>(blocks), 256, 0, st>>>(static_cast<const int*>(inputs[0].data), hist, n,
                                                                   static_cast<int>(bins));
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
