// Row-sum reference: a (64 x rows) grid; block (p, r) sums the p-th 64th of row r in f64 and
// writes its partial to a scratch buffer; a second kernel adds a row's 64 partials in f64 and
// rounds once to f32. The scratch buffer is allocated once and kept.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

constexpr int kParts = 64;
constexpr int kThreads = 256;

__global__ void PartialSums(const float* __restrict__ x, double* __restrict__ partial, int64_t cols) {
  __shared__ double sums[kThreads];
  const int64_t r = blockIdx.y;
  const int64_t per_part = (cols + kParts - 1) / kParts;
  const int64_t begin = blockIdx.x * per_part;
  const int64_t end = begin + per_part < cols ? begin + per_part : cols;
  double acc = 0.0;
  for (int64_t c = begin + threadIdx.x; c < end; c += kThreads) acc += x[r * cols + c];
  sums[threadIdx.x] = acc;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) sums[threadIdx.x] += sums[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[r * kParts + blockIdx.x] = sums[0];
}

__global__ void CombineParts(const double* __restrict__ partial, float* __restrict__ y, int64_t rows) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  double acc = 0.0;
  for (int p = 0; p < kParts; ++p) acc += partial[r * kParts + p];
  y[r] = static_cast<float>(acc);
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  static double* partial = nullptr;
  static int64_t partial_rows = 0;
  (void)scalars;
  if (num_inputs != 1 || num_outputs != 1 || num_scalars != 0 || inputs[0].rank != 2) return 1;
  const int64_t rows = inputs[0].shape[0], cols = inputs[0].shape[1];
  if (rows == 0) return 0;
  if (rows > 65535) return 2;
  if (rows > partial_rows) {
    if (partial != nullptr && cudaFree(partial) != cudaSuccess) return 3;
    partial = nullptr;
    partial_rows = 0;
    if (cudaMalloc(&partial, rows * kParts * sizeof(double)) != cudaSuccess) return 3;
    partial_rows = rows;
  }
  cudaStream_t st = static_cast<cudaStream_t>(stream);
  PartialSums<<<dim3(kParts, static_cast<unsigned>(rows)), kThreads, 0, st>>>(static_cast<const float*>(inputs[0].data),
                                                                            partial, cols);
  CombineParts<<<static_cast<unsigned>((rows + 127) / 128), 128, 0, st>>>(partial, static_cast<float*>(outputs[0].data),
                                                                          rows);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
