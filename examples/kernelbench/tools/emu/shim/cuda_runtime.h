// A CPU stand-in for the small part of the CUDA runtime and device language the suite's candidates
// use, so that their kernels can run on a machine without a GPU (tools/emu/emulate.py). Each block
// runs with one std::thread per CUDA thread; __shared__ becomes `static` (blocks run one at a
// time), __syncthreads a barrier over the block, __shfl_xor_sync an exchange through a per-warp
// buffer. Slow, for correctness on small shapes only.
#pragma once
#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
struct alignas(8) float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
inline float2 make_float2(float a, float b) { return {a, b}; }
inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }

typedef void* cudaStream_t;
typedef int cudaError_t;
enum { cudaSuccess = 0, cudaErrorMemoryAllocation = 2 };
enum cudaDeviceAttr { cudaDevAttrMultiProcessorCount = 16 };
inline cudaError_t cudaGetLastError() { return cudaSuccess; }
inline cudaError_t cudaGetDevice(int* d) { *d = 0; return cudaSuccess; }
inline cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr, int) { *v = 2; return cudaSuccess; }
inline cudaError_t cudaMallocAsync(void** p, size_t n, cudaStream_t) {
  *p = std::malloc(n);
  if (*p) std::memset(*p, 0xff, n);  // NaN-filled: reading scratch before writing it shows
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
inline cudaError_t cudaFreeAsync(void* p, cudaStream_t) { std::free(p); return cudaSuccess; }

namespace kemu {
struct Block {
  std::barrier<>* block_barrier;
  std::vector<std::unique_ptr<std::barrier<>>>* warp_barriers;
  std::vector<float>* shuffle;
};
inline thread_local dim3 tl_thread, tl_block, tl_block_dim, tl_grid_dim;
inline thread_local Block tl_ctx;
}  // namespace kemu

#define threadIdx (::kemu::tl_thread)
#define blockIdx (::kemu::tl_block)
#define blockDim (::kemu::tl_block_dim)
#define gridDim (::kemu::tl_grid_dim)

inline void __syncthreads() { kemu::tl_ctx.block_barrier->arrive_and_wait(); }

inline float __shfl_xor_sync(unsigned, float v, int offset) {
  const unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned warp = t / 32, lane = t % 32;
  auto& bar = *(*kemu::tl_ctx.warp_barriers)[warp];
  auto& buf = *kemu::tl_ctx.shuffle;
  buf[t] = v;
  bar.arrive_and_wait();
  const float r = buf[warp * 32 + (lane ^ offset)];
  bar.arrive_and_wait();
  return r;
}

inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline float __expf(float x) { return std::exp(x); }

namespace kemu {
// Runs body() as every thread of every block of the grid, one block at a time.
inline void Launch(dim3 grid, dim3 block, const std::function<void()>& body) {
  const unsigned n = block.x * block.y * block.z;
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        std::barrier<> bar(n);
        std::vector<std::unique_ptr<std::barrier<>>> warps;
        for (unsigned w = 0; w < (n + 31) / 32; ++w)
          warps.push_back(std::make_unique<std::barrier<>>(std::min(32u, n - w * 32)));
        std::vector<float> shuffle(n);
        std::vector<std::thread> threads;
        for (unsigned t = 0; t < n; ++t)
          threads.emplace_back([&, t] {
            tl_thread = dim3(t % block.x, (t / block.x) % block.y, t / (block.x * block.y));
            tl_block = dim3(bx, by, bz);
            tl_block_dim = block;
            tl_grid_dim = grid;
            tl_ctx = Block{&bar, &warps, &shuffle};
            body();
            bar.arrive_and_drop();  // an exited thread no longer holds up __syncthreads
          });
        for (auto& th : threads) th.join();
      }
}
}  // namespace kemu
