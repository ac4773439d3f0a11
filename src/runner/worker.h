// The worker side of kpilot-runner: what runs inside the sandbox, loads objects and calls them.
#pragma once

#include <string>

#include "runner/protocol.h"

namespace kpilot {

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

}  // namespace kpilot
