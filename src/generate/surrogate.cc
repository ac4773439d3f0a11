#include "generate/surrogate.h"

#include <algorithm>
#include <cmath>

namespace kpilot {

double Surrogate::Kernel(const std::vector<double>& a, const std::vector<double>& b) const {
  if (a.empty()) return 1.0;
  const double la2 = 2 * config_.additive_length * config_.additive_length;
  const double lp2 = 2 * config_.product_length * config_.product_length;
  double additive = 0, dist2 = 0;
  for (size_t d = 0; d < a.size(); ++d) {
    const double delta2 = (a[d] - b[d]) * (a[d] - b[d]);
    additive += std::exp(-delta2 / la2);
    dist2 += delta2;
  }
  additive /= static_cast<double>(a.size());
  const double w = config_.product_weight;
  return (1 - w) * additive + w * std::exp(-dist2 / lp2);
}

void Surrogate::Fit(std::vector<std::vector<double>> x, std::vector<double> y) {
  if (x.size() > config_.max_points) {
    const size_t drop = x.size() - config_.max_points;
    x.erase(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(drop));
    y.erase(y.begin(), y.begin() + static_cast<std::ptrdiff_t>(drop));
  }
  x_ = std::move(x);
  y_ = std::move(y);
  if (x_.size() < config_.fit_min_points) {
    Refit();
    return;
  }
  // Grid search on the marginal likelihood; ties keep the earliest combination.
  auto grid = [](const std::vector<double>& g, double v) { return g.empty() ? std::vector<double>{v} : g; };
  const std::vector<double> lengths = grid(config_.additive_length_grid, config_.additive_length);
  const std::vector<double> weights = grid(config_.product_weight_grid, config_.product_weight);
  const std::vector<double> noises = grid(config_.noise_grid, config_.noise);
  SurrogateConfig best = config_;
  double best_ll = -INFINITY;
  for (double l : lengths)
    for (double w : weights)
      for (double nz : noises) {
        config_.additive_length = l;
        config_.product_weight = w;
        config_.noise = nz;
        Refit();
        if (log_likelihood_ > best_ll) best_ll = log_likelihood_, best = config_;
      }
  config_ = best;
  Refit();
}

void Surrogate::Add(const std::vector<double>& x, double y) {
  x_.push_back(x);
  y_.push_back(y);
  Refit();
}

void Surrogate::Refit() {
  const size_t n = x_.size();
  chol_.assign(n * n, 0.0);
  alpha_.assign(n, 0.0);
  y_mean_ = 0;
  y_sd_ = 1;
  if (n == 0) return;
  for (double v : y_) y_mean_ += v;
  y_mean_ /= static_cast<double>(n);
  double var = 0;
  for (double v : y_) var += (v - y_mean_) * (v - y_mean_);
  var /= static_cast<double>(n);
  // One point (or identical targets) says nothing about the spread: keep sd 1 log unit, about
  // the spread of a GEMM space's log speedups, so exploration is not suppressed early.
  y_sd_ = var > 1e-12 ? std::sqrt(var) : 1.0;
  // K + noise·I, then Cholesky in place (it is positive definite: the nugget keeps it so even
  // with repeated points).
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j <= i; ++j) chol_[i * n + j] = Kernel(x_[i], x_[j]) + (i == j ? config_.noise : 0.0);
  for (size_t j = 0; j < n; ++j) {
    double d = chol_[j * n + j];
    for (size_t k = 0; k < j; ++k) d -= chol_[j * n + k] * chol_[j * n + k];
    d = std::sqrt(std::max(d, 1e-12));
    chol_[j * n + j] = d;
    for (size_t i = j + 1; i < n; ++i) {
      double s = chol_[i * n + j];
      for (size_t k = 0; k < j; ++k) s -= chol_[i * n + k] * chol_[j * n + k];
      chol_[i * n + j] = s / d;
    }
  }
  // alpha = L⁻ᵀ L⁻¹ y (standardized).
  for (size_t i = 0; i < n; ++i) {
    double s = (y_[i] - y_mean_) / y_sd_;
    for (size_t k = 0; k < i; ++k) s -= chol_[i * n + k] * alpha_[k];
    alpha_[i] = s / chol_[i * n + i];
  }
  // log p(y) = −½·yᵀ(K + σ²I)⁻¹y − Σ log Lᵢᵢ − n/2·log 2π; the forward solve above is L⁻¹y.
  log_likelihood_ = 0;
  for (size_t i = 0; i < n; ++i)
    log_likelihood_ -= 0.5 * alpha_[i] * alpha_[i] + std::log(chol_[i * n + i]) + 0.5 * std::log(2 * M_PI);
  for (size_t i = n; i-- > 0;) {
    double s = alpha_[i];
    for (size_t k = i + 1; k < n; ++k) s -= chol_[k * n + i] * alpha_[k];
    alpha_[i] = s / chol_[i * n + i];
  }
}

Surrogate::Prediction Surrogate::Predict(const std::vector<double>& x) const {
  const size_t n = x_.size();
  if (n == 0) return {y_mean_, y_sd_};
  std::vector<double> k(n);
  double mean = 0;
  for (size_t i = 0; i < n; ++i) {
    k[i] = Kernel(x, x_[i]);
    mean += k[i] * alpha_[i];
  }
  // var = k(x,x) − |L⁻¹ k|².
  double explained = 0;
  for (size_t i = 0; i < n; ++i) {
    double s = k[i];
    for (size_t j = 0; j < i; ++j) s -= chol_[i * n + j] * k[j];
    k[i] = s / chol_[i * n + i];
    explained += k[i] * k[i];
  }
  const double var = std::max(0.0, Kernel(x, x) - explained);
  return {y_mean_ + y_sd_ * mean, y_sd_ * std::sqrt(var)};
}

double ExpectedImprovement(const Surrogate::Prediction& p, double best) {
  const double gain = p.mean - best;
  if (p.sd <= 1e-12) return std::max(0.0, gain);
  const double z = gain / p.sd;
  const double cdf = 0.5 * std::erfc(-z / std::sqrt(2.0));
  const double pdf = std::exp(-0.5 * z * z) / std::sqrt(2 * M_PI);
  return gain * cdf + p.sd * pdf;
}

}  // namespace kpilot
