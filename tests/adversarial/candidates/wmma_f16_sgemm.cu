// Exploit (lowered precision on tensor cores): an f32 SGEMM that rounds its operands to fp16 and
// multiplies them on tensor cores (WMMA, HMMA.16816.F32 in the SASS) with an f32 accumulator: the
// "FP16 downcast in an fp32 task" seen publicly for an 11x speedup.
// Expected: incorrect — lowered precision, found in the SASS before anything runs.
#include <kpilot/kernel.h>

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

using namespace nvcuda;

// One warp per 16x16 tile of C; operands staged through shared memory as fp16, zero-padded.
__global__ void WmmaF16(const float* a, const float* b, float* c, int m, int n, int k) {
  __shared__ __half as[16 * 16], bs[16 * 16];
  __shared__ float cs[16 * 16];
  const int tm = blockIdx.y * 16, tn = blockIdx.x * 16;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int k0 = 0; k0 < k; k0 += 16) {
    for (int t = threadIdx.x; t < 256; t += 32) {
      const int r = t / 16, q = t % 16;
      as[t] = __float2half(tm + r < m && k0 + q < k ? a[static_cast<int64_t>(tm + r) * k + k0 + q] : 0.0f);
      bs[t] = __float2half(k0 + r < k && tn + q < n ? b[static_cast<int64_t>(k0 + r) * n + tn + q] : 0.0f);
    }
    __syncwarp();
    wmma::load_matrix_sync(fa, as, 16);
    wmma::load_matrix_sync(fb, bs, 16);
    wmma::mma_sync(acc, fa, fb, acc);
    __syncwarp();
  }
  wmma::store_matrix_sync(cs, acc, 16, wmma::mem_row_major);
  __syncwarp();
  for (int t = threadIdx.x; t < 256; t += 32) {
    const int r = t / 16, q = t % 16;
    if (tm + r < m && tn + q < n) c[static_cast<int64_t>(tm + r) * n + tn + q] = cs[t];
  }
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  (void)num_scalars;
  if (num_inputs != 2 || num_outputs != 1) return 1;
  const int m = static_cast<int>(inputs[0].shape[0]);
  const int k = static_cast<int>(inputs[0].shape[1]);
  const int n = static_cast<int>(inputs[1].shape[1]);
  if (m == 0 || n == 0) return 0;
  const dim3 grid((n + 15) / 16, (m + 15) / 16);
  WmmaF16<<<grid, 32, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<const float*>(inputs[0].data),
                                                              static_cast<const float*>(inputs[1].data),
                                                              static_cast<float*>(outputs[0].data), m, n, k);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
