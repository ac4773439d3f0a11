#include "generate/param_moves.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

namespace kpilot {
namespace {

constexpr int kRandomSamples = 256;  // rejection samples before enumerating
constexpr size_t kEnumerateCap = 1 << 16;

struct Candidate {
  ParamValues cfg;
  std::string kind;  // "step", "jump", "pair move", "crossover with the best", …
  bool local;        // generated from the parent (not a restart or a whole-space candidate)
};

// The candidate moves of one call, in a fixed order (ties in the ranking go to the earliest).
class Pool {
 public:
  Pool(ParamSpace& space, const std::set<ParamValues>& taken) : space_(space), taken_(taken) {}

  void Offer(ParamValues cfg, std::string kind, bool local = true) {
    if (taken_.count(cfg) || !seen_.insert(cfg).second || !space_.Valid(cfg)) return;
    list_.push_back({std::move(cfg), std::move(kind), local});
  }
  bool Untried(const ParamValues& cfg) const { return !taken_.count(cfg) && !seen_.count(cfg); }
  std::vector<Candidate>& list() { return list_; }

 private:
  ParamSpace& space_;
  const std::set<ParamValues>& taken_;
  std::set<ParamValues> seen_;
  std::vector<Candidate> list_;
};

struct Scored {
  ParamValues cfg;
  std::vector<double> x;
  double y;  // log speedup
};

class Explorer {
 public:
  Explorer(ParamSpace& space, const ParamValues& parent, const std::vector<EvaluatedParams>& evaluated,
           std::mt19937_64& rng, const std::set<ParamValues>& taken, const ExploreConfig& config,
           const std::vector<ParamValues>* whole_space, const FootprintSource* footprints)
      : space_(space),
        parent_(parent),
        rng_(rng),
        config_(config),
        whole_space_(whole_space),
        source_(config.footprint_top_k > 0 ? footprints : nullptr),
        pool_(space, taken),
        model_(config.surrogate),
        footprint_model_(config.surrogate) {
    Learn(evaluated);
    LearnFootprints();
  }

  std::vector<ExploreDraft> Pick(size_t k) {
    Generate();
    std::vector<Candidate>& c = pool_.list();
    std::vector<std::vector<double>> xs;
    for (const auto& cand : c) xs.push_back(space_.Coordinates(cand.cfg));
    std::vector<char> used(c.size(), 0);
    std::vector<ExploreDraft> out;
    while (out.size() < k) {
      // Every local_every-th pick stays near the parent (when the parent has untried moves).
      const bool local = config_.local_every > 0 && out.size() % config_.local_every == config_.local_every - 1;
      long best = -1;
      for (int pass = local ? 0 : 1; pass < 2 && best < 0; ++pass) {
        double best_score = 0;
        for (size_t i = 0; i < c.size(); ++i) {
          if (used[i] || (pass == 0 && !c[i].local)) continue;
          const double score = Score(model_.Predict(xs[i]));
          if (best < 0 || score > best_score) best = static_cast<long>(i), best_score = score;
        }
      }
      if (best < 0) break;
      if (source_ && !local) {
        if (auto chosen = PickByFootprint(c, xs, used)) {
          const size_t i = *chosen;
          used[i] = 1;
          const std::vector<double> fx = WithFootprint(xs[i], *footprints_.at(i));
          const Surrogate::Prediction pred = footprint_model_.Predict(fx);
          model_.Add(xs[i], pred.mean);
          footprint_model_.Add(fx, pred.mean);
          out.push_back({c[i].cfg, Summary(c[i], pred) + "; compiled first: " + Describe(*footprints_.at(i))});
          continue;
        }
        if (used[best]) continue;  // it does not compile: rank again
      }
      used[best] = 1;
      const Surrogate::Prediction pred = model_.Predict(xs[best]);
      model_.Add(xs[best], pred.mean);
      if (source_) {
        // Believed in the footprint model too, where its footprint is known (fetched already,
        // or asked now).
        const auto cached = footprints_.find(static_cast<size_t>(best));
        if (auto f = cached != footprints_.end() ? cached->second : (*source_)({c[best].cfg}).front(); f && f->compiles)
          footprint_model_.Add(WithFootprint(xs[best], *f), pred.mean);
      }
      out.push_back({c[best].cfg, Summary(c[best], pred)});
    }
    return out;
  }

