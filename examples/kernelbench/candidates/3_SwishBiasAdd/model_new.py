"""KernelBench-style candidate for level2/3_SwishBiasAdd: x * sigmoid(x) + bias fused into one
load_inline CUDA kernel (one read of x, one write; float4 accesses when the row length is a multiple
of 4 and the pointers are aligned). The bias parameter is created as Model creates it. Needs a GPU
and nvcc."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_runtime.h>

__device__ __forceinline__ float swish_bias(float v, float b) { return v * (1.f / (1.f + expf(-v))) + b; }

__global__ void swish_bias_vec4(const float4* __restrict__ x, const float* __restrict__ bias, float4* __restrict__ y,
                                int64_t nvec, int64_t dim) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < nvec; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t col = (i * 4) % dim;
    float4 v = x[i];
    v.x = swish_bias(v.x, bias[col]);
    v.y = swish_bias(v.y, bias[col + 1]);
    v.z = swish_bias(v.z, bias[col + 2]);
    v.w = swish_bias(v.w, bias[col + 3]);
    y[i] = v;
  }
}

__global__ void swish_bias_scalar(const float* __restrict__ x, const float* __restrict__ bias, float* __restrict__ y,
                                  int64_t n, int64_t dim) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    y[i] = swish_bias(x[i], bias[i % dim]);
}

torch::Tensor swish_bias_cuda(torch::Tensor x, torch::Tensor bias) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "swish_bias_cuda: a CUDA float32 tensor");
  auto xc = x.contiguous();
  auto bc = bias.contiguous();
  auto y = torch::empty_like(xc);
  const int64_t n = xc.numel(), dim = bc.numel();
  TORCH_CHECK(dim == xc.size(-1), "swish_bias_cuda: bias of the last dim's size");
  if (n == 0) return y;
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const int threads = 256;
  const bool vec = dim % 4 == 0 && reinterpret_cast<uintptr_t>(xc.data_ptr<float>()) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(y.data_ptr<float>()) % 16 == 0;
  if (vec) {
    const int64_t nvec = n / 4;
    const int64_t blocks = std::min<int64_t>((nvec + threads - 1) / threads, 132 * 8 * 4);
    swish_bias_vec4<<<blocks, threads, 0, stream>>>(reinterpret_cast<const float4*>(xc.data_ptr<float>()),
                                                    bc.data_ptr<float>(), reinterpret_cast<float4*>(y.data_ptr<float>()),
                                                    nvec, dim);
  } else {
    const int64_t blocks = std::min<int64_t>((n + threads - 1) / threads, 132 * 8 * 4);
    swish_bias_scalar<<<blocks, threads, 0, stream>>>(xc.data_ptr<float>(), bc.data_ptr<float>(), y.data_ptr<float>(), n, dim);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

cpp_source = "torch::Tensor swish_bias_cuda(torch::Tensor x, torch::Tensor bias);"

swish_ext = load_inline(
    name="kpilot_kb_swish_bias",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["swish_bias_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super(ModelNew, self).__init__()
        self.bias = nn.Parameter(torch.randn(dim) * 0.1)

    def forward(self, x):
        return swish_ext.swish_bias_cuda(x, self.bias)
