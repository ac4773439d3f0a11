// A small Gaussian-process model of a run's rewards over a param space, used to rank candidate
// drafts before any of them is compiled. Pure arithmetic: no I/O, no randomness.
//
// Inputs are coordinates in [0, 1]^D (ParamSpace::Coordinates: each param's value index scaled
// to its declared range) and targets in log speedup. Targets are standardized (mean 0, sd 1)
// before fitting, so the constants below are unitless. The kernel mixes two parts:
//   additive: the mean over params of exp(−Δd² / 2ℓa²) — each param's own effect, which carries
//             what was learnt about one param to configs that differ in the others (GEMM-like
//             spaces are mostly additive in log time: tile reuse, register tile, vector width);
//   product:  exp(−|Δ|² / 2ℓp²) — locality, for interactions (spills at TM·TN, shared memory
//             limits) that no single param explains.
// Docs/search.md gives the evidence behind each constant.
#pragma once

#include <cstddef>
#include <vector>

namespace kpilot {

struct SurrogateConfig {
  double additive_length = 0.4;  // ℓa, in coordinate units (a 4-value param steps by 1/3)
  double product_length = 0.5;   // ℓp
  double product_weight = 0.5;   // kernel = (1 − w)·additive + w·product
  double noise = 0.01;           // nugget on standardized targets (timing noise and ruggedness)
  size_t max_points = 256;       // the newest points kept; the fit is O(n³)
  // Hyperparameters fitted by Fit: every combination of these lists is tried and the one with
  // the highest log marginal likelihood kept (a grid, so the fit is deterministic and cheap:
  // O(grid · n³)). An empty list keeps the value above. Fitting starts at `fit_min_points`
  // points; fewer say too little about lengthscales.
  std::vector<double> additive_length_grid;
  std::vector<double> product_weight_grid;
  std::vector<double> noise_grid;
  size_t fit_min_points = 8;
};

class Surrogate {
 public:
  explicit Surrogate(SurrogateConfig config = {}) : config_(config) {}

  // Fits to points x (all of one dimension) with targets y (same length), choosing the
  // hyperparameters on the config's grids. With no points the model predicts mean 0, sd 1
  // everywhere (in standardized units: see Predict).
  void Fit(std::vector<std::vector<double>> x, std::vector<double> y);

  // The hyperparameters in use (the config's, with the fitted ones replaced).
  const SurrogateConfig& config() const { return config_; }
  // log p(y | x) of the standardized targets under the current hyperparameters.
  double log_likelihood() const { return log_likelihood_; }

  struct Prediction {
    double mean = 0;  // log speedup
    double sd = 0;    // log speedup
  };
  Prediction Predict(const std::vector<double>& x) const;

  // Adds a point and refits: the "kriging believer" step that lets a batch's later drafts
  // account for the earlier ones as if they had come back as predicted.
  void Add(const std::vector<double>& x, double y);

  size_t size() const { return x_.size(); }

 private:
  double Kernel(const std::vector<double>& a, const std::vector<double>& b) const;
  void Refit();

  SurrogateConfig config_;
  std::vector<std::vector<double>> x_;
  std::vector<double> y_;  // raw targets
  double y_mean_ = 0, y_sd_ = 1;
  std::vector<double> chol_;   // lower Cholesky factor of K + noise·I, row-major n×n
  std::vector<double> alpha_;  // (K + noise·I)⁻¹ · standardized y
  double log_likelihood_ = 0;
};

// Expected improvement of a prediction over `best` (all in log speedup): E[max(0, f − best)]
// for f ~ N(mean, sd²). With sd 0 it is max(0, mean − best).
double ExpectedImprovement(const Surrogate::Prediction& p, double best);

}  // namespace kpilot
