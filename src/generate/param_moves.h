// Model-ranked exploration for the params generator: many candidate moves from the parent are
// generated, and a surrogate model fitted to the run's passed configs picks which to draft.
// One-parameter steps alone climb one hill a step at a time; these moves reach further.
//
// Candidate moves from the parent (each kept only when valid and untried):
//   step / jump:   one param to any other declared value (±1 position is a step, more a jump);
//   pair:          two params at once, to any other values (sampled when a pair has many);
//   crossover:     each param from the parent or from one of the best configs seen so far
//                  (uniform masks, as a genetic algorithm's crossover);
//   differential:  parent + F·(elite − random evaluated config) in value-index space, each
//                  param taking the mutant's value with probability CR (differential evolution);
//   restart:       uniformly random valid configs anywhere in the space;
//   model pick:    with rank_whole_space (the default) and a space of at most 20000 valid
//                  configs, every untried config, in place of the restarts.
// Before any of that, the first few configs of a run come from a space-filling design
// (ExploreConfig::initial_design): a model fitted to one or two points ranks by distance alone
// and sends the first drafts to the corners of the space. The design's candidates are grid
// points moved to their nearest valid config (ExploreConfig::design_from_grid).
// Ranking: expected improvement over the best passed result, from a model fitted to the passed
// configs only (see ExploreConfig::impute_failures). After each pick the model takes the pick's
// predicted value as if measured ("kriging believer"), so one batch's drafts spread out.
// Compile footprints (ExploreConfig::footprint_top_k, given a FootprintSource): each pick's
// best-ranked candidates are compiled first, and a second model that also sees registers, spills
// and shared memory chooses among them.
// Everything is deterministic for the engine's seed; docs/search.md has the evidence behind every
// constant.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "generate/param_space.h"
#include "generate/generator.h"
#include "generate/surrogate.h"

