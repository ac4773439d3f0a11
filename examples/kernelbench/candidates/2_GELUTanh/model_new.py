"""KernelBench-style candidate for level1/2_GELUTanh: a load_inline CUDA kernel (tanh-form GELU with tanhf, float4 accesses with
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

__device__ __forceinline__ float gelu_tanh(float v) {
  const float k0 = 0.7978845608028654f;  // sqrt(2 / pi)
  return 0.5f * v * (1.f + tanhf(k0 * (v + 0.044715f * v * v * v)));
}

__global__ void gelu_vec4(const float4* __restrict__ x, float4* __restrict__ y, int64_t nvec) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < nvec; i += (int64_t)gridDim.x * blockDim.x) {
    float4 v = x[i];
    v.x = gelu_tanh(v.x);
    v.y = gelu_tanh(v.y);
    v.z = gelu_tanh(v.z);
    v.w = gelu_tanh(v.w);
    y[i] = v;
  }
}

__global__ void gelu_scalar(const float* __restrict__ x, float* __restrict__ y, int64_t begin, int64_t n) {
  for (int64_t i = begin + blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    y[i] = gelu_tanh(x[i]);
  }
}

torch::Tensor gelu_cuda(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "gelu_cuda: a CUDA float32 tensor");
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
    gelu_vec4<<<blocks, threads, 0, stream>>>(reinterpret_cast<const float4*>(xc.data_ptr<float>()),
                                              reinterpret_cast<float4*>(y.data_ptr<float>()), nvec);
  }
  if (nvec * 4 < n) {
    gelu_scalar<<<nvec > 0 ? 1 : 1024, threads, 0, stream>>>(xc.data_ptr<float>(), y.data_ptr<float>(), nvec * 4, n);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

cpp_source = "torch::Tensor gelu_cuda(torch::Tensor x);"

gelu_ext = load_inline(
    name="kpilot_kb_gelu_tanh",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["gelu_cuda"],
    verbose=False,
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x):
        return gelu_ext.gelu_cuda(x)
