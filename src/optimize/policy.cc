// The optimize loop's pure decisions (policy.h).
#include "optimize/policy.h"

#include <algorithm>
#include <cmath>

namespace kpilot {

// Expansions in flight at once: the next one's drafts compile on the CPU cores while the GPU
// evaluates the current one's, so the evaluation queue does not wait on nvcc. Two keep the tree
// at most one batch behind its results; the adaptive default (OptimizeOptions::pipeline_depth 0)
// starts one deeper and goes further only while the evaluation queue is measured idle.
int NextPipelineDepth(int depth, double busy_s, double elapsed_s, int devices) {
  devices = std::max(1, devices);
  depth = std::max(depth, MinPipelineDepth(devices));
  if (elapsed_s <= 0 || depth >= MaxPipelineDepth(devices)) return depth;
  return busy_s < kAutoPipelineBusyGoal * elapsed_s * devices ? depth + 1 : depth;
}

const char* StopReasonName(StopReason r) {
  switch (r) {
    case StopReason::kBudget:
      return "budget";
    case StopReason::kTime:
      return "time";
    case StopReason::kPlateau:
      return "plateau";
    case StopReason::kCost:
      return "cost";
    case StopReason::kTokens:
      return "tokens";
    case StopReason::kDuplicates:
      return "duplicates";
    case StopReason::kTarget:
      return "target";
    case StopReason::kExhausted:
      return "exhausted";
  }
  return "exhausted";
}

std::optional<StopReason> StopRule(const OptimizeOptions& o, const RunProgress& p) {
  if (p.budget_left <= 0) return StopReason::kBudget;
  if (o.time_limit_s > 0 && p.elapsed_s > o.time_limit_s) return StopReason::kTime;
  if (o.plateau > 0 && p.since_promotion >= o.plateau) return StopReason::kPlateau;
  if (o.max_cost_usd > 0 && p.spend.cost_usd >= o.max_cost_usd) return StopReason::kCost;
  if (o.max_tokens > 0 && p.spend.input_tokens + p.spend.output_tokens >= o.max_tokens) return StopReason::kTokens;
  if (p.duplicates_in_a_row >= std::max(kMinDuplicatesToStop, o.budget)) return StopReason::kDuplicates;
  if (o.target_fraction > 0 && p.best_achieved_fraction && *p.best_achieved_fraction >= o.target_fraction)
    return StopReason::kTarget;
  return std::nullopt;
}

double JoulesRatio(const Evaluation& e) {
  double log_sum = 0;
  int n = 0;
  for (const auto& t : e.timings)
    if (t.joules_per_call > 0 && t.baseline_joules_per_call > 0) {
      log_sum += std::log(t.baseline_joules_per_call / t.joules_per_call);
      ++n;
    }
  return n > 0 ? std::exp(log_sum / n) : 0;
}

double MixScore(double speedup, double joules_ratio, double weight) {
  if (speedup <= 0 || joules_ratio <= 0) return speedup;
  return std::exp(std::log(speedup) + weight * std::log(joules_ratio));
}

GateDecision PairedGate(const OptimizeOptions& o, const Evaluation& paired) {
  GateDecision d;
  d.accept = paired.speedup_geomean_ci.lo > 1.0;
  if (o.objective == Objective::kMix) {
    d.joules_ratio = JoulesRatio(paired);
    d.score_lo = MixScore(paired.speedup_geomean_ci.lo, d.joules_ratio, o.energy_weight);
    d.accept = d.score_lo > 1.0;
  }
  return d;
}

int64_t EnergyBest(const EnergyCandidate& fastest, const std::vector<EnergyCandidate>& nodes) {
  const double floor = fastest.speedup_lo > 0 ? std::min(fastest.speedup_lo, fastest.speedup) : fastest.speedup;
  const EnergyCandidate* best = &fastest;
  for (const auto& n : nodes) {
    if (!n.passed || n.joules <= 0 || n.speedup < floor) continue;
    if (best->joules <= 0 || n.joules < best->joules) best = &n;
  }
  return best->node;
}

}  // namespace kpilot
