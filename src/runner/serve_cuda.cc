// The cuda backend's serving session (kpilot-runner --serve): one context, stream, CUPTI trace
// and NVML handle for every request, and the checks that say when the process must not serve
// another one.
#include <cuda_runtime_api.h>

#include "runner/checks.h"
#include "runner/worker_cuda.h"

namespace kpilot {
namespace {

// GPU memory a candidate may leave allocated (a static workspace, cached across calls) before
// the process is retired: past it, later candidates would time on a fuller device. The free
// memory is the device's, so another process allocating this much on the GPU retires the
// runner too: a fresh one then costs a context, never a wrong result.
constexpr size_t kMaxKeptDeviceBytes = 512ull << 20;

// The CUDA state a candidate can change that outlives its request and would change a later
// candidate's run: the current device (cudaSetDevice: later work would go elsewhere), the
// device's limits (a persisting-L2 set-aside changes every later timing; the printf FIFO and
// malloc heap, the device memory left), its cache preference, its flags (spin or blocking sync:
// the host-side clock), and the runner's stream's attributes (an access-policy window makes
// later candidates' accesses persisting). The stack-size limit is left out: the driver raises it
// by itself for a kernel that needs more. A value that cannot be read is -1.
StateValues ReadCudaState(cudaStream_t stream) {
  StateValues v;
  int device = -1;
  if (cudaGetDevice(&device) != cudaSuccess) device = -1;
  v.emplace_back("the current device", device);
  const std::pair<const char*, cudaLimit> limits[] = {
      {"the printf FIFO size limit", cudaLimitPrintfFifoSize},
      {"the malloc heap size limit", cudaLimitMallocHeapSize},
      {"the device runtime's pending launch limit", cudaLimitDevRuntimePendingLaunchCount},
      {"the L2 fetch granularity limit", cudaLimitMaxL2FetchGranularity},
      {"the persisting L2 cache size limit", cudaLimitPersistingL2CacheSize}};
  for (const auto& [name, limit] : limits) {
    size_t value = 0;
    v.emplace_back(name, cudaDeviceGetLimit(&value, limit) == cudaSuccess ? static_cast<int64_t>(value) : -1);
  }
  cudaFuncCache cache = cudaFuncCachePreferNone;
  v.emplace_back("the cache preference", cudaDeviceGetCacheConfig(&cache) == cudaSuccess ? cache : -1);
  unsigned flags = 0;
  v.emplace_back("the device flags", cudaGetDeviceFlags(&flags) == cudaSuccess ? flags : -1);
  cudaStreamAttrValue attr{};
  v.emplace_back("the runner stream's access-policy window (bytes)",
                 cudaStreamGetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &attr) == cudaSuccess
                     ? static_cast<int64_t>(attr.accessPolicyWindow.num_bytes)
                     : -1);
  attr = {};
  v.emplace_back("the runner stream's synchronization policy",
                 cudaStreamGetAttribute(stream, cudaStreamAttributeSynchronizationPolicy, &attr) == cudaSuccess
                     ? static_cast<int64_t>(attr.syncPolicy)
                     : -1);
  (void)cudaGetLastError();  // a read that failed leaves nothing for the next request to find
  return v;
}

class NullReporter : public PhaseReporter {
 public:
  void Phase(const std::string&, const std::string&) override {}
};

class CudaSession : public WorkerSession {
 public:
  void Open(const RunRequest& first) override {
    NullReporter quiet;
    CudaWorker opener(first, quiet, device_);  // holds the GPU lock until Open returns
    if (!opener.OpenDeviceOnly()) return;      // the first Run tries again and reports why
    // Whatever CUPTI and the runtime start lazily (activity buffers, their threads) starts now,
    // so that the supervisor's count of threads after a request sees only the candidate's.
    auto probe = DeviceBuffer::Allocate(1 << 20);
    if (probe.ok()) {
      cudaMemsetAsync(probe->get(), 0, 1 << 20, device_.stream->get());
      cudaStreamSynchronize(device_.stream->get());
      if (device_.tracer) (void)device_.tracer->Collect();
    }
    // The persisting-L2 set-aside is the device's, not the context's: an earlier process (a
    // candidate's runner among them) may have left it set, and every evaluation resets it to none
    // (CudaWorker::ResetL2State). The state read below is the one an evaluation starts from.
    ResetPersistingL2Limit();
    size_t total = 0;
    if (cudaMemGetInfo(&free_at_open_, &total) != cudaSuccess) free_at_open_ = 0;
    state_at_open_ = ReadCudaState(device_.stream->get());
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
    // Without the state (and free memory) read before the first candidate ran, nothing it
    // changed could be seen: that happens when Open could not open the device and the first
    // request did.
    if (state_at_open_.empty() || !device_.stream)
      return "its CUDA state was not read before its first request (the device opened late)";
    if (std::string changed = FirstChange(state_at_open_, ReadCudaState(device_.stream->get())); !changed.empty())
      return "the candidate left the CUDA state changed: " + changed;
    return "";
  }

 private:
  CudaDevice device_;
  size_t free_at_open_ = 0;
  StateValues state_at_open_;  // ReadCudaState after Open (empty: Open did not open the device)
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
