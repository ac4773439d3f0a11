// The worker side of kpilot-runner: what runs inside the sandbox, loads objects and calls them.
#pragma once

#include <memory>
#include <string>

#include "runner/protocol.h"

namespace kpilot {

// Where a sandboxed cuda worker finds the per-GPU timing lock file, opened by the supervisor
// before the sandbox hid its folder (LOCK_DIR/kpilot-gpu-N.lock).
inline constexpr int kGpuLockFd = 519;

// Where the worker reports progress; the supervisor keeps the last phase so that a crash can be
// attributed ("killed by signal 11 during correctness, workload 1M, seed 2").
class PhaseReporter {
 public:
  virtual ~PhaseReporter() = default;
  virtual void Phase(const std::string& phase, const std::string& detail) = 0;
};

// The host backend: reference, candidate and baseline are host functions on host memory.
// Runs every workload × seed correctness trial, then interleaved timing. Never throws; a
// kpilot-side problem (unloadable reference, …) is status "error".
RunResult RunHostWorker(const RunRequest& request, PhaseReporter& reporter);

// The cuda backend: device buffers, inputs generated and outputs compared on the GPU, canaries,
// exploit checks (off-stream work, library use, lowered precision, degenerate outputs, clocks
// that disagree, faster than the measured physical floor), timing and energy. See README.
RunResult RunCudaWorker(const RunRequest& request, PhaseReporter& reporter);

// A worker that serves one request after another in one process (kpilot-runner --serve), so
// that a request costs its checks and timing, not a process, a CUDA context and a CUPTI set-up.
class WorkerSession {
 public:
  virtual ~WorkerSession() = default;
  // Readies what the requests share, from the first one (the cuda backend: context, stream,
  // NVML, CUPTI). A failure is left for Run to report.
  virtual void Open(const RunRequest& first) = 0;
  // One request, as RunHostWorker / RunCudaWorker would run it in a process of its own.
  virtual RunResult Run(const RunRequest& request, PhaseReporter& reporter) = 0;
  // After Run: "" when the process is still fit to serve another request, else why it is not
  // (a poisoned CUDA context, GPU memory the candidate kept). The supervisor's own checks
  // (status, threads, processes, libraries) come on top of these.
  virtual std::string WhyNotAgain() = 0;
};

std::unique_ptr<WorkerSession> MakeHostSession();
std::unique_ptr<WorkerSession> MakeCudaSession();

}  // namespace kpilot
