#include "runner/device_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <cmath>
#include <vector>

namespace kpilot {
namespace {

constexpr int kThreads = 256;
constexpr int kReduceBlocks = 1024;

cudaStream_t S(void* s) { return static_cast<cudaStream_t>(s); }

int Blocks(int64_t n) { return static_cast<int>(std::min<int64_t>((n + kThreads - 1) / kThreads, 65535 * 4)); }

__device__ inline uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

__device__ inline double Uniform01(uint64_t h) {
  return (static_cast<double>(h >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

template <typename T>
__device__ inline double Load(const void* p, int64_t i) {
  return static_cast<double>(static_cast<const T*>(p)[i]);
}
template <>
__device__ inline double Load<__half>(const void* p, int64_t i) {
  return static_cast<double>(__half2float(static_cast<const __half*>(p)[i]));
}
template <>
__device__ inline double Load<__nv_bfloat16>(const void* p, int64_t i) {
  return static_cast<double>(__bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]));
}
template <>
__device__ inline double Load<__nv_fp8_e4m3>(const void* p, int64_t i) {
  return static_cast<double>(static_cast<float>(static_cast<const __nv_fp8_e4m3*>(p)[i]));
}
template <>
__device__ inline double Load<__nv_fp8_e5m2>(const void* p, int64_t i) {
  return static_cast<double>(static_cast<float>(static_cast<const __nv_fp8_e5m2*>(p)[i]));
}
template <>
__device__ inline double Load<bool>(const void* p, int64_t i) {
  return static_cast<const unsigned char*>(p)[i] ? 1.0 : 0.0;
}

template <typename T>
__device__ inline void Store(void* p, int64_t i, double v) {
  if constexpr (std::is_integral_v<T>) {
    // Values come from integer-valued distributions; wrap like the host backend.
    static_cast<T*>(p)[i] = static_cast<T>(static_cast<long long>(v));
  } else {
    static_cast<T*>(p)[i] = static_cast<T>(v);
  }
}
template <>
__device__ inline void Store<__half>(void* p, int64_t i, double v) {
  static_cast<__half*>(p)[i] = __double2half(v);
}
template <>
__device__ inline void Store<__nv_bfloat16>(void* p, int64_t i, double v) {
  static_cast<__nv_bfloat16*>(p)[i] = __double2bfloat16(v);
}
template <>
__device__ inline void Store<__nv_fp8_e4m3>(void* p, int64_t i, double v) {
  static_cast<__nv_fp8_e4m3*>(p)[i] = __nv_fp8_e4m3(v);
}
template <>
__device__ inline void Store<__nv_fp8_e5m2>(void* p, int64_t i, double v) {
  static_cast<__nv_fp8_e5m2*>(p)[i] = __nv_fp8_e5m2(v);
}
template <>
__device__ inline void Store<bool>(void* p, int64_t i, double v) {
  static_cast<unsigned char*>(p)[i] = v != 0 ? 1 : 0;
}

template <typename T>
__global__ void FillInitKernel(int kind, double a, double b, uint64_t seed, uint64_t stream_id, void* data, int64_t n) {
  uint64_t base = Mix(seed ^ Mix(stream_id + 0x6b70696cull));
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    uint64_t h = Mix(base ^ static_cast<uint64_t>(i));
    double v;
    switch (kind) {
      case 0: {  // normal
        double u1 = Uniform01(h), u2 = Uniform01(Mix(h));
        v = a + b * sqrt(-2.0 * log(u1)) * cospi(2.0 * u2);
        break;
      }
      case 1:
        v = a + (b - a) * Uniform01(h);
        break;   // uniform
      case 2: {  // randint in [a, b)
        double span = b - a;
        v = a + floor(Uniform01(h) * span);
        if (v >= b) v = b - 1;
        break;
      }
      case 3:
        v = a + static_cast<double>(i) * b;
        break;  // range
      default:
        v = a;  // constant
    }
    Store<T>(data, i, v);
  }
}

struct Partial {
  long long mismatches;
  long long first_bad;
  long long nonfinite_out;
  double max_abs, max_rel, sum_sq_diff, sum_sq_ref, sum_sq_out;
  double out_min, out_max, ref_min, ref_max, max_abs_ref;
};

__device__ inline void Merge(Partial& a, const Partial& b) {
  a.mismatches += b.mismatches;
  if (b.first_bad >= 0 && (a.first_bad < 0 || b.first_bad < a.first_bad)) a.first_bad = b.first_bad;
  a.nonfinite_out += b.nonfinite_out;
  a.max_abs = fmax(a.max_abs, b.max_abs);
  a.max_rel = fmax(a.max_rel, b.max_rel);
  a.sum_sq_diff += b.sum_sq_diff;
  a.sum_sq_ref += b.sum_sq_ref;
  a.sum_sq_out += b.sum_sq_out;
  a.out_min = fmin(a.out_min, b.out_min);
  a.out_max = fmax(a.out_max, b.out_max);
  a.ref_min = fmin(a.ref_min, b.ref_min);
  a.ref_max = fmax(a.ref_max, b.ref_max);
  a.max_abs_ref = fmax(a.max_abs_ref, b.max_abs_ref);
}

__device__ inline Partial Empty() {
  Partial p;
  p.mismatches = 0;
  p.first_bad = -1;
  p.nonfinite_out = 0;
  p.max_abs = p.max_rel = p.sum_sq_diff = p.sum_sq_ref = p.sum_sq_out = 0;
  p.out_min = p.ref_min = INFINITY;
  p.out_max = p.ref_max = -INFINITY;
  p.max_abs_ref = 0;
  return p;
}

template <typename T>
__global__ void CompareKernel(const void* out, const void* ref, int64_t n, double atol, double rtol,
                              Partial* partials) {
  __shared__ Partial shared[kThreads];
  Partial p = Empty();
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    double o = Load<T>(out, i), r = Load<T>(ref, i);
    bool match;
    if (isnan(r)) {
      match = isnan(o);
    } else if (isinf(r)) {
      match = o == r;
    } else if (!isfinite(o)) {
      match = false;
    } else {
      double d = fabs(o - r);
      match = d <= atol + rtol * fabs(r);
      p.max_abs = fmax(p.max_abs, d);
      if (r != 0) p.max_rel = fmax(p.max_rel, d / fabs(r));
      p.sum_sq_diff += d * d;
    }
    if (isfinite(r)) {
      p.sum_sq_ref += r * r;
      p.ref_min = fmin(p.ref_min, r);
      p.ref_max = fmax(p.ref_max, r);
      p.max_abs_ref = fmax(p.max_abs_ref, fabs(r));
    }
    if (isfinite(o)) {
      p.sum_sq_out += o * o;
      p.out_min = fmin(p.out_min, o);
      p.out_max = fmax(p.out_max, o);
    } else {
      ++p.nonfinite_out;
    }
    if (!match) {
      ++p.mismatches;
      if (p.first_bad < 0) p.first_bad = i;
    }
  }
  shared[threadIdx.x] = p;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) Merge(shared[threadIdx.x], shared[threadIdx.x + s]);
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = shared[0];
}

