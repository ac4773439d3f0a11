// Stage 1 of profiling: the bottleneck class of a kernel against the measured roofline.
#pragma once

#include <optional>
#include <string>

#include "profile/profile.h"

namespace kpilot {

struct RooflineInput {
  double flops = 0;             // the task's formula for the workload (0 = unknown)
  double min_bytes = 0;         // likewise
  double time_ms = 0;           // measured median time of one call
  double dram_bytes_per_s = 0;  // measured ceilings (calibration)
  double peak_flops_per_s = 0;  // the ceiling that applies to this work (FP32, or tensor)
  // Measured by ncu, when profiled (percent of peak, 0–100):
  std::optional<double> sm_throughput_pct;      // sm__throughput.avg.pct_of_peak_sustained_elapsed
  std::optional<double> dram_throughput_pct;    // dram__throughput.avg.pct_of_peak_sustained_elapsed
  std::optional<double> launch_overhead_share;  // share of wall time lost between launches (0–1)
  int kernels_per_call = 1;
};

struct RooflineVerdict {
  Bottleneck analytic = Bottleneck::kUnknown;  // from flops and bytes against the ceilings
  Bottleneck measured = Bottleneck::kUnknown;  // from ncu's throughput percentages
  Bottleneck result = Bottleneck::kUnknown;    // what the tools are selected by
  double arithmetic_intensity = 0;             // flops / min_bytes
  double ridge_point = 0;                      // peak_flops / dram bandwidth
  double floor_ms = 0;                         // max(bytes/bw, flops/peak)
  double achieved_fraction = 0;                // floor_ms / time_ms: share of the ceiling reached
  std::string ceiling;                         // "DRAM bandwidth" | "FP32 peak" | …
  bool disagree = false;                       // analytic and measured classes differ
  std::string explanation;                     // one paragraph, numbers included
};

// Classifies. Launch-bound when launch overhead takes > 20% of the call (KernelPro's trigger);
// latency-bound when both measured throughputs are < 40% of peak (or, without ncu, when the
// achieved fraction of the analytic ceiling is < 10% on a short call); memory- or compute-bound
// by the side of the ridge point (analytic) and by the larger throughput (measured); mixed when
// both measured throughputs are ≥ 60%. On disagreement the analytic class wins for "how far
// could this go" and the explanation says so. Pure.
RooflineVerdict ClassifyRoofline(const RooflineInput& in);

}  // namespace kpilot
