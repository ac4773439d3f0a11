// Hardware counters read in-process through CUPTI's range profiler — the same metrics (and names)
// Nsight Compute collects, without starting ncu. kpilot profile uses it to avoid ncu's fixed
// start-up cost (seconds per run); ncu stays available as the reference path.
//
// One session profiles the kernels launched between Start() and Stop() on the current CUDA
// context: auto ranges (one range per kernel launch) with kernel replay (CUPTI replays each kernel
// as many times as the metrics need passes, saving and restoring the memory it touches), so a
// call must be safe to run once and its kernels are then replayed by CUPTI itself.
//
// Internal to the runner. libcupti is loaded with dlopen (CuptiLibraryPaths) and stays loaded.
// CUPTI's profiler is process-wide: one session at a time, and not under ncu (which holds it).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace kpilot {

struct RangeCounters {
  std::string range;                       // CUPTI's range name (the kernel's name in auto-range mode)
  std::map<std::string, double> metrics;   // metric name → value (ncu's units: ns, %, bytes, …)
};

class CuptiCounterSession {
 public:
  // Prepares a session for `metrics` on `device`, whose context must be current on the calling
  // thread. Metrics the chip does not know are dropped and listed in unsupported(); Unavailable
  // when none remains, when libcupti or its profiler entry points are missing, when kpilot was
  // built without the CUPTI headers, or when CUPTI refuses (no permission to read counters:
  // CUPTI_ERROR_INSUFFICIENT_PRIVILEGES; another profiler holds the device).
  // `max_ranges`: kernel launches kept (later ones are dropped and counted).
  static Result<std::unique_ptr<CuptiCounterSession>> Create(int device, const std::vector<std::string>& metrics,
                                                             size_t max_ranges);

  Status Start();
  // Stops, decodes and evaluates every range in launch order. Call after the work has finished
  // (synchronize the device first).
  Result<std::vector<RangeCounters>> Stop();

  const std::vector<std::string>& unsupported() const { return unsupported_; }
  const std::string& chip() const { return chip_; }
  size_t passes() const { return passes_; }
  size_t dropped_ranges() const { return dropped_; }

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
};

}  // namespace kpilot
