// RAII for the CUDA runtime handles the cuda backend uses, and error formatting.
#pragma once

#include <cuda_runtime_api.h>

#include <string>
#include <utility>

#include "core/status.h"

namespace kpilot {

// "cudaErrorIllegalAddress (an illegal memory access was encountered)".
inline std::string CudaErrorText(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")";
}

// One cudaMalloc allocation (never managed memory). Move-only; freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  static Result<DeviceBuffer> Allocate(size_t bytes) {
    DeviceBuffer b;
    b.bytes_ = bytes;
    cudaError_t e = cudaMalloc(&b.ptr_, bytes == 0 ? 1 : bytes);
    if (e != cudaSuccess) {
      b.ptr_ = nullptr;
      return Status::Internal("cudaMalloc(" + std::to_string(bytes) + " bytes): " + CudaErrorText(e));
    }
    return b;
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(o.bytes_) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      Reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = o.bytes_;
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { Reset(); }
  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  void Reset() {
    if (ptr_) cudaFree(ptr_);
    ptr_ = nullptr;
  }
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

class CudaEvent {
 public:
  CudaEvent() { cudaEventCreate(&e_); }
  ~CudaEvent() {
    if (e_) cudaEventDestroy(e_);
  }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

// A non-blocking stream: work a candidate puts on the legacy default stream is not ordered
// with it, so the checks can see such work as happening outside the given stream.
class CudaStream {
 public:
  CudaStream() { cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking); }
  ~CudaStream() {
    if (s_) cudaStreamDestroy(s_);
  }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

}  // namespace kpilot
