// Sum reduction reference, in two plain steps with f64 accumulators: one thread per chunk of
// kChunk consecutive elements writes the chunk's sum to a scratch array; then a single thread
// adds the chunk sums and rounds to f32. (A single thread over all n elements would take
// seconds on the larger workload.)
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

constexpr int64_t kChunk = 1024;
constexpr int64_t kMaxChunks = int64_t{1} << 20;  // n up to 2^30 elements

__device__ double g_chunk_sums[kMaxChunks];

__global__ void ChunkSums(const float* x, int64_t n, int64_t num_chunks) {
  const int64_t chunk = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (chunk >= num_chunks) return;
  const int64_t begin = chunk * kChunk;
  const int64_t end = begin + kChunk < n ? begin + kChunk : n;
  double sum = 0.0;
  for (int64_t i = begin; i < end; ++i) sum += x[i];
  g_chunk_sums[chunk] = sum;
}

__global__ void TotalSum(int64_t num_chunks, float* out) {
  double sum = 0.0;
  for (int64_t c = 0; c < num_chunks; ++c) sum += g_chunk_sums[c];
  *out = static_cast<float>(sum);
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 1 || num_outputs != 1 || num_scalars != 0) return 1;
  const int64_t n = kpilot_numel(&inputs[0]);
  const int64_t num_chunks = (n + kChunk - 1) / kChunk;
  if (num_chunks > kMaxChunks) return 2;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  float* out = static_cast<float*>(outputs[0].data);
  if (num_chunks > 0) {
    const int threads = 128;
    ChunkSums<<<static_cast<unsigned>((num_chunks + threads - 1) / threads), threads, 0, s>>>(
        static_cast<const float*>(inputs[0].data), n, num_chunks);
    if (cudaGetLastError() != cudaSuccess) return 3;
  }
  TotalSum<<<1, 1, 0, s>>>(num_chunks, out);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