 private:
  // ExploreConfig::footprint_top_k: the footprint_top_k unused candidates the params-only model
  // ranks highest are compiled (their footprints fetched), and the one with the highest score
  // under the footprint model is chosen. Candidates that do not compile are marked used (the
  // model does not draft them). nullopt when none of them has a footprint.
  std::optional<size_t> PickByFootprint(const std::vector<Candidate>& c, const std::vector<std::vector<double>>& xs,
                                        std::vector<char>& used) {
    std::vector<std::pair<double, size_t>> ranked;
    for (size_t i = 0; i < c.size(); ++i)
      if (!used[i]) ranked.push_back({Score(model_.Predict(xs[i])), i});
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    if (ranked.size() > config_.footprint_top_k) ranked.resize(config_.footprint_top_k);
    std::vector<size_t> ask;
    for (const auto& [score, i] : ranked)
      if (!footprints_.count(i)) ask.push_back(i);
    if (!ask.empty()) {
      std::vector<ParamValues> cfgs;
      for (size_t i : ask) cfgs.push_back(c[i].cfg);
      auto got = (*source_)(cfgs);
      for (size_t n = 0; n < ask.size(); ++n) footprints_[ask[n]] = n < got.size() ? got[n] : std::nullopt;
    }
    std::optional<size_t> best;
    double best_score = 0;
    for (const auto& [score, i] : ranked) {
      const auto& f = footprints_.at(i);
      if (!f) continue;  // unknown
      if (!f->compiles) {
        used[i] = 1;
        continue;
      }
      const double s = Score(footprint_model_.Predict(WithFootprint(xs[i], *f)));
      if (!best || s > best_score) best = i, best_score = s;
    }
    return best;
  }

  static std::vector<double> WithFootprint(std::vector<double> x, const Footprint& f) {
    const std::vector<double> features = FootprintFeatures(f);
    x.insert(x.end(), features.begin(), features.end());
    return x;
  }

  // For summaries: "128 registers, no spills, 16.3 KiB shared".
  static std::string Describe(const Footprint& f) {
    char out[128];
    std::snprintf(out, sizeof out, "%d registers, %s, %.1f KiB shared", f.registers,
                  f.spill_bytes == 0 ? "no spills" : (std::to_string(f.spill_bytes) + " spill bytes").c_str(),
                  static_cast<double>(f.shared_bytes) / 1024);
    return out;
  }

  // Fits the footprint model to the passed configs whose footprint is known; with fewer than two
  // of them the footprints stay unused this call.
  void LearnFootprints() {
    if (!source_) return;
    std::vector<ParamValues> cfgs;
    for (const auto& s : scored_) cfgs.push_back(s.cfg);
    auto got = cfgs.empty() ? std::vector<std::optional<Footprint>>{} : (*source_)(cfgs);
    std::vector<std::vector<double>> xs;
    std::vector<double> ys;
    for (size_t n = 0; n < scored_.size() && n < got.size(); ++n) {
      if (!got[n] || !got[n]->compiles) continue;
      xs.push_back(WithFootprint(scored_[n].x, *got[n]));
      ys.push_back(scored_[n].y);
    }
    if (xs.size() < 2) {
      source_ = nullptr;
      return;
    }
    footprint_model_.Fit(std::move(xs), std::move(ys));
  }

  double Score(const Surrogate::Prediction& p) const {
    if (config_.acquisition == Acquisition::kUpperBound) return p.mean + config_.kappa * p.sd;
    return ExpectedImprovement(p, best_y_);
  }

  // Fits the model to every evaluated config whose values are all declared and that passed;
  // failures join only with impute_failures, as the worst passed result (low enough to steer
  // away, without a −2.3 cliff that would bend the whole fit around it).
  void Learn(const std::vector<EvaluatedParams>& evaluated) {
    std::vector<std::vector<double>> xs;
    std::vector<double> ys;
    std::vector<std::vector<double>> failed;
    for (const auto& e : evaluated) {
      std::vector<double> x = space_.Coordinates(e.params);
      if (x.empty() && !space_.params().empty()) continue;
      if (!e.passed || e.speedup <= 0) {
        if (config_.impute_failures) failed.push_back(std::move(x));
        continue;
      }
      const double y = std::log(e.speedup);
      scored_.push_back({e.params, x, y});
      xs.push_back(std::move(x));
      ys.push_back(y);
    }
    if (config_.impute_failures) {
      // With nothing passed the failures are all there is: 0, the parent's log speedup.
      const double worst = ys.empty() ? 0.0 : *std::min_element(ys.begin(), ys.end());
      for (auto& x : failed) {
        xs.push_back(std::move(x));
        ys.push_back(worst);
      }
    }
    std::stable_sort(scored_.begin(), scored_.end(), [](const Scored& a, const Scored& b) { return a.y > b.y; });
    // With nothing passed yet EI has no incumbent: any predicted gain over the parent's 0 counts.
    best_y_ = scored_.empty() ? 0.0 : scored_.front().y;
    model_.Fit(std::move(xs), std::move(ys));
  }

