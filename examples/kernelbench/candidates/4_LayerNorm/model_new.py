"""KernelBench-style candidate for level1/4_LayerNorm: a load_inline CUDA kernel, one block of 256
threads per row, two-pass mean and variance with warp-shuffle block sums. The module creates its
parameters exactly as Model does (an nn.LayerNorm drawn the same way), so both get the same values
under the same seed. Needs a GPU and nvcc."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_runtime.h>

constexpr int kThreads = 256;

__device__ float block_sum(float v, float* shared) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kThreads / 32 ? shared[lane] : 0.f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) shared[kThreads / 32] = v;
  }
  __syncthreads();
  const float r = shared[kThreads / 32];
  __syncthreads();
  return r;
}

__global__ void __launch_bounds__(kThreads) layernorm_rows(const float* __restrict__ x, const float* __restrict__ w,
                                                           const float* __restrict__ b, float* __restrict__ y,
                                                           int64_t cols, float eps) {
  __shared__ float shared[kThreads / 32 + 1];
  const float* xr = x + blockIdx.x * cols;
  float* yr = y + blockIdx.x * cols;
  float s = 0.f;
  for (int64_t c = threadIdx.x; c < cols; c += kThreads) s += xr[c];
  const float mean = block_sum(s, shared) / cols;
  float q = 0.f;
  for (int64_t c = threadIdx.x; c < cols; c += kThreads) q += (xr[c] - mean) * (xr[c] - mean);
  const float inv_std = rsqrtf(block_sum(q, shared) / cols + eps);
  for (int64_t c = threadIdx.x; c < cols; c += kThreads) yr[c] = (xr[c] - mean) * inv_std * w[c] + b[c];
}

torch::Tensor layernorm_cuda(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "layernorm_cuda: a CUDA float32 tensor");
  auto xc = x.contiguous();
  auto wc = w.contiguous();
  auto bc = b.contiguous();
  auto y = torch::empty_like(xc);
  const int64_t cols = xc.size(-1);
  TORCH_CHECK(wc.numel() == cols && bc.numel() == cols, "layernorm_cuda: weight and bias of the last dim's size");
  if (xc.numel() == 0) return y;
  layernorm_rows<<<xc.numel() / cols, kThreads, 0, at::cuda::getCurrentCUDAStream()>>>(
      xc.data_ptr<float>(), wc.data_ptr<float>(), bc.data_ptr<float>(), y.data_ptr<float>(), cols, (float)eps);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

cpp_source = "torch::Tensor layernorm_cuda(torch::Tensor x, torch::Tensor w, torch::Tensor b, double eps);"

layernorm_ext = load_inline(
    name="kpilot_kb_layernorm",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["layernorm_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, normalized_dim):
        super(ModelNew, self).__init__()
        self.ln = nn.LayerNorm(normalized_dim, eps=1e-5)
        with torch.no_grad():
            self.ln.weight.uniform_(0.5, 1.5)
            self.ln.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        return layernorm_ext.layernorm_cuda(x, self.ln.weight, self.ln.bias, self.ln.eps)
