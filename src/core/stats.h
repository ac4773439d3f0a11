// Timing statistics used by the runner (its stopping rule) and the harness (verdicts).
// Pure functions over samples; no clocks here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kpilot {

struct Interval {
  double lo = 0;
  double hi = 0;
};

struct SampleSummary {
  size_t n = 0;
  double median = 0;
  double mean = 0;
  double min = 0;
  double max = 0;
  double q1 = 0;       // 25th percentile
  double q3 = 0;       // 75th percentile
  Interval median_ci;  // distribution-free 95% CI of the median (order statistics)
  Interval mean_ci;    // 95% CI of the mean (normal approximation: ± 1.96·sd/√n)
  // Half the CI's width relative to the median: 0.01 means "median ± 1%".
  double RelativeHalfWidth() const;
};

// Linear-interpolated quantile (q in [0,1]) of unsorted samples; 0 for an empty vector.
double Quantile(std::vector<double> samples, double q);
double Median(std::vector<double> samples);

// A distribution-free confidence interval of the median from order statistics: ranks
// n/2 ± z·√n/2 (z = 1.96 for 95%). Needs n ≥ 6 to be narrower than the sample range;
// with fewer samples the interval is [min, max].
Interval MedianConfidenceInterval(std::vector<double> samples, double z = 1.96);

SampleSummary Summarize(const std::vector<double>& samples);

// Paired speedup of `candidate` over `baseline` from interleaved samples (same length, pair i
// taken back to back): the median of baseline[i] / candidate[i] with its 95% CI.
struct PairedRatio {
  size_t n = 0;
  double ratio = 0;
  Interval ci;
};
PairedRatio PairedSpeedup(const std::vector<double>& baseline, const std::vector<double>& candidate);

// The ratio of means mean(baseline) / mean(candidate) with a 95% paired-bootstrap CI (pairs are
// resampled together; deterministic for a seed). What KernelBench-style procedures report.
PairedRatio RatioOfMeans(const std::vector<double>& baseline, const std::vector<double>& candidate,
                         int resamples = 2000, uint64_t seed = 1);

// Geometric mean of positive values; 0 when empty or any value is not positive.
double GeometricMean(const std::vector<double>& values);

}  // namespace kpilot