  void Generate() {
    AxisMoves();
    PairMoves();
    Crossovers();
    Differentials();
    if (whole_space_) {
      WholeSpace();
      return;
    }
    for (size_t i = 0; i < config_.random_candidates; ++i) {
      ParamValues cfg;
      for (const auto& p : space_.params()) cfg[p.name] = p.values[Below(rng_, p.values.size())];
      pool_.Offer(std::move(cfg), "restart", false);
    }
  }

  // Every untried config of the enumerated space; a seeded sample of max_scored when more are
  // left (the scoring is O(pool · n²)).
  void WholeSpace() {
    std::vector<const ParamValues*> left;
    for (const auto& cfg : *whole_space_)
      if (pool_.Untried(cfg)) left.push_back(&cfg);
    const size_t keep = std::min(left.size(), config_.max_scored);
    if (keep < left.size()) {
      for (size_t n = 0; n < keep; ++n) std::swap(left[n], left[n + Below(rng_, left.size() - n)]);
      left.resize(keep);
      std::sort(left.begin(), left.end(), [](const ParamValues* a, const ParamValues* b) { return *a < *b; });
    }
    for (const ParamValues* cfg : left) pool_.Offer(*cfg, "model pick", false);
  }

  void AxisMoves() {
    const auto& ps = space_.params();
    for (size_t i = 0; i < ps.size(); ++i) {
      const int at = space_.IndexOf(i, parent_);
      for (size_t j = 0; j < ps[i].values.size(); ++j) {
        if (static_cast<int>(j) == at) continue;
        ParamValues cfg = parent_;
        cfg[ps[i].name] = ps[i].values[j];
        pool_.Offer(std::move(cfg), at >= 0 && std::abs(static_cast<int>(j) - at) == 1 ? "step" : "jump");
      }
    }
  }

  void PairMoves() {
    const auto& ps = space_.params();
    for (size_t a = 0; a < ps.size(); ++a) {
      for (size_t b = a + 1; b < ps.size(); ++b) {
        std::vector<std::pair<size_t, size_t>> combos;
        const int at_a = space_.IndexOf(a, parent_), at_b = space_.IndexOf(b, parent_);
        for (size_t i = 0; i < ps[a].values.size(); ++i)
          for (size_t j = 0; j < ps[b].values.size(); ++j)
            if (static_cast<int>(i) != at_a && static_cast<int>(j) != at_b) combos.push_back({i, j});
        // Many values per param: a seeded sample (partial Fisher–Yates) keeps the pool small.
        const size_t keep = std::min(combos.size(), config_.pair_cap);
        for (size_t n = 0; n < keep; ++n) {
          std::swap(combos[n], combos[n + Below(rng_, combos.size() - n)]);
          ParamValues cfg = parent_;
          cfg[ps[a].name] = ps[a].values[combos[n].first];
          cfg[ps[b].name] = ps[b].values[combos[n].second];
          pool_.Offer(std::move(cfg), "pair move");
        }
      }
    }
  }

  void Crossovers() {
    const size_t elites = std::min(config_.elites, scored_.size());
    for (size_t e = 0; e < elites; ++e) {
      const std::string kind =
          e == 0 ? "crossover with the best so far" : "crossover with the #" + std::to_string(e + 1) + " so far";
      for (size_t n = 0; n < config_.crossovers_per_elite; ++n) {
        ParamValues cfg = parent_;
        for (const auto& p : space_.params())
          if (rng_() & 1) cfg[p.name] = scored_[e].cfg.at(p.name);
        pool_.Offer(std::move(cfg), kind);
      }
    }
  }

  void Differentials() {
    const size_t elites = std::min(config_.elites, scored_.size());
    if (elites == 0 || scored_.size() < 2) return;
    const auto& ps = space_.params();
    for (size_t n = 0; n < config_.differentials; ++n) {
      const Scored& to = scored_[Below(rng_, elites)];
      const Scored& from = scored_[Below(rng_, scored_.size())];
      ParamValues cfg = parent_;
      const size_t forced = Below(rng_, ps.size());  // at least one param takes the mutant's value
      for (size_t i = 0; i < ps.size(); ++i) {
        const bool cross = Unit(rng_) < config_.differential_crossover;
        if (!cross && i != forced) continue;
        const int at = std::max(0, space_.IndexOf(i, parent_));
        const double delta = space_.IndexOf(i, to.cfg) - space_.IndexOf(i, from.cfg);
        const long m = std::lround(at + config_.differential_weight * delta);
        const long last = static_cast<long>(ps[i].values.size()) - 1;
        cfg[ps[i].name] = ps[i].values[static_cast<size_t>(std::clamp(m, 0L, last))];
      }
      pool_.Offer(std::move(cfg), "differential step");
    }
  }

