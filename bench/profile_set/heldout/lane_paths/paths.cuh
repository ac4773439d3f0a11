// The four per-element iterations of the lane_paths task, shared by the reference and the
// candidates so that every one runs the same explicit fmaf sequence and matches to the bit.
// (kpilot's compile cache keys a source by its own text only: after editing this header, profile
// with --no-store or --fresh.)
#pragma once

#include <cuda_runtime.h>

constexpr int kSteps = 1024;

__device__ __forceinline__ float Path(int path, float x) {
  float v = x;
  switch (path) {
    case 0: {  // relax towards x
      const float w = 0.001f * x;
#pragma unroll 4
      for (int t = 0; t < kSteps; ++t) v = fmaf(v, 0.999f, w);
      break;
    }
    case 1: {  // cubic damping, stays in [-1, 1]
      const float w = 0.05f * x;
#pragma unroll 4
      for (int t = 0; t < kSteps; ++t) v = fmaf(v, fmaf(-0.05f * v, v, 0.95f), w);
      break;
    }
    case 2: {  // damped oscillation
      const float w = 0.002f * x;
#pragma unroll 4
      for (int t = 0; t < kSteps; ++t) v = fmaf(v, -0.998f, w);
      break;
    }
    default: {  // folded map, |v| <= 2
#pragma unroll 4
      for (int t = 0; t < kSteps; ++t) v = fmaf(fabsf(v), -0.5f, x);
      break;
    }
  }
  return v;
}
