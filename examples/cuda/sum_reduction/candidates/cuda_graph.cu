// Sum reduction replayed from a CUDA graph: candidates/grid_stride_shuffle.cu's two kernels (a
// grid-stride pass with warp-shuffle block sums into one partial per block, then one block that
// sums the partials; deterministic, f32), captured once per argument set (device, pointers, n)
// into a graph and replayed with one cudaGraphLaunch per call (the `cuda-graphs` card). A new
// argument set is captured again. The partials live in a __device__ array, so the captured
// launches need no allocation.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef UNROLL
#define UNROLL 2
#endif

static_assert(BLOCK % 32 == 0 && BLOCK >= 32 && BLOCK <= 1024, "BLOCK: a multiple of 32, <= 1024");

namespace {

constexpr int kMaxBlocks = 4096;
constexpr int kFinalBlock = 1024;

// One partial per block of kernel 1. Written and read on the caller's stream in order, so calls
// on one stream never overlap; it holds nothing between calls.
__device__ float g_partials[kMaxBlocks];

__device__ __forceinline__ float WarpSum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

template <int kThreads>
__device__ __forceinline__ float BlockSum(float v) {
  __shared__ float partial[kThreads / 32];
  v = WarpSum(v);
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = 0.0f;
  if (warp == 0) v = WarpSum(lane < kThreads / 32 ? partial[lane] : 0.0f);
  return v;  // valid in thread 0
}

__device__ __forceinline__ float Sum4(float4 v) { return (v.x + v.y) + (v.z + v.w); }

// kVec4 requires x to be 16-byte aligned.
template <bool kVec4>
__global__ __launch_bounds__(BLOCK) void PartialSums(const float* __restrict__ x, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * BLOCK;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * BLOCK + threadIdx.x;
  float acc[UNROLL] = {};
  int64_t done = 0;  // elements [0, done) are covered by the vector loop
  if constexpr (kVec4) {
    const float4* xv = reinterpret_cast<const float4*>(x);
    const int64_t num_vec = n / 4;
    int64_t i = first;
    for (; i + (UNROLL - 1) * stride < num_vec; i += UNROLL * stride) {
      float4 v[UNROLL];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) v[u] = xv[i + u * stride];
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) acc[u] += Sum4(v[u]);
    }
    for (; i < num_vec; i += stride) acc[0] += Sum4(xv[i]);
    done = num_vec * 4;
  }
  for (int64_t i = done + first; i < n; i += stride) acc[0] += x[i];
  float sum = 0.0f;
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) sum += acc[u];
  sum = BlockSum<BLOCK>(sum);
  if (threadIdx.x == 0) g_partials[blockIdx.x] = sum;
}

__global__ __launch_bounds__(kFinalBlock) void FinalSum(int num_partials, float* out) {
  float sum = 0.0f;
  for (int i = threadIdx.x; i < num_partials; i += kFinalBlock) sum += g_partials[i];
  sum = BlockSum<kFinalBlock>(sum);
  if (threadIdx.x == 0) *out = sum;
}

int MultiprocessorCount() {
  static int count = 0;  // a device property, not a result: safe to keep between calls
  if (count == 0) {
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
      count = 0;
      return 132;
    }
  }
  return count;
}

}  // namespace

namespace {

// What a captured graph was built for: the pointers and sizes baked into its launches.
struct GraphKey {
  int device = -1;
  const float* x = nullptr;
  float* out = nullptr;
  int64_t n = -1;
  bool vec4 = false;
  int64_t blocks = 0;
  bool operator==(const GraphKey& o) const {
    return device == o.device && x == o.x && out == o.out && n == o.n && vec4 == o.vec4 && blocks == o.blocks;
  }
};

// The two launches of a call, captured once per argument set on a private stream and replayed
// with one cudaGraphLaunch on the caller's stream. The graph computes the sum on every replay; it
// caches the launch sequence, not a result.
struct CachedGraph {
  GraphKey key;
  cudaStream_t capture = nullptr;
  cudaGraphExec_t exec = nullptr;
};

bool Capture(CachedGraph& g, const GraphKey& key) {
  if (g.exec != nullptr) {
    cudaGraphExecDestroy(g.exec);
    g.exec = nullptr;
  }
  g.key = GraphKey{};
  if (g.capture == nullptr && cudaStreamCreateWithFlags(&g.capture, cudaStreamNonBlocking) != cudaSuccess) {
    g.capture = nullptr;
    return false;
  }
  if (cudaStreamBeginCapture(g.capture, cudaStreamCaptureModeThreadLocal) != cudaSuccess) return false;
  if (key.vec4) {
    PartialSums<true><<<static_cast<unsigned>(key.blocks), BLOCK, 0, g.capture>>>(key.x, key.n);
  } else {
    PartialSums<false><<<static_cast<unsigned>(key.blocks), BLOCK, 0, g.capture>>>(key.x, key.n);
  }
  FinalSum<<<1, kFinalBlock, 0, g.capture>>>(static_cast<int>(key.blocks), key.out);
  cudaGraph_t graph = nullptr;
  const cudaError_t launched = cudaGetLastError();
  if (cudaStreamEndCapture(g.capture, &graph) != cudaSuccess || launched != cudaSuccess || graph == nullptr) {
    if (graph != nullptr) cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    return false;
  }
  const cudaError_t made = cudaGraphInstantiate(&g.exec, graph, 0);
  cudaGraphDestroy(graph);
  if (made != cudaSuccess) {
    g.exec = nullptr;
    (void)cudaGetLastError();
    return false;
  }
  g.key = key;
  return true;
}

}  // namespace

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 1 || num_outputs != 1 || num_scalars != 0) return 1;
  GraphKey key;
  if (cudaGetDevice(&key.device) != cudaSuccess) return 3;
  key.x = static_cast<const float*>(inputs[0].data);
  key.out = static_cast<float*>(outputs[0].data);
  key.n = kpilot_numel(&inputs[0]);
  key.vec4 = reinterpret_cast<uintptr_t>(key.x) % 16 == 0;
  const int64_t per_block = static_cast<int64_t>(BLOCK) * (key.vec4 ? 4 * UNROLL : 1);
  int64_t blocks = (key.n + per_block - 1) / per_block;
  const int64_t resident = static_cast<int64_t>(MultiprocessorCount()) * (2048 / BLOCK);
  if (blocks > resident) blocks = resident;
  if (blocks > kMaxBlocks) blocks = kMaxBlocks;
  if (blocks < 1) blocks = 1;
  key.blocks = blocks;
  static CachedGraph graph;
  if (!(graph.exec != nullptr && graph.key == key) && !Capture(graph, key)) return 3;
  return cudaGraphLaunch(graph.exec, static_cast<cudaStream_t>(stream)) == cudaSuccess ? 0 : 3;
}
