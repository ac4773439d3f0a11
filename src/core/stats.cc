#include "core/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace kpilot {

double SampleSummary::RelativeHalfWidth() const {
  if (median <= 0) return INFINITY;
  return (median_ci.hi - median_ci.lo) / 2.0 / median;
}

double Quantile(std::vector<double> s, double q) {
  if (s.empty()) return 0;
  std::sort(s.begin(), s.end());
  double pos = q * static_cast<double>(s.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, s.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return s[lo] * (1 - frac) + s[hi] * frac;
}

double Median(std::vector<double> s) { return Quantile(std::move(s), 0.5); }

Interval MedianConfidenceInterval(std::vector<double> s, double z) {
  if (s.empty()) return {};
  std::sort(s.begin(), s.end());
  double n = static_cast<double>(s.size());
  double half = z * std::sqrt(n) / 2.0;
  // 1-based ranks, clamped to the sample.
  long lo = static_cast<long>(std::floor(n / 2.0 - half));
  long hi = static_cast<long>(std::ceil(n / 2.0 + half)) + 1;
  lo = std::clamp(lo, 1L, static_cast<long>(s.size()));
  hi = std::clamp(hi, 1L, static_cast<long>(s.size()));
  return {s[static_cast<size_t>(lo - 1)], s[static_cast<size_t>(hi - 1)]};
}

SampleSummary Summarize(const std::vector<double>& samples) {
  SampleSummary r;
  r.n = samples.size();
  if (samples.empty()) return r;
  r.median = Median(samples);
  r.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(r.n);
  auto [mn, mx] = std::minmax_element(samples.begin(), samples.end());
  r.min = *mn;
  r.max = *mx;
  r.q1 = Quantile(samples, 0.25);
  r.q3 = Quantile(samples, 0.75);
  r.median_ci = MedianConfidenceInterval(samples);
  double var = 0;
  for (double x : samples) var += (x - r.mean) * (x - r.mean);
  double half =
      r.n > 1 ? 1.96 * std::sqrt(var / static_cast<double>(r.n - 1)) / std::sqrt(static_cast<double>(r.n)) : 0;
  r.mean_ci = {r.mean - half, r.mean + half};
  return r;
}

PairedRatio PairedSpeedup(const std::vector<double>& baseline, const std::vector<double>& candidate) {
  PairedRatio r;
  size_t n = std::min(baseline.size(), candidate.size());
  std::vector<double> ratios;
  ratios.reserve(n);
  for (size_t i = 0; i < n; ++i)
    if (candidate[i] > 0 && baseline[i] > 0) ratios.push_back(baseline[i] / candidate[i]);
  r.n = ratios.size();
  if (ratios.empty()) return r;
  r.ratio = Median(ratios);
  r.ci = MedianConfidenceInterval(ratios);
  return r;
}

PairedRatio RatioOfMeans(const std::vector<double>& baseline, const std::vector<double>& candidate, int resamples,
                         uint64_t seed) {
  PairedRatio r;
  size_t n = std::min(baseline.size(), candidate.size());
  r.n = n;
  if (n == 0) return r;
  auto ratio = [&](const std::vector<size_t>& idx) {
    double b = 0, c = 0;
    for (size_t i : idx) b += baseline[i], c += candidate[i];
    return c > 0 ? b / c : 0.0;
  };
  std::vector<size_t> all(n);
  for (size_t i = 0; i < n; ++i) all[i] = i;
  r.ratio = ratio(all);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, n - 1);
  std::vector<double> boot;
  std::vector<size_t> idx(n);
  for (int k = 0; k < resamples; ++k) {
    for (auto& i : idx) i = pick(rng);
    boot.push_back(ratio(idx));
  }
  r.ci = {Quantile(boot, 0.025), Quantile(boot, 0.975)};
  return r;
}

double GeometricMean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double acc = 0;
  for (double x : v) {
    if (!(x > 0)) return 0;
    acc += std::log(x);
  }
  return std::exp(acc / static_cast<double>(v.size()));
}

}  // namespace kpilot
