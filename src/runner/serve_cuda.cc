// The cuda backend's serving session (kpilot-runner --serve): one context, stream, CUPTI trace
// and NVML handle for every request, and the checks that say when the process must not serve
// another one.
#include <cuda_runtime_api.h>

#include "runner/worker_cuda.h"

namespace kpilot {
namespace {

// GPU memory a candidate may leave allocated (a static workspace, cached across calls) before
// the process is retired: past it, later candidates would time on a fuller device. The free
// memory is the device's, so another process allocating this much on the GPU retires the
// runner too: a fresh one then costs a context, never a wrong result.
constexpr size_t kMaxKeptDeviceBytes = 512ull << 20;

class NullReporter : public PhaseReporter {
 public:
  void Phase(const std::string&, const std::string&) override {}
};

class CudaSession : public WorkerSession {
 public:
  void Open(const RunRequest& first) override {
    NullReporter quiet;
    CudaWorker opener(first, quiet, device_);  // holds the GPU lock until Open returns
    if (!opener.OpenDeviceOnly()) return;  // the first Run tries again and reports why
    // Whatever CUPTI and the runtime start lazily (activity buffers, their threads) starts now,
    // so that the supervisor's count of threads after a request sees only the candidate's.
    auto probe = DeviceBuffer::Allocate(1 << 20);
    if (probe.ok()) {
      cudaMemsetAsync(probe->get(), 0, 1 << 20, device_.stream->get());
      cudaStreamSynchronize(device_.stream->get());
      if (device_.tracer) (void)device_.tracer->Collect();
    }
    size_t total = 0;
    if (cudaMemGetInfo(&free_at_open_, &total) != cudaSuccess) free_at_open_ = 0;
  }

  RunResult Run(const RunRequest& request, PhaseReporter& reporter) override {
    return RunCudaRequest(request, reporter, device_);
  }

  std::string WhyNotAgain() override {
    if (device_.device < 0) return "its CUDA device never opened";
    if (std::string sticky = StickyError(); !sticky.empty())
      return "the candidate left the CUDA context unusable (" + sticky + ")";
    size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) != cudaSuccess) return "cudaMemGetInfo failed";
    if (free_at_open_ > 0 && free + kMaxKeptDeviceBytes < free_at_open_)
      return "the candidates kept " + std::to_string((free_at_open_ - free) >> 20) + " MiB of GPU memory allocated";
    return "";
  }

 private:
  CudaDevice device_;
  size_t free_at_open_ = 0;
};

}  // namespace

std::string StickyError() {
  cudaError_t e = cudaDeviceSynchronize();
  (void)cudaGetLastError();  // clears an error that is not sticky
  if (e == cudaSuccess) return "";
  e = cudaDeviceSynchronize();
  if (e == cudaSuccess) {
    auto probe = DeviceBuffer::Allocate(256);
    if (probe.ok()) return "";
    e = cudaGetLastError();
  }
  return e == cudaSuccess ? "" : CudaErrorText(e);
}

std::unique_ptr<WorkerSession> MakeCudaSession() { return std::make_unique<CudaSession>(); }

}  // namespace kpilot