template <typename T>
__global__ void GatherKernel(const void* data, int64_t count, int64_t stride, double* out) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < count) out[i] = Load<T>(data, i * stride);
}

__global__ void PatternKernel(unsigned char* data, int64_t n, int elem, uint64_t pattern) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    for (int b = 0; b < elem; ++b) data[i * elem + b] = static_cast<unsigned char>(pattern >> (8 * b));
}

__global__ void CountNotKernel(const unsigned char* data, size_t bytes, unsigned char value,
                               unsigned long long* count) {
  unsigned long long c = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < bytes;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    c += data[i] != value;
  if (c) atomicAdd(count, c);
}

__global__ void HashKernel(const unsigned char* data, size_t bytes, unsigned long long* hash) {
  unsigned long long h = 0;
  size_t words = bytes / 8;
  const unsigned long long* w = reinterpret_cast<const unsigned long long*>(data);
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < words;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    h += Mix(w[i] ^ Mix(i));
  if (blockIdx.x == 0 && threadIdx.x == 0)
    for (size_t i = words * 8; i < bytes; ++i) h += Mix(data[i] ^ Mix(i + (1ull << 40)));
  if (h) atomicAdd(hash, h);  // a sum of per-word mixes: order-independent, position-dependent
}

__global__ void KpilotL2FlushKernel(const uint4* data, size_t n, unsigned* sink) {
  unsigned acc = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    uint4 v = data[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9E3779B9u) *sink = acc;  // never true for the zeroed buffer; keeps the loads
}

