// Summary: CUTLASS's SM80 tensor-core GEMM (mma.sync m16n8k16 on warps, cp.async multistage
// shared-memory pipeline), the variant for GPUs before Hopper's WGMMA (sm_80, sm_86, sm_89; it
// also runs on sm_90): a BM x BN block tile stepped BK at a time through STAGES slices, WM x WN
// warp tiles, the block swizzle SWIZZLE. bf16 operands, f32 accumulation, bf16 C.
#ifndef NDEBUG
#define NDEBUG  // CUTLASS's device asserts off, as in its release builds
#endif

#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <cutlass/bfloat16.h>
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
#define BK 32
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 64
#endif
#ifndef STAGES
#define STAGES 3
#endif
#ifndef SWIZZLE
#define SWIZZLE 1
#endif

namespace {
using Element = cutlass::bfloat16_t;
using Layout = cutlass::layout::RowMajor;  // A (m x k), B (k x n) and C (m x n), all row-major
constexpr int kAlignment = 8;               // elements per 16-byte access
using Gemm = cutlass::gemm::device::Gemm<
    Element, Layout, Element, Layout, Element, Layout, float, cutlass::arch::OpClassTensorOp, cutlass::arch::Sm80,
    cutlass::gemm::GemmShape<BM, BN, BK>, cutlass::gemm::GemmShape<WM, WN, BK>, cutlass::gemm::GemmShape<16, 8, 16>,
    cutlass::epilogue::thread::LinearCombination<Element, kAlignment, float, float>,
    cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<SWIZZLE>, STAGES, kAlignment, kAlignment>;
}  // namespace

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs, const kpilot_tensor* outputs,
                                int num_outputs, const kpilot_scalar*, int num_scalars, void* stream) {
  if (num_inputs != 2 || num_outputs != 1 || num_scalars != 0) return 1;
  const int m = static_cast<int>(inputs[0].shape[0]);
  const int k = static_cast<int>(inputs[0].shape[1]);
  const int n = static_cast<int>(inputs[1].shape[1]);
  if (inputs[1].shape[0] != k) return 2;
  if (m == 0 || n == 0) return 0;
  if (k % kAlignment != 0 || n % kAlignment != 0) return 4;  // 16-byte accesses along k and n
  auto* c = static_cast<Element*>(outputs[0].data);
  Gemm::Arguments args({m, n, k}, {static_cast<const Element*>(inputs[0].data), k},
                       {static_cast<const Element*>(inputs[1].data), n}, {c, n}, {c, n}, {1.0f, 0.0f});
  Gemm gemm;
  if (gemm.can_implement(args) != cutlass::Status::kSuccess) return 5;
  if (gemm(args, nullptr, static_cast<cudaStream_t>(stream)) != cutlass::Status::kSuccess) return 6;
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
