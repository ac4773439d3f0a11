// The optimize loop's decisions that depend on numbers alone: when a run stops, whether a paired
// check promotes a challenger, which node the energy objective reports, and how many expansions
// are kept in flight. Pure functions, tested without a loop.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "optimize/options.h"

namespace kpilot {

// Adaptive pipeline depth (OptimizeOptions::pipeline_depth = 0): the depth after a batch during
// which the evaluation queues were busy `busy_s` (summed) of `elapsed_s` seconds (the executor's
// clock) on `devices` GPUs: one more when they were busy less than kAutoPipelineBusyGoal of the
// time, never more than MaxPipelineDepth(devices), never less than `depth`. Each GPU beyond the
// first adds one expansion in flight at the start and two to the cap, so every queue has a batch
// to take while the next ones compile. Three at the start: on the H200 at a wall-clock budget it
// ended better than two and four (docs/search.md, "Pipeline depth"). A space run, whose clock does
// not model compiles, keeps kSpacePipelineDepth (its figures count evaluations, where deeper
// only costs).
inline constexpr int kMinAutoPipelineDepth = 3;
inline constexpr int kSpacePipelineDepth = 2;
inline constexpr int kMaxAutoPipelineDepth = 4;
inline constexpr double kAutoPipelineBusyGoal = 0.8;
inline int MinPipelineDepth(int devices) { return kMinAutoPipelineDepth + std::max(0, devices - 1); }
inline int MaxPipelineDepth(int devices) { return kMaxAutoPipelineDepth + 2 * std::max(0, devices - 1); }
int NextPipelineDepth(int depth, double busy_s, double elapsed_s, int devices = 1);

// Energy (--objective energy | mix). JoulesRatio: the baseline's joules per call over the
// candidate's, as the geometric mean over the workloads where both were measured; 0 when none
// was. In a paired check the baseline is the incumbent. MixScore: the mix objective's score,
// as a speedup: exp(log(speedup) + weight · log(joules ratio)); the speedup alone when no ratio
// was measured (joules_ratio ≤ 0).
double JoulesRatio(const Evaluation& e);
double MixScore(double speedup, double joules_ratio, double weight);
// Why a run stopped. kExhausted: the tree has nothing left to expand.
enum class StopReason { kBudget, kTime, kPlateau, kCost, kTokens, kDuplicates, kTarget, kExhausted };
const char* StopReasonName(StopReason r);

// Drafts in a row that compile to binaries already evaluated before the run stops with
// kDuplicates (at least this many, and at least the evaluation budget): a generator that only
// repeats itself (an LLM rewording the same kernel) hands its budget back and would otherwise
// never end the run.
inline constexpr int kMinDuplicatesToStop = 16;

// Where a run stands when the loop decides whether to ask for more drafts.
struct RunProgress {
  int budget_left = 0;          // evaluations the budget still has room for
  double elapsed_s = 0;         // wall time of this and the run's earlier processes, seconds
  int since_promotion = 0;      // evaluations since the last promotion
  GeneratorSpend spend;         // the generator's totals over the whole run
  int duplicates_in_a_row = 0;  // drafts in a row whose binary was evaluated before
  // The incumbent's share of the roofline floor (0 = unknown); nullopt: no incumbent yet.
  std::optional<double> best_achieved_fraction;
};
// The first stop rule of `o` that holds, in the order of StopReason (kExhausted is the loop's
// own); nullopt: go on.
std::optional<StopReason> StopRule(const OptimizeOptions& o, const RunProgress& p);

// Energy (--objective energy | mix). JoulesRatio: the baseline's joules per call over the
// candidate's, as the geometric mean over the workloads where both were measured; 0 when none
// was. In a paired check the baseline is the incumbent. MixScore: the mix objective's score,
// as a speedup: exp(log(speedup) + weight · log(joules ratio)); the speedup alone when no ratio
// was measured (joules_ratio ≤ 0).
double JoulesRatio(const Evaluation& e);
double MixScore(double speedup, double joules_ratio, double weight);

// The paired gate's decision on `paired`, the challenger timed against the incumbent in one
// process (a passed verdict): accept when the speedup's CI lies above 1; under kMix, when the
// score at the CI's lower end (with the joules both used in that process) is above 1.
struct GateDecision {
  bool accept = false;
  double joules_ratio = 0;  // kMix: the incumbent's joules over the challenger's
  double score_lo = 0;      // kMix: MixScore at the speedup CI's lower end
};
GateDecision PairedGate(const OptimizeOptions& o, const Evaluation& paired);

// A node as the energy objective weighs it.
struct EnergyCandidate {
  int64_t node = 0;
  bool passed = false;
  double speedup = 0;
  double speedup_lo = 0;  // the lower end of its speedup's CI (0 = unknown)
  double joules = 0;      // mean joules per call over workloads (0 = not measured)
};
// --objective energy: among passed nodes whose speedup lies within the fastest's CI (at or above
// its lower end), the one with the fewest joules per call; `fastest` when none measured joules.
int64_t EnergyBest(const EnergyCandidate& fastest, const std::vector<EnergyCandidate>& nodes);

}  // namespace kpilot
