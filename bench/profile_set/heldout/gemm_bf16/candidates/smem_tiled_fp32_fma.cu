// BAD ON PURPOSE (held-out set): a respectable CUDA-core GEMM for a bf16 task. 32x32 tiles of A
// and B are widened to f32 in shared memory (rows padded by one), and each of the 32x8 threads
// accumulates four elements of C with FFMA in ascending k. It is tiled and coalesced, but every
// multiply-add runs on the FP32 pipe: the H200's bf16 tensor cores, an order of magnitude faster
// for this work, are never used. Expected: tensor cores unused.
#include <kpilot/kernel.h>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

constexpr int kTile = 32;
constexpr int kRows = 8;  // thread rows; each thread owns kTile / kRows = 4 rows of the C tile

__global__ void GemmBf16Tiled(const __nv_bfloat16* __restrict__ a, const __nv_bfloat16* __restrict__ b,
                              float* __restrict__ c, int m, int n, int k) {
  __shared__ float as[kTile][kTile + 1];
  __shared__ float bs[kTile][kTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row0 = blockIdx.y * kTile, col0 = blockIdx.x * kTile;
  float acc[kTile / kRows] = {};
  for (int k0 = 0; k0 < k; k0 += kTile) {
    for (int r = ty; r < kTile; r += kRows) {
      const int ar = row0 + r, ak = k0 + tx, bk = k0 + r, bc = col0 + tx;
      as[r][tx] = (ar < m && ak < k) ? __bfloat162float(a[static_cast<int64_t>(ar) * k + ak]) : 0.0f;
      bs[r][tx] = (bk < k && bc < n) ? __bfloat162float(b[static_cast<int64_t>(bk) * n + bc]) : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int p = 0; p < kTile; ++p) {
      const float bv = bs[p][tx];
#pragma unroll
      for (int q = 0; q < kTile / kRows; ++q) acc[q] = fmaf(as[ty + q * kRows][p], bv, acc[q]);
    }
    __syncthreads();
  }
  const int col = col0 + tx;
#pragma unroll
  for (int q = 0; q < kTile / kRows; ++q) {
    const int row = row0 + ty + q * kRows;
    if (row < m && col < n) c[static_cast<int64_t>(row) * n + col] = acc[q];
  }
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 2 || num_outputs != 1 || num_scalars != 0) return 1;
  if (inputs[0].rank != 2 || inputs[1].rank != 2) return 2;
  const int64_t m = inputs[0].shape[0], k = inputs[0].shape[1], n = inputs[1].shape[1];
  if (inputs[1].shape[0] != k || m > 0x7fffffff || n > 0x7fffffff || k > 0x7fffffff) return 2;
  if (m * n == 0) return 0;
  const int64_t gx = (n + kTile - 1) / kTile, gy = (m + kTile - 1) / kTile;
  if (gy > 65535) return 2;
  GemmBf16Tiled<<<dim3(static_cast<unsigned>(gx), static_cast<unsigned>(gy)), dim3(kTile, kRows), 0,
                  static_cast<cudaStream_t>(stream)>>>(static_cast<const __nv_bfloat16*>(inputs[0].data),
                                                       static_cast<const __nv_bfloat16*>(inputs[1].data),
                                                       static_cast<float*>(outputs[0].data), static_cast<int>(m),
                                                       static_cast<int>(n), static_cast<int>(k));
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
