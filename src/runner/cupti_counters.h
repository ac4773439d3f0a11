// Hardware counters read in-process through CUPTI's range profiler — the same metrics (and names)
// Nsight Compute collects, without starting ncu. kpilot profile uses it to avoid ncu's fixed
// start-up cost (seconds per run); ncu stays available as the reference path.
//
// One session profiles the kernels launched between Start() and EndPass() on the current CUDA
// context, with auto ranges (one range per kernel launch). Metrics that need several passes are
// collected by replay:
//   - user replay (the default): the caller repeats the same work once per pass, Start() … EndPass()
//     until EndPass() says every pass is in. No device memory is saved or restored, so a call must
//     launch the same kernels each time (a pure function of its inputs does);
//   - kernel replay: one pass; CUPTI replays each kernel itself, saving and restoring the device
//     memory around it (seconds when the process holds large buffers).
//
// Internal to the runner. libcupti is loaded with dlopen (CuptiLibraryPaths) and stays loaded.
// CUPTI's profiler is process-wide: one session at a time, and not under ncu (which holds it).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace kpilot {

struct RangeCounters {
  std::string range;                      // CUPTI's range name (the kernel's name in auto-range mode)
  std::map<std::string, double> metrics;  // metric name → value (ncu's units: ns, %, bytes, …)
};

enum class CounterReplay { kUser, kKernel };

class CuptiCounterSession {
 public:
  // Prepares a session for `metrics` on `device`, whose context must be current on the calling
  // thread. Metrics the chip does not know are dropped and listed in unsupported(); Unavailable
  // when none remains, when libcupti or its profiler entry points are missing, when kpilot was
  // built without the CUPTI headers, or when CUPTI refuses (no permission to read counters:
  // CUPTI_ERROR_INSUFFICIENT_PRIVILEGES; another profiler holds the device).
  // `max_ranges`: kernel launches kept per pass (later ones are dropped and counted); the counter
  // data's set-up time grows with it.
  static Result<std::unique_ptr<CuptiCounterSession>> Create(int device, const std::vector<std::string>& metrics,
                                                             size_t max_ranges, CounterReplay replay);

  // One pass: Start(), the work, then EndPass(), which is true once every pass the metrics need has
  // been submitted (always after one pass with kernel replay). Synchronize the device before
  // EndPass().
  Status Start();
  Result<bool> EndPass();
  // Decodes and evaluates every range, in launch order. After the last pass.
  Result<std::vector<RangeCounters>> Results();

  CounterReplay replay() const { return replay_; }
  const std::vector<std::string>& unsupported() const { return unsupported_; }
  const std::string& chip() const { return chip_; }
  size_t passes() const { return passes_; }
  size_t dropped_ranges() const { return dropped_; }
  // Seconds each step of Create took (loading libcupti, initializing, host objects, config …).
  const std::vector<std::pair<std::string, double>>& setup_steps() const { return steps_; }

  ~CuptiCounterSession();
  CuptiCounterSession(const CuptiCounterSession&) = delete;
  CuptiCounterSession& operator=(const CuptiCounterSession&) = delete;

 private:
  CuptiCounterSession() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::vector<std::string> unsupported_;
  std::string chip_;
  size_t passes_ = 0;
  size_t dropped_ = 0;
  CounterReplay replay_ = CounterReplay::kUser;
  std::vector<std::pair<std::string, double>> steps_;
};

}  // namespace kpilot