template <template <typename> class Launch, typename... Args>
int Dispatch(DType t, Args... args) {
  switch (t) {
    case DType::kF64:
      return Launch<double>{}(args...);
    case DType::kF32:
      return Launch<float>{}(args...);
    case DType::kF16:
      return Launch<__half>{}(args...);
    case DType::kBF16:
      return Launch<__nv_bfloat16>{}(args...);
    case DType::kFP8E4M3:
      return Launch<__nv_fp8_e4m3>{}(args...);
    case DType::kFP8E5M2:
      return Launch<__nv_fp8_e5m2>{}(args...);
    case DType::kI64:
      return Launch<long long>{}(args...);
    case DType::kI32:
      return Launch<int>{}(args...);
    case DType::kI16:
      return Launch<short>{}(args...);
    case DType::kI8:
      return Launch<signed char>{}(args...);
    case DType::kU8:
      return Launch<unsigned char>{}(args...);
    case DType::kBool:
      return Launch<bool>{}(args...);
  }
  return static_cast<int>(cudaErrorInvalidValue);
}

template <typename T>
struct FillLaunch {
  int operator()(int kind, double a, double b, uint64_t seed, uint64_t sid, void* data, int64_t n, cudaStream_t s) {
    if (n == 0) return 0;
    FillInitKernel<T><<<Blocks(n), kThreads, 0, s>>>(kind, a, b, seed, sid, data, n);
    return static_cast<int>(cudaGetLastError());
  }
};

template <typename T>
struct CompareLaunch {
  int operator()(const void* out, const void* ref, int64_t n, double atol, double rtol, DeviceCompareStats* r,
                 cudaStream_t s) {
    Partial* partials = nullptr;
    int blocks =
        static_cast<int>(std::min<int64_t>(kReduceBlocks, std::max<int64_t>(1, (n + kThreads - 1) / kThreads)));
    cudaError_t e = cudaMallocAsync(&partials, sizeof(Partial) * blocks, s);
    if (e != cudaSuccess) return static_cast<int>(e);
    CompareKernel<T><<<blocks, kThreads, 0, s>>>(out, ref, n, atol, rtol, partials);
    e = cudaGetLastError();
    std::vector<Partial> host(blocks);
    if (e == cudaSuccess)
      e = cudaMemcpyAsync(host.data(), partials, sizeof(Partial) * blocks, cudaMemcpyDeviceToHost, s);
    cudaFreeAsync(partials, s);
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    if (e != cudaSuccess) return static_cast<int>(e);
    Partial acc = host[0];
    for (int i = 1; i < blocks; ++i) {
      const Partial& b = host[i];
      acc.mismatches += b.mismatches;
      if (b.first_bad >= 0 && (acc.first_bad < 0 || b.first_bad < acc.first_bad)) acc.first_bad = b.first_bad;
      acc.nonfinite_out += b.nonfinite_out;
      acc.max_abs = std::max(acc.max_abs, b.max_abs);
      acc.max_rel = std::max(acc.max_rel, b.max_rel);
      acc.sum_sq_diff += b.sum_sq_diff;
      acc.sum_sq_ref += b.sum_sq_ref;
      acc.sum_sq_out += b.sum_sq_out;
      acc.out_min = std::min(acc.out_min, b.out_min);
      acc.out_max = std::max(acc.out_max, b.out_max);
      acc.ref_min = std::min(acc.ref_min, b.ref_min);
      acc.ref_max = std::max(acc.ref_max, b.ref_max);
      acc.max_abs_ref = std::max(acc.max_abs_ref, b.max_abs_ref);
    }
    r->mismatches = acc.mismatches;
    r->first_bad = acc.first_bad;
    r->nonfinite_out = acc.nonfinite_out;
    r->max_abs = acc.max_abs;
    r->max_rel = acc.max_rel;
    r->sum_sq_diff = acc.sum_sq_diff;
    r->sum_sq_ref = acc.sum_sq_ref;
    r->sum_sq_out = acc.sum_sq_out;
    r->out_min = acc.out_min;
    r->out_max = acc.out_max;
    r->ref_min = acc.ref_min;
    r->ref_max = acc.ref_max;
    r->max_abs_ref = acc.max_abs_ref;
    return 0;
  }
};

template <typename T>
struct GatherLaunch {
  int operator()(const void* data, int64_t count, int64_t stride, double* host_out, cudaStream_t s) {
    if (count <= 0) return 0;
    double* dev = nullptr;
    cudaError_t e = cudaMallocAsync(&dev, sizeof(double) * count, s);
    if (e != cudaSuccess) return static_cast<int>(e);
    GatherKernel<T><<<static_cast<int>((count + kThreads - 1) / kThreads), kThreads, 0, s>>>(data, count, stride, dev);
    e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaMemcpyAsync(host_out, dev, sizeof(double) * count, cudaMemcpyDeviceToHost, s);
    cudaFreeAsync(dev, s);
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    return static_cast<int>(e);
  }
};

}  // namespace

