// Summary: CUTLASS's SM90 tensor-core GEMM built from the task's params: TMA loads into swizzled
// shared memory, WGMMA on warpgroups, a producer warp feeding consumer warpgroups through an
// mbarrier pipeline of STAGES slices, a persistent tile scheduler with a chosen raster order and
// swizzle, thread-block clusters multicasting A and B. bf16 operands, f32 accumulation, bf16 C.
// Shapes whose rows TMA cannot read in place (k or n not a multiple of 8) run on zero-padded copies.
//
// Params (task.toml): TILE_M x TILE_N x TILE_K the block tile; STAGES the pipeline depth (0: as
// many as fit beside the epilogue); CLUSTER_M x CLUSTER_N the cluster; SCHEDULE 0 cooperative
// (two consumer warpgroups share a tile) or 1 ping-pong (they alternate tiles, overlapping one's
// epilogue with the other's mainloop); RASTER 0 heuristic, 1 along M, 2 along N; SWIZZLE the
// scheduler's tile swizzle (1, 2, 4, 8).
// CUTLASS's device-side asserts are calls inside the WGMMA mainloop, and ptxas serializes the
// wgmma pipeline around a call (warning C7510, a large loss): off for this file, as in CUTLASS's
// own release builds.
#ifndef NDEBUG
#define NDEBUG
#endif

#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <cute/tensor.hpp>
#include <cutlass/bfloat16.h>
#include <cutlass/cutlass.h>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cutlass/gemm/kernel/gemm_universal.hpp>
#include <cutlass/util/packed_stride.hpp>

#ifndef TILE_M
#define TILE_M 128
#endif
#ifndef TILE_N
#define TILE_N 128
#endif
#ifndef TILE_K
#define TILE_K 64
#endif
#ifndef STAGES
#define STAGES 0
#endif
#ifndef CLUSTER_M
#define CLUSTER_M 1
#endif
#ifndef CLUSTER_N
#define CLUSTER_N 1
#endif
#ifndef SCHEDULE
#define SCHEDULE 0
#endif
#ifndef RASTER
#define RASTER 0
#endif
#ifndef SWIZZLE
#define SWIZZLE 1
#endif

namespace {
using namespace cute;

using Element = cutlass::bfloat16_t;
using Layout = cutlass::layout::RowMajor;  // A (m x k), B (k x n) and C (m x n), all row-major
constexpr int kAlignment = 8;               // elements per 16-byte TMA access
using TileShape = Shape<Int<TILE_M>, Int<TILE_N>, Int<TILE_K>>;
using ClusterShape = Shape<Int<CLUSTER_M>, Int<CLUSTER_N>, _1>;

#if SCHEDULE == 1
using MainloopSchedule = cutlass::gemm::KernelTmaWarpSpecializedPingpong;
using EpilogueSchedule = cutlass::epilogue::TmaWarpSpecialized;
#else
using MainloopSchedule = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
using EpilogueSchedule = cutlass::epilogue::TmaWarpSpecializedCooperative;
#endif

// D = acc, no source tensor read (ElementC void).
using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, float, float, void, Layout, kAlignment, Element, Layout,
    kAlignment, EpilogueSchedule>::CollectiveOp;

#if STAGES == 0
using Stages =
    cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epilogue::SharedStorage))>;
#else
using Stages = cutlass::gemm::collective::StageCount<STAGES>;
#endif

using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Element, Layout, kAlignment, Element, Layout, kAlignment,
    float, TileShape, ClusterShape, Stages, MainloopSchedule>::CollectiveOp;

using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Mainloop, Epilogue>;
using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
using RasterOrder = typename Kernel::TileScheduler::RasterOrderOptions;

// The scheduler's workspace (none for this kernel at most shapes), kept across calls.
void* Workspace(size_t bytes) {
  static void* buffer = nullptr;
  static size_t size = 0;
  if (bytes <= size) return buffer;
  if (buffer) cudaFree(buffer);
  buffer = nullptr;
  size = 0;
  if (cudaMalloc(&buffer, bytes) != cudaSuccess) return nullptr;
  size = bytes;
  return buffer;
}

// Copies of A, B and C whose rows are padded to 16 bytes, for shapes TMA cannot read in place
// (k or n not a multiple of 8), kept across calls of one shape. A's columns and B's rows past k
// are zeros, written once when the shape changes; each call copies only the data in.
struct Padded {
  int m = 0, k = 0, n = 0;
  Element* a = nullptr;  // m x kp
  Element* b = nullptr;  // kp x np
  Element* c = nullptr;  // m x np
};

int RoundUp(int x) { return (x + kAlignment - 1) / kAlignment * kAlignment; }

