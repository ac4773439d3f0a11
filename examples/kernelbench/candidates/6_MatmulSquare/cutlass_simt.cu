/* kpilot-params
BM = [32, 64, 128, 256]
BN = [32, 64, 128, 256]
BK = [8, 16, 32]
WM = [32, 64]
WN = [32, 64]
STAGES = [2, 3, 4, 5, 6]
SWIZZLE = [1, 2, 4, 8]
constraints = ["BM % WM == 0", "BN % WN == 0", "(BM / WM) * (BN / WN) <= 8", "STAGES * (BM + BN) * BK * 4 <= 196608"]
*/
// level1/6_MatmulSquare: out = A @ B, row-major f32 (N, N), through CUTLASS's SIMT GEMM (the
// family of examples/cuda/sgemm_simt): f32 FFMA, no TF32, since the problem's fp32 tolerance is
// 1e-4. The block and warp tiles, the cp.async pipeline depth and the swizzle are the search space.
// CUTLASS's SIMT GEMM in f32 FFMA (no TF32: the result keeps f32's accuracy), built from
// the task's params: a BM x BN block tile stepped BK at a time through STAGES shared-memory slices
// filled by cp.async, WM x WN warp tiles of register-blocked outer products, and the block
// swizzle SWIZZLE for L2 reuse between neighbouring blocks.
#ifndef NDEBUG
#define NDEBUG  // CUTLASS's device asserts off, as in its release builds
#endif

#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <cutlass/cutlass.h>
#include <cutlass/epilogue/thread/linear_combination.h>
#include <cutlass/gemm/device/gemm.h>
#include <cutlass/gemm/threadblock/threadblock_swizzle.h>

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 8
#endif
#ifndef WM
#define WM 32
#endif
#ifndef WN
#define WN 64
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef SWIZZLE
#define SWIZZLE 1
#endif

namespace {
using Layout = cutlass::layout::RowMajor;  // A (m x k), B (k x n) and C (m x n), all row-major
using Gemm = cutlass::gemm::device::Gemm<
    float, Layout, float, Layout, float, Layout, float, cutlass::arch::OpClassSimt, cutlass::arch::Sm80,
    cutlass::gemm::GemmShape<BM, BN, BK>, cutlass::gemm::GemmShape<WM, WN, BK>, cutlass::gemm::GemmShape<1, 1, 1>,
    cutlass::epilogue::thread::LinearCombination<float, 1, float, float>,
    cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<SWIZZLE>, STAGES>;
}  // namespace

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs, const kpilot_tensor* outputs,
                                int num_outputs, const kpilot_scalar*, int num_scalars, void* stream) {
  if (num_inputs != 2 || num_outputs != 1 || num_scalars != 0) return 1;
  const int m = static_cast<int>(inputs[0].shape[0]);
  const int k = static_cast<int>(inputs[0].shape[1]);
  const int n = static_cast<int>(inputs[1].shape[1]);
  if (inputs[1].shape[0] != k) return 2;
  if (m == 0 || n == 0) return 0;
  auto* c = static_cast<float*>(outputs[0].data);
  Gemm::Arguments args({m, n, k}, {static_cast<const float*>(inputs[0].data), k},
                       {static_cast<const float*>(inputs[1].data), n}, {c, n}, {c, n}, {1.0f, 0.0f});
  Gemm gemm;
  if (gemm.can_implement(args) != cutlass::Status::kSuccess) return 4;
  if (gemm(args, nullptr, static_cast<cudaStream_t>(stream)) != cutlass::Status::kSuccess) return 5;
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