namespace kpilot {

enum class Acquisition {
  kExpectedImprovement,  // E[max(0, f − best passed so far)]
  kUpperBound,           // mean + kappa·sd
};

// The defaults: a space-filling start (initial_design), then expected improvement over the whole
// space from a model of the passed configs (docs/search.md). With failures fitted as the worst
// result, whole-space ranking and expected improvement measured worse than UCB over the
// parent's moves and random restarts, only because the imputed failures bent the model where the
// best configs are; with failures left out they measured better (docs/results.md, "Failed
// configs out of the model"). The local slot and the hyperparameter grid stay options.
struct ExploreConfig {
  Acquisition acquisition = Acquisition::kExpectedImprovement;
  double kappa = 1.0;  // kUpperBound: mean + kappa·sd, both in log speedup
  // Of each `local_every` exploration picks, the last comes from the parent's neighbourhood (the
  // moves below, not the whole-space candidates), so the tree's choice of parent still steers
  // the search; 0: every pick from the whole pool.
  size_t local_every = 0;
  // Whether the params generator hands the whole space to ExploreByModel when it has at most
  // 20000 valid configs (see `whole_space` there).
  bool rank_whole_space = true;
  size_t max_scored = 4096;             // whole-space candidates scored per call (a seeded sample)
  size_t elites = 4;                    // crossover and differential partners: the best so many
  size_t crossovers_per_elite = 6;      // uniform-mask children per elite
  size_t differentials = 8;             // differential-evolution mutants per call
  double differential_weight = 0.8;     // F
  double differential_crossover = 0.7;  // CR
  size_t random_candidates = 48;        // restart candidates per call
  size_t pair_cap = 16;                 // value combinations kept per pair of params
  // Space-filling start: while fewer than `initial_design` configs are taken (the parent, every
  // tried config and the drafts in flight), exploration drafts come from a randomized
  // Latin-hypercube-like design instead of the model, which has too few points to be trusted:
  // among `design_candidates` uniformly random untried configs, the one whose values the taken
  // configs use least (summed over params) is drafted, ties to the earliest drawn. 0: off.
  // 6 (about 1% of a 600-config space) measured best of {0, 4, 6} on the two real H200 spaces and
  // the synthetic ones (docs/search.md).
  size_t initial_design = 6;
  size_t design_candidates = 64;
  bool design_balance = true;  // false: the first random untried config (plain sampling)
  // Where the design's candidates come from. true: uniformly random points of the whole value
  // grid (constraints ignored), each moved to the nearest valid untried config (fewest value
  // positions apart, summed over params; ties to the first in enumeration order). Constraints
  // are mostly resource limits (threads, shared memory, registers), so the grid's invalid mass
  // lands on the configs that use the most of a resource, where tuned kernels tend to be. false,
  // or a grid over 65536 points: uniformly random valid untried configs. true measured better
  // at 1% of every synthetic space (mean 0.559 → 0.587) and level elsewhere (docs/results.md,
  // "The design from the value grid").
  bool design_from_grid = true;
  // Whether failed configs (compile errors, launch failures, wrong results) join the model's fit,
  // valued as the worst passed result. false: they are left out (never drafted again, being
  // tried). Failures are mostly resource limits (shared memory, registers, threads), so they sit
  // beside the configs that use the most of a resource, where the best ones tend to be: fitting
  // them as the worst result pulled the model's mean down exactly there. false measured better
  // on every synthetic space with failures (mean at 10% of the space 0.928 → 0.953 alone, 0.973
  // with expected improvement over the whole space; docs/results.md, "Failed configs out of the
  // model").
  bool impute_failures = false;
  // Compile footprints (used only when ExploreByModel is given a FootprintSource): each pick ranks
  // the pool with the params-only model, compiles its best `footprint_top_k` candidates, and
  // picks among those by expected improvement under a second model whose inputs are the params'
  // coordinates plus the footprint (FootprintFeatures) of each config, fitted to the passed
  // configs whose footprint is known (with fewer than two, this call ranks by params alone). A
  // candidate that does not compile is not drafted by the model. 0: off. In a numpy prototype,
  // 16 was level with the footprints of the whole space; in kpilot, 16 against none was level at
  // 10% of the four real H200 tuning spaces and better at 5% of conv2d (docs/search.md, "Compile
  // footprints"; docs/results.md, "Compile footprints in replays").
  size_t footprint_top_k = 16;
  SurrogateConfig surrogate;
};

// The model inputs a footprint adds to a config's coordinates, each about [0, 1] like them:
// registers / 256, log2(1 + spill bytes) / 12, log2(1 + shared bytes) / 17.
std::vector<double> FootprintFeatures(const Footprint& f);

// Compile footprints of configs (FootprintProbe::Probe for the parent's source): one entry per
// config, in order; nullopt when unknown.
using FootprintSource = std::function<std::vector<std::optional<Footprint>>(const std::vector<ParamValues>& configs)>;

// One exploration draft: complete params and a one-line summary of the move and the model's
// expectation ("BM 32→64, TN 2→4: pair move; model expects 5.1× ±22%").
struct ExploreDraft {
  ParamValues params;
  std::string summary;
};

// Up to k drafts around `parent` (complete), valid, not in `taken` and distinct; each is added
// to `taken`. `evaluated` holds the run's evaluated configs, complete (WithDefaults); failed
// ones stay out of the model unless config.impute_failures. `whole_space`, when given, lists
// every valid config in enumeration order (the space is small enough to enumerate): the untried
// ones all join the pool (at most config.max_scored of them, a seeded sample, when more are
// left), replacing the random restarts, so the model ranks the whole space — Bayesian
// optimization proper — and the design draws on it instead of enumerating again. `footprints`, when
// given, supplies compile footprints (ExploreConfig::footprint_top_k). Fewer than k
// (maybe none) when nothing untried is found: the caller falls back to RandomUntried.
std::vector<ExploreDraft> ExploreByModel(ParamSpace& space, const ParamValues& parent,
                                         const std::vector<EvaluatedParams>& evaluated, size_t k, std::mt19937_64& rng,
                                         std::set<ParamValues>& taken, const ExploreConfig& config = {},
                                         const std::vector<ParamValues>* whole_space = nullptr,
                                         const FootprintSource* footprints = nullptr);

// A uniformly random valid configuration not in `taken`: rejection sampling over the product,
// then, when those are rare, a draw from the enumerated ones; nullopt when none is left.
std::optional<ParamValues> RandomUntried(ParamSpace& space, const std::set<ParamValues>& taken, std::mt19937_64& rng);

}  // namespace kpilot
