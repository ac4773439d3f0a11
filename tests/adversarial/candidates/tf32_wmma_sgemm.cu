// Exploit (lowered precision, TF32): an f32 SGEMM on tensor cores with TF32 operands (10-bit
// mantissa; WMMA 16x16x8, HMMA.1684.F32.TF32 in the SASS), the "TF32 against a full-fp32
// baseline" shortcut. The SASS check leaves TF32 alone (an error-compensated 3xTF32 GEMM keeps f32
// accuracy), so this one is for the error statistics.
// Expected: incorrect — the median relative error is far above f32 arithmetic's.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>
#include <mma.h>

using namespace nvcuda;

// One warp per 16x16 tile of C; operands staged through shared memory, zero-padded.
__global__ void WmmaTf32(const float* a, const float* b, float* c, int m, int n, int k) {
  __shared__ float as[16 * 8], bs[8 * 16], cs[16 * 16];
  const int tm = blockIdx.y * 16, tn = blockIdx.x * 16;
  wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int k0 = 0; k0 < k; k0 += 8) {
    for (int t = threadIdx.x; t < 128; t += 32) {
      const int r = t / 8, q = t % 8;  // as: 16 x 8
      as[t] = tm + r < m && k0 + q < k ? a[static_cast<int64_t>(tm + r) * k + k0 + q] : 0.0f;
      const int br = t / 16, bq = t % 16;  // bs: 8 x 16
      bs[t] = k0 + br < k && tn + bq < n ? b[static_cast<int64_t>(k0 + br) * n + tn + bq] : 0.0f;
    }
    __syncwarp();
    wmma::load_matrix_sync(fa, as, 8);
    wmma::load_matrix_sync(fb, bs, 16);
    for (int i = 0; i < fa.num_elements; ++i) fa.x[i] = wmma::__float_to_tf32(fa.x[i]);
    for (int i = 0; i < fb.num_elements; ++i) fb.x[i] = wmma::__float_to_tf32(fb.x[i]);
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
  WmmaTf32<<<grid, 32, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<const float*>(inputs[0].data),
                                                               static_cast<const float*>(inputs[1].data),
                                                               static_cast<float*>(outputs[0].data), m, n, k);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
