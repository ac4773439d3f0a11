"""KernelBench-style candidate for level1/1_ReLU: a load_inline CUDA kernel (float4 accesses with
a scalar tail, launched on the current stream). Needs a GPU and nvcc; the build takes about a
minute the first time (torch's extension toolchain), which is what kpilot's native path avoids."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_runtime.h>

__global__ void relu_vec4(const float4* __restrict__ x, float4* __restrict__ y, int64_t nvec) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < nvec; i += (int64_t)gridDim.x * blockDim.x) {
    float4 v = x[i];
    v.x = v.x < 0.f ? 0.f : v.x;
    v.y = v.y < 0.f ? 0.f : v.y;
    v.z = v.z < 0.f ? 0.f : v.z;
    v.w = v.w < 0.f ? 0.f : v.w;
    y[i] = v;
  }
}

__global__ void relu_scalar(const float* __restrict__ x, float* __restrict__ y, int64_t begin, int64_t n) {
  for (int64_t i = begin + blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const float v = x[i];
    y[i] = v < 0.f ? 0.f : v;
  }
}

torch::Tensor relu_cuda(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "relu_cuda: a CUDA float32 tensor");
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  const int64_t n = xc.numel();
  if (n == 0) return y;
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const int threads = 256;
  const bool aligned = reinterpret_cast<uintptr_t>(xc.data_ptr<float>()) % 16 == 0 &&
                       reinterpret_cast<uintptr_t>(y.data_ptr<float>()) % 16 == 0;
  const int64_t nvec = aligned ? n / 4 : 0;
  if (nvec > 0) {
    const int64_t blocks = std::min<int64_t>((nvec + threads - 1) / threads, 132 * 8 * 4);
    relu_vec4<<<blocks, threads, 0, stream>>>(reinterpret_cast<const float4*>(xc.data_ptr<float>()),
                                              reinterpret_cast<float4*>(y.data_ptr<float>()), nvec);
  }
  if (nvec * 4 < n) {
    relu_scalar<<<nvec > 0 ? 1 : 1024, threads, 0, stream>>>(xc.data_ptr<float>(), y.data_ptr<float>(), nvec * 4, n);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

cpp_source = "torch::Tensor relu_cuda(torch::Tensor x);"

relu_ext = load_inline(
    name="kpilot_kb_relu",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["relu_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x):
        return relu_ext.relu_cuda(x)