  std::string Changes(const ParamValues& cfg) const {
    std::string out;
    int listed = 0, more = 0;
    for (const auto& p : space_.params()) {
      auto from = parent_.find(p.name);
      const std::string& to = cfg.at(p.name);
      if (from != parent_.end() && from->second == to) continue;
      if (listed == 3) {
        ++more;
        continue;
      }
      out += (listed++ ? ", " : "") + p.name + " " + (from == parent_.end() ? "?" : from->second) + "\u2192" + to;
    }
    if (more) out += " and " + std::to_string(more) + " more";
    return out;
  }

  std::string Summary(const Candidate& c, const Surrogate::Prediction& p) const {
    char expect[96];
    std::snprintf(expect, sizeof expect, "model expects %.3gx \u00b1%.0f%%", std::exp(p.mean),
                  100 * (std::exp(p.sd) - 1));
    const std::string head = c.kind == "restart" ? "restart at " + RenderParams(c.cfg) : Changes(c.cfg) + ": " + c.kind;
    if (config_.acquisition == Acquisition::kExpectedImprovement && model_.size() > 0) {
      char gain[128];
      std::snprintf(gain, sizeof gain, "model expects %.3gx \u00b1%.0f%%, expected gain %.1f%%", std::exp(p.mean),
                    100 * (std::exp(p.sd) - 1), 100 * (std::exp(ExpectedImprovement(p, best_y_)) - 1));
      return head + "; " + gain;
    }
    return head + (model_.size() > 0 ? std::string("; ") + expect : std::string());
  }

  ParamSpace& space_;
  const ParamValues& parent_;
  std::mt19937_64& rng_;
  const ExploreConfig& config_;
  const std::vector<ParamValues>* whole_space_;  // every valid config, or null
  const FootprintSource* source_;                // compile footprints, or null (not used this call)
  Pool pool_;
  Surrogate model_;
  Surrogate footprint_model_;                              // coordinates + footprint features
  std::map<size_t, std::optional<Footprint>> footprints_;  // by pool index, as fetched
  std::vector<Scored> scored_;                             // passed configs, best first
  double best_y_ = 0;                                      // the best passed log speedup (EI's incumbent)
};

// The design's candidates from the value grid (ExploreConfig::design_from_grid): a uniformly
// random grid point, moved to the nearest valid untried config. Inactive (the caller samples
// valid configs instead) when off or when the grid has more than kEnumerateCap points. The valid
// configs are `whole_space` when the caller has enumerated it already, else enumerated here.
class GridProjection {
 public:
  GridProjection(ParamSpace& space, const ExploreConfig& config, const std::vector<ParamValues>* whole_space)
      : space_(space) {
    if (!config.design_from_grid) return;
    size_t points = 1;
    for (const auto& p : space.params()) {
      if (p.values.empty()) return;
      points *= p.values.size();
      if (points > kEnumerateCap) return;
    }
    if (!whole_space) {
      owned_ = space.Enumerate(kEnumerateCap, [](const ParamValues&) { return true; });
      whole_space = &owned_;
    }
    valid_ = whole_space;
    for (const auto& cfg : *valid_) {
      std::vector<int> at;
      for (size_t i = 0; i < space.params().size(); ++i) at.push_back(space.IndexOf(i, cfg));
      positions_.push_back(std::move(at));
    }
  }

  bool active() const { return valid_ && !valid_->empty(); }

  std::optional<ParamValues> Draw(const std::set<ParamValues>& taken, std::mt19937_64& rng) const {
    const auto& ps = space_.params();
    std::vector<int> target;
    for (const auto& p : ps) target.push_back(static_cast<int>(Below(rng, p.values.size())));
    long best_distance = -1;
    size_t best = 0;
    for (size_t j = 0; j < valid_->size(); ++j) {
      long distance = 0;
      for (size_t i = 0; i < ps.size(); ++i) distance += std::abs(positions_[j][i] - target[i]);
      if ((best_distance < 0 || distance < best_distance) && !taken.count((*valid_)[j]))
        best_distance = distance, best = j;
    }
    if (best_distance < 0) return std::nullopt;
    return (*valid_)[best];
  }

