// 7x7 "same" convolution with register blocking and an optional shared-memory tile, every shape
// choice a -D param (task.toml lists them and their constraints): a tuning space for the search.
//
// A block of BX x BY threads computes a (BX*TX) x (BY*TY) tile of the output; thread (tx, ty)
// computes the outputs at columns tx + b*BX and rows ty + a*BY of the tile, so a warp's accesses
// stay consecutive. With SMEM the block first copies its input tile and the 3-wide halo into
// shared memory (zeros outside the image) and reads every tap from there; without it every tap
// is a read-only global load. The 49 weights go to shared memory either way. Each output sums its
// taps row by row, column by column, with f32 FMAs, in the reference's order.
#include <kpilot/kernel.h>

#include <cuda_runtime.h>

#include <cstdint>

#ifndef BX
#define BX 32
#endif
#ifndef BY
#define BY 8
#endif
#ifndef TX
#define TX 1
#endif
#ifndef TY
#define TY 1
#endif
#ifndef SMEM
#define SMEM 0
#endif
#ifndef PAD
#define PAD 0
#endif

constexpr int kF = 7;
constexpr int kR = kF / 2;
constexpr int kThreads = BX * BY;
constexpr int kTileW = BX * TX + 2 * kR;
constexpr int kTileH = BY * TY + 2 * kR;
constexpr int kPitch = kTileW + PAD;

static_assert(kThreads >= 32 && kThreads <= 1024, "threads per block out of range");
static_assert(!SMEM || kTileH * kPitch * 4 <= 48 * 1024, "static shared memory limit");

__global__ __launch_bounds__(kThreads) void Conv2dTiled(const float* __restrict__ img,
                                                        const float* __restrict__ filt,
                                                        float* __restrict__ out, int h, int w) {
  __shared__ float weights[kF * kF];
#if SMEM
  __shared__ float tile[kTileH][kPitch];
#endif
  const int tid = threadIdx.y * BX + threadIdx.x;
  const int x0 = blockIdx.x * (BX * TX);
  const int y0 = blockIdx.y * (BY * TY);
  for (int e = tid; e < kF * kF; e += kThreads) weights[e] = filt[e];
#if SMEM
  for (int e = tid; e < kTileH * kTileW; e += kThreads) {
    const int ly = e / kTileW, lx = e % kTileW;
    const int gy = y0 + ly - kR, gx = x0 + lx - kR;
    tile[ly][lx] = (gy >= 0 && gy < h && gx >= 0 && gx < w) ? img[static_cast<int64_t>(gy) * w + gx] : 0.0f;
  }
#endif
  __syncthreads();

  float acc[TY][TX];
#pragma unroll
  for (int a = 0; a < TY; ++a) {
#pragma unroll
    for (int b = 0; b < TX; ++b) acc[a][b] = 0.0f;
  }
#pragma unroll
  for (int i = 0; i < kF; ++i) {
#pragma unroll
    for (int j = 0; j < kF; ++j) {
      const float wgt = weights[i * kF + j];
#pragma unroll
      for (int a = 0; a < TY; ++a) {
        const int ly = threadIdx.y + a * BY;
#pragma unroll
        for (int b = 0; b < TX; ++b) {
          const int lx = threadIdx.x + b * BX;
#if SMEM
          const float v = tile[ly + i][lx + j];
#else
          const int gy = y0 + ly + i - kR, gx = x0 + lx + j - kR;
          const float v = (gy >= 0 && gy < h && gx >= 0 && gx < w) ? __ldg(img + static_cast<int64_t>(gy) * w + gx) : 0.0f;
#endif
          acc[a][b] = fmaf(v, wgt, acc[a][b]);
        }
      }
    }
  }
#pragma unroll
  for (int a = 0; a < TY; ++a) {
    const int y = y0 + threadIdx.y + a * BY;
    if (y >= h) continue;
#pragma unroll
    for (int b = 0; b < TX; ++b) {
      const int x = x0 + threadIdx.x + b * BX;
      if (x < w) out[static_cast<int64_t>(y) * w + x] = acc[a][b];
    }
  }
}

KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int num_inputs,
                                const kpilot_tensor* outputs, int num_outputs,
                                const kpilot_scalar* scalars, int num_scalars, void* stream) {
  (void)scalars;
  if (num_inputs != 2 || num_outputs != 1 || num_scalars != 0) return 1;
  if (inputs[0].rank != 2 || inputs[1].rank != 2) return 2;
  const int64_t h = inputs[0].shape[0], w = inputs[0].shape[1];
  if (inputs[1].shape[0] != kF || inputs[1].shape[1] != kF) return 2;  // the filter size is compiled in
  if (h > (1 << 30) || w > (1 << 30) || h * w > (int64_t{1} << 40)) return 2;
  if (h * w == 0) return 0;
  const int64_t gx = (w + BX * TX - 1) / (BX * TX), gy = (h + BY * TY - 1) / (BY * TY);
  if (gy > 65535) return 2;
  Conv2dTiled<<<dim3(static_cast<unsigned>(gx), static_cast<unsigned>(gy)), dim3(BX, BY), 0,
                static_cast<cudaStream_t>(stream)>>>(static_cast<const float*>(inputs[0].data),
                                                     static_cast<const float*>(inputs[1].data),
                                                     static_cast<float*>(outputs[0].data), static_cast<int>(h),
                                                     static_cast<int>(w));
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
