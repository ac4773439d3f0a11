// Model-ranked exploration for the params proposer: many candidate moves from the parent are
// generated, and a surrogate model fitted to every evaluated config of the run picks which to
// draft. One-parameter steps alone climb one hill a step at a time; these moves reach further.
//
// Candidate moves from the parent (each kept only when valid and untried):
//   step / jump:   one param to any other declared value (±1 position is a step, more a jump);
//   pair:          two params at once, to any other values (sampled when a pair has many);
//   crossover:     each param from the parent or from one of the best configs seen so far
//                  (uniform masks, as a genetic algorithm's crossover);
//   differential:  parent + F·(elite − random evaluated config) in value-index space, each
//                  param taking the mutant's value with probability CR (differential evolution);
//   restart:       uniformly random valid configs anywhere in the space.
// Ranking: predicted log speedup + kappa · its standard deviation (an upper confidence bound),
// so untried regions keep some pull and a plateaued region loses it. After each pick the model
// takes the pick's predicted value as if measured ("kriging believer"), so one batch's drafts
// spread out. Everything is deterministic for the engine's seed; docs/search.md has the evidence
// behind every constant.
#pragma once

#include <cstddef>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "propose/param_space.h"
#include "propose/proposer.h"
#include "propose/surrogate.h"

namespace kpilot {

struct ExploreConfig {
  double kappa = 1.0;                 // acquisition: mean + kappa·sd, both in log speedup
  size_t elites = 4;                  // crossover and differential partners: the best so many
  size_t crossovers_per_elite = 6;    // uniform-mask children per elite
  size_t differentials = 8;           // differential-evolution mutants per call
  double differential_weight = 0.8;   // F
  double differential_crossover = 0.7;  // CR
  size_t random_candidates = 48;      // restart candidates per call
  size_t pair_cap = 16;               // value combinations kept per pair of params
  SurrogateConfig surrogate;
};

// One exploration draft: complete params and a one-line summary of the move and the model's
// expectation ("BM 32→64, TN 2→4: pair move; model expects 5.1× ±22%").
struct ExploreDraft {
  ParamValues params;
  std::string summary;
};

// Up to k drafts around `parent` (complete), valid, not in `taken` and distinct; each is added
// to `taken`. `evaluated` holds the run's evaluated configs, complete (WithDefaults); failed
// ones count as the worst passed result. Fewer than k (maybe none) when the moves find nothing
// untried: the caller falls back to RandomUntried.
std::vector<ExploreDraft> ExploreByModel(ParamSpace& space, const ParamValues& parent,
                                         const std::vector<EvaluatedParams>& evaluated, size_t k,
                                         std::mt19937_64& rng, std::set<ParamValues>& taken,
                                         const ExploreConfig& config = {});

// A uniformly random valid configuration not in `taken`: rejection sampling over the product,
// then, when those are rare, a draw from the enumerated ones; nullopt when none is left.
std::optional<ParamValues> RandomUntried(ParamSpace& space, const std::set<ParamValues>& taken,
                                         std::mt19937_64& rng);

}  // namespace kpilot
