// The cuda backend of the worker: state shared by its setup (worker_cuda.cc), correctness
// (correctness_cuda.cc), timing (timing_cuda.cc) and profiling (profile_cuda.cc) parts. Internal
// to the runner.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "runner/cuda_support.h"
#include "runner/cupti_counters.h"
#include "runner/cupti_trace.h"
#include "runner/device_kernels.h"
#include "runner/kernel_object.h"
#include "runner/nvml.h"
#include "runner/worker.h"

namespace kpilot {

// Bytes of canary on each side of every candidate output.
inline constexpr size_t kCanaryBytes = 4096;
inline constexpr unsigned char kCanaryByte = 0xA5;
// Kernel launches a profile-only run keeps counters for (a call of a thousand tiny launches fits).
inline constexpr size_t kMaxCounterRanges = 2048;

// The tensors of one call: device buffers plus the descriptors that point into them.
struct DeviceTensors {
  std::vector<DeviceBuffer> buffers;
  std::vector<kpilot_tensor> tensors;
  bool guarded = false;  // outputs with canaries: tensors[i].data = buffers[i] + kCanaryBytes
};

// What the cuda worker keeps from one request to the next when it serves many
// (kpilot-runner --serve): the context on `device`, the stream every call runs on, the CUPTI
// trace of that stream and NVML. One request at a time; never shared between threads.
struct CudaDevice {
  int device = -1;  // the request's device number; -1: not opened yet
  int ordinal = 0;  // its CUDA ordinal in this process (the only one visible)
  cudaDeviceProp prop{};
  std::optional<CudaStream> stream;
  std::unique_ptr<CuptiTracer> tracer;
  uint32_t stream_id = 0;
  std::unique_ptr<Nvml> nvml;
  int nvml_index = -1;
  nlohmann::json gpu = nlohmann::json::object();  // details["gpu"]
  std::vector<std::string> warnings;              // from opening it (no NVML, no CUPTI): in every result
};

class CudaWorker {
 public:
  // `device` is opened by the first request that needs it and reused by later ones.
  CudaWorker(const RunRequest& request, PhaseReporter& reporter, CudaDevice& device);
  ~CudaWorker();  // releases the GPU lock
  CudaWorker(const CudaWorker&) = delete;
  CudaWorker& operator=(const CudaWorker&) = delete;
  RunResult Run();
  // Opens the device now, under the GPU lock as a request would (for CudaSession::Open under
  // kpilot-runner --serve; the lock is held until this worker is destroyed); false when it
  // cannot be used.
  bool OpenDeviceOnly();
  // Seconds since construction at the end of each step (context, checks, timing, counters …):
  // where a run's wall time goes (details["timeline_s"]).
  void Stamp(const std::string& step);
  const nlohmann::json& timeline() const { return timeline_; }

 private:
  // Each returns false when the run's outcome is decided (result_ filled in).
  bool Setup();
  // Creates the context, the stream, NVML and the CUPTI trace on req_.device; false (result_
  // finished) when the device cannot be used.
  bool OpenDevice();
  bool Calibrate();  // calibrate_only requests: every ceiling, into details["calibration"]
  // profile_only requests: the candidate alone, once per workload, under in-process counters
  // when the request names any (details["counters"]), else for an outside profiler (ncu).
  void ProfileCandidate();
  // The ceilings every evaluation needs (DRAM copy bandwidth, FFMA rate) into result_.calibration;
  // false (result_ finished) when the GPU fails.
  bool MeasureBasicCalibration(const cudaDeviceProp& prop);
  bool CheckWorkload(const RunWorkload& w);
  bool TimeWorkload(const RunWorkload& w);
  bool MeasureEnergy(const RunWorkload& w, TimingRecord* t);
  // Timing's guards (timing_cuda.cc): `in` refilled with the inputs of `seed`, synchronized; the
  // persisting-L2 limit, the stream's access-policy window and persisting lines reset (each reset
  // of something the candidate left set counts in `resets`); one timed call's output compared with
  // the reference's on the same inputs.
  bool RefillInputs(const RunWorkload& w, uint64_t seed, DeviceTensors* in);
  bool ResetL2State(int* resets);
  bool AuditTimedCall(const RunWorkload& w, int iteration, const DeviceTensors& in, const DeviceTensors& cand_out,
                      const DeviceTensors& expected);
  // sweep_objects requests (sweep_cuda.cc): each object checked and timed as the candidate in turn,
  // results in details["sweep"].
  RunResult RunSweep();

  // Inputs for `seed`, generated on the device.
  Result<DeviceTensors> MakeInputs(const RunWorkload& w, uint64_t seed);
  // Outputs: fresh allocations, poisoned, with canaries when `guarded`.
  Result<DeviceTensors> MakeOutputs(const RunWorkload& w, bool guarded);
  std::vector<kpilot_scalar> Scalars(const RunWorkload& w) const;
  // Calls `fn`, then synchronizes the device. A non-zero status or a CUDA error is reported
  // through `error` (empty when fine).
  void Call(kpilot_launch_fn fn, const DeviceTensors& in, const DeviceTensors& out,
            const std::vector<kpilot_scalar>& scalars, std::string* error);
  // Library names the candidate brought into the process (dynamic imports and later dlopen).
  std::vector<std::string> LibrariesLoaded() const;
  // Marks the run finished with `status`; returns false for the callers' convenience.
  bool Finish(const std::string& status, const std::string& message);
  void Mark(const std::string& what);  // a timestamped marker for the supervisor's clock

  const RunRequest& req_;
  PhaseReporter& report_;
  RunResult result_;
  CudaDevice& dev_;
  // Bound to dev_'s members, under the names the checks and timing use.
  std::optional<CudaStream>& stream_;
  std::unique_ptr<CuptiTracer>& tracer_;
  uint32_t& stream_id_;
  std::unique_ptr<Nvml>& nvml_;
  int& nvml_index_;
  int lock_fd_ = -1;  // the per-GPU timing lock, held while this request runs
  std::optional<KernelObject> reference_, candidate_, baseline_;
  std::set<std::string> libraries_before_;
  int64_t l2_bytes_ = 0;
  int sm_count_ = 0;
  std::vector<std::string> library_use_;
  nlohmann::json trace_json_ = nlohmann::json::array();
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  nlohmann::json timeline_ = nlohmann::json::object();
};

// Removes the runner's own cudaDeviceSynchronize after a call (Call ends with one) from the
// call's trace: the latest "context" synchronization. Whatever the candidate synchronized itself
// stays, so the trace's syncs are the candidate's alone.
void DropRunnerSync(LaunchTrace* trace);

// One request on `device` (opened by the first): RunCudaWorker with state kept across requests.
RunResult RunCudaRequest(const RunRequest& request, PhaseReporter& reporter, CudaDevice& device);

// "" while the context works; else the sticky error (an illegal address, a trap, …) that now
// fails every CUDA call of this process.
std::string StickyError();

// Sets the device's persisting-L2 set-aside to none and resets lines already marked persisting
// (timing_cuda.cc); true when a set-aside was in place. The set-aside is the device's: it outlives
// the process that set it.
bool ResetPersistingL2Limit();

// Shared-object names that mean a vendor library is in use.
bool IsVendorLibrary(const std::string& name);

}  // namespace kpilot