 private:
  ParamSpace& space_;
  std::vector<ParamValues> owned_;                   // the enumeration, when not handed one
  const std::vector<ParamValues>* valid_ = nullptr;  // every valid config, in enumeration order
  std::vector<std::vector<int>> positions_;          // their value positions
};

// The space-filling start (ExploreConfig::initial_design): each pick is, of design_candidates
// random untried configs, the one whose values the taken configs use least.
std::vector<ExploreDraft> DesignPicks(ParamSpace& space, size_t k, std::mt19937_64& rng, std::set<ParamValues>& taken,
                                      const ExploreConfig& config, const std::vector<ParamValues>* whole_space) {
  const auto& ps = space.params();
  std::vector<std::vector<int>> uses(ps.size());
  for (size_t i = 0; i < ps.size(); ++i) uses[i].assign(ps[i].values.size(), 0);
  auto use = [&](const ParamValues& cfg) {
    for (size_t i = 0; i < ps.size(); ++i)
      if (const int at = space.IndexOf(i, cfg); at >= 0) ++uses[i][static_cast<size_t>(at)];
  };
  auto score = [&](const ParamValues& cfg) {
    long s = 0;
    for (size_t i = 0; i < ps.size(); ++i)
      if (const int at = space.IndexOf(i, cfg); at >= 0) s += uses[i][static_cast<size_t>(at)];
    return s;
  };
  for (const auto& cfg : taken) use(cfg);
  std::vector<ExploreDraft> out;
  std::optional<GridProjection> grid;  // built at the first pick: enumerating costs
  while (out.size() < k && taken.size() < config.initial_design) {
    if (!grid) grid.emplace(space, config, whole_space);
    std::optional<ParamValues> best;
    long best_score = 0;
    for (size_t n = 0; n < std::max<size_t>(1, config.design_candidates); ++n) {
      auto cfg = grid->active() ? grid->Draw(taken, rng) : RandomUntried(space, taken, rng);
      if (!cfg) break;
      const long s = score(*cfg);
      if (!best || s < best_score) best = std::move(cfg), best_score = s;
      if (!config.design_balance) break;
    }
    if (!best) break;
    use(*best);
    taken.insert(*best);
    out.push_back({*best, "space-filling start at " + RenderParams(*best) + " (" + std::to_string(taken.size()) +
                              " of the first " + std::to_string(config.initial_design) + " configs)"});
  }
  return out;
}

}  // namespace

std::vector<ExploreDraft> ExploreByModel(ParamSpace& space, const ParamValues& parent,
                                         const std::vector<EvaluatedParams>& evaluated, size_t k, std::mt19937_64& rng,
                                         std::set<ParamValues>& taken, const ExploreConfig& config,
                                         const std::vector<ParamValues>* whole_space,
                                         const FootprintSource* footprints) {
  if (space.params().empty() || k == 0) return {};
  for (const auto& p : space.params())
    if (p.values.empty()) return {};
  std::vector<ExploreDraft> out = DesignPicks(space, k, rng, taken, config, whole_space);
  if (out.size() < k) {
    auto more = Explorer(space, parent, evaluated, rng, taken, config, whole_space, footprints).Pick(k - out.size());
    for (auto& d : more) {
      taken.insert(d.params);
      out.push_back(std::move(d));
    }
  }
  return out;
}

std::vector<double> FootprintFeatures(const Footprint& f) {
  return {f.registers / 256.0, std::log2(1.0 + static_cast<double>(f.spill_bytes)) / 12.0,
          std::log2(1.0 + static_cast<double>(f.shared_bytes)) / 17.0};
}

std::optional<ParamValues> RandomUntried(ParamSpace& space, const std::set<ParamValues>& taken, std::mt19937_64& rng) {
  const auto& ps = space.params();
  for (int attempt = 0; attempt < kRandomSamples; ++attempt) {
    ParamValues cfg;
    for (const auto& p : ps) {
      if (p.values.empty()) return std::nullopt;
      cfg[p.name] = p.values[Below(rng, p.values.size())];
    }
    if (!taken.count(cfg) && space.Valid(cfg)) return cfg;
  }
  auto left = space.Enumerate(kEnumerateCap, [&](const ParamValues& cfg) { return !taken.count(cfg); });
  if (left.empty()) return std::nullopt;
  return left[Below(rng, left.size())];
}

}  // namespace kpilot