Padded* PaddedFor(int m, int k, int n, cudaStream_t stream) {
  static Padded p;
  if (p.m == m && p.k == k && p.n == n) return &p;
  for (Element* buffer : {p.a, p.b, p.c})
    if (buffer) cudaFree(buffer);
  p = Padded{};
  const size_t kp = RoundUp(k), np = RoundUp(n), e = sizeof(Element);
  if (cudaMalloc(&p.a, m * kp * e) != cudaSuccess || cudaMalloc(&p.b, kp * np * e) != cudaSuccess ||
      cudaMalloc(&p.c, m * np * e) != cudaSuccess)
    return nullptr;
  if (cudaMemsetAsync(p.a, 0, m * kp * e, stream) != cudaSuccess ||
      cudaMemsetAsync(p.b, 0, kp * np * e, stream) != cudaSuccess)
    return nullptr;
  p.m = m;
  p.k = k;
  p.n = n;
  return &p;
}

int SmCount() {
  static int count = 0;
  if (count == 0) {
    int device = 0;
    cudaGetDevice(&device);
    count = cutlass::KernelHardwareInfo::query_device_multiprocessor_count(device);
  }
  return count;
}
}  // namespace

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs, const kpilot_tensor* outputs,
                                int num_outputs, const kpilot_scalar*, int num_scalars, void* stream) {
  if (num_inputs != 2 || num_outputs != 1 || num_scalars != 0) return 1;
  const int m = static_cast<int>(inputs[0].shape[0]);
  int k = static_cast<int>(inputs[0].shape[1]);
  int n = static_cast<int>(inputs[1].shape[1]);
  if (inputs[1].shape[0] != k) return 2;
  if (m == 0 || n == 0) return 0;
  auto s = static_cast<cudaStream_t>(stream);
  const Element* a = static_cast<const Element*>(inputs[0].data);
  const Element* b = static_cast<const Element*>(inputs[1].data);
  Element* c = static_cast<Element*>(outputs[0].data);
  // TMA moves 16-byte rows: where k or n is not a multiple of 8 bf16 elements, the GEMM runs on
  // padded copies (their cost is part of the call) and C is copied out of its padded rows.
  const bool padded = k % kAlignment != 0 || n % kAlignment != 0;
  const int n_out = n;
  if (padded) {
    Padded* pad = PaddedFor(m, k, n, s);
    if (!pad) return 4;
    const size_t e = sizeof(Element);
    if (cudaMemcpy2DAsync(pad->a, RoundUp(k) * e, a, k * e, k * e, m, cudaMemcpyDeviceToDevice, s) != cudaSuccess ||
        cudaMemcpy2DAsync(pad->b, RoundUp(n) * e, b, n * e, n * e, k, cudaMemcpyDeviceToDevice, s) != cudaSuccess)
      return 4;
    a = pad->a;
    b = pad->b;
    c = pad->c;
    k = RoundUp(k);
    n = RoundUp(n);
  }

  cutlass::KernelHardwareInfo hw;
  hw.sm_count = SmCount();
  auto stride_a = cutlass::make_cute_packed_stride(typename Kernel::StrideA{}, make_shape(m, k, 1));
  auto stride_b = cutlass::make_cute_packed_stride(typename Kernel::StrideB{}, make_shape(n, k, 1));
  auto stride_c = cutlass::make_cute_packed_stride(typename Kernel::StrideC{}, make_shape(m, n, 1));
  auto stride_d = cutlass::make_cute_packed_stride(typename Kernel::StrideD{}, make_shape(m, n, 1));
  typename Gemm::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm,
                                {m, n, k, 1},
                                {a, stride_a, b, stride_b},
                                {{1.0f, 0.0f}, nullptr, stride_c, c, stride_d},
                                hw};
  args.scheduler.raster_order = RASTER == 1 ? RasterOrder::AlongM : RASTER == 2 ? RasterOrder::AlongN
                                                                                : RasterOrder::Heuristic;
  args.scheduler.max_swizzle_size = SWIZZLE;

  Gemm gemm;
  if (gemm.can_implement(args) != cutlass::Status::kSuccess) return 5;
  const size_t bytes = Gemm::get_workspace_size(args);
  void* workspace = bytes ? Workspace(bytes) : nullptr;
  if (bytes && !workspace) return 6;
  if (gemm.initialize(args, workspace, s) != cutlass::Status::kSuccess) return 7;
  if (gemm.run(s) != cutlass::Status::kSuccess) return 8;
  if (padded && cudaMemcpy2DAsync(outputs[0].data, n_out * sizeof(Element), c, n * sizeof(Element),
                                  n_out * sizeof(Element), m, cudaMemcpyDeviceToDevice, s) != cudaSuccess)
    return 4;
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