int DeviceFillInit(DType dtype, const InitSpec& init, uint64_t seed, uint64_t stream_id, void* data, int64_t n,
                   void* stream) {
  return Dispatch<FillLaunch>(dtype, static_cast<int>(init.kind), init.a, init.b, seed, stream_id, data, n, S(stream));
}

int DevicePoison(DType dtype, void* data, int64_t n, void* stream) {
  if (n == 0) return 0;
  uint64_t pattern;
  int elem = static_cast<int>(DTypeSize(dtype));
  switch (dtype) {
    case DType::kF64:
      pattern = 0x7FF8000000000000ull;
      break;
    case DType::kF32:
      pattern = 0x7FC00000u;
      break;
    case DType::kF16:
      pattern = 0x7E00u;
      break;
    case DType::kBF16:
      pattern = 0x7FC0u;
      break;
    case DType::kFP8E4M3:
    case DType::kFP8E5M2:
      pattern = 0x7Fu;
      break;
    default:
      pattern = 0x5A5A5A5A5A5A5A5Aull;
  }
  PatternKernel<<<Blocks(n), kThreads, 0, S(stream)>>>(static_cast<unsigned char*>(data), n, elem, pattern);
  return static_cast<int>(cudaGetLastError());
}

int DeviceCompare(DType dtype, const void* out, const void* ref, int64_t n, double atol, double rtol,
                  DeviceCompareStats* result, void* stream) {
  *result = DeviceCompareStats{};
  if (n == 0) return 0;
  return Dispatch<CompareLaunch>(dtype, out, ref, n, atol, rtol, result, S(stream));
}

int DeviceGatherAsDouble(DType dtype, const void* data, int64_t count, int64_t stride, double* host_out, void* stream) {
  return Dispatch<GatherLaunch>(dtype, data, count, stride, host_out, S(stream));
}

int DeviceCountNot(const void* data, size_t bytes, unsigned char value, uint64_t* host_count, void* stream) {
  unsigned long long* dev = nullptr;
  cudaStream_t s = S(stream);
  cudaError_t e = cudaMallocAsync(&dev, sizeof(*dev), s);
  if (e != cudaSuccess) return static_cast<int>(e);
  e = cudaMemsetAsync(dev, 0, sizeof(*dev), s);
  if (e == cudaSuccess && bytes > 0) {
    CountNotKernel<<<Blocks(static_cast<int64_t>(bytes)), kThreads, 0, s>>>(static_cast<const unsigned char*>(data),
                                                                            bytes, value, dev);
    e = cudaGetLastError();
  }
  unsigned long long h = 0;
  if (e == cudaSuccess) e = cudaMemcpyAsync(&h, dev, sizeof(h), cudaMemcpyDeviceToHost, s);
  cudaFreeAsync(dev, s);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  *host_count = h;
  return static_cast<int>(e);
}

int DeviceHash(const void* data, size_t bytes, uint64_t* host_hash, void* stream) {
  unsigned long long* dev = nullptr;
  cudaStream_t s = S(stream);
  cudaError_t e = cudaMallocAsync(&dev, sizeof(*dev), s);
  if (e != cudaSuccess) return static_cast<int>(e);
  e = cudaMemsetAsync(dev, 0, sizeof(*dev), s);
  if (e == cudaSuccess && bytes > 0) {
    HashKernel<<<Blocks(static_cast<int64_t>(bytes / 8 + 1)), kThreads, 0, s>>>(static_cast<const unsigned char*>(data),
                                                                                bytes, dev);
    e = cudaGetLastError();
  }
  unsigned long long h = 0;
  if (e == cudaSuccess) e = cudaMemcpyAsync(&h, dev, sizeof(h), cudaMemcpyDeviceToHost, s);
  cudaFreeAsync(dev, s);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  *host_hash = h ^ bytes;
  return static_cast<int>(e);
}

int DeviceFlushL2(const void* buffer, size_t bytes, void* stream) {
  size_t n = bytes / sizeof(uint4);
  // The sink is the buffer's own first word: written only if the impossible happens.
  KpilotL2FlushKernel<<<1024, 512, 0, S(stream)>>>(static_cast<const uint4*>(buffer), n,
                                                   const_cast<unsigned*>(static_cast<const unsigned*>(buffer)));
  return static_cast<int>(cudaGetLastError());
}

}  // namespace kpilot
