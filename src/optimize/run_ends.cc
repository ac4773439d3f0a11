// The two ends of a run (loop.h): its first evaluation, the starting candidate at the first
// value of every param (Start), and its end: the best chosen under the objective, profiled,
// evaluated again and recorded (Finish).
#include "core/fs.h"
#include "optimize/loop.h"
#include "generate/param_space.h"
#include "task/formula.h"

namespace kpilot {

using nlohmann::json;

Result<OptimizeResult> OptimizeLoop::Start() {
  json start = StartEventPayload(deps_.task, opts_);
  if (opts_.space_file.empty()) start["times"] = {{"now_s", deps_.executor.ElapsedSeconds()}};
  KPILOT_RETURN_IF_ERROR(events_.Add("start", start));
  // A resumed run evaluates the source its root proposal recorded, which the journaled result
  // (if any) is of, even when the file has been edited since.
  auto text = root_source_ ? Result<std::string>(*root_source_) : ReadFile(opts_.from);
  if (!text.ok()) return text.status();
  Draft root;
  root.source = *text;
  root.source_name = std::filesystem::path(opts_.from).filename().string();
  root.summary = "starting candidate " + root.source_name;
  // With tunable params the search starts from the first declared value of each (the task's
  // naive end of every range), so that every node's params are explicit and comparable; when
  // those break a constraint, from the first valid combination in declaration order (last param
  // fastest); with none valid, from the source's own defaults.
  if (!deps_.task.params.empty()) {
    for (const auto& p : deps_.task.params)
      if (!p.values.empty()) root.params[p.name] = p.values.front();
    auto holds = ConstraintsHold(deps_.task.constraints, root.params);
    if (holds.ok() && *holds) {
      root.summary += " with the first value of every param";
    } else {
      ParamSpace space(deps_.task);
      auto first = space.Enumerate(1, [](const ParamValues&) { return true; });
      root.params = first.empty() ? ParamValues{} : first.front();
      root.summary += first.empty() ? " with its own defaults (no combination of params meets the constraints)"
                                    : " with the first combination of params that meets the constraints";
    }
  }
  // A resumed run that was killed before its root was recorded keeps the root's proposal (and
  // its journaled result, if the evaluation had ended).
  auto seq = root_proposal_ >= 0 ? Result<int64_t>(root_proposal_)
                                 : deps_.store.AddRunEvent(run_id_, "proposal",
                                                           JsonText(json{{"parent", -1},
                                                                         {"summary", root.summary},
                                                                         {"params", root.params},
                                                                         {"source", root.source},
                                                                         {"source_name", root.source_name}}));
  if (!seq.ok()) return seq.status();
  auto path = Materialize(root.source, root.source_name);
  if (!path.ok()) return path.status();
  auto submitted = SubmitDraft(root, *path, *seq);
  Anticipate(*path, root.params);  // the root is expanded first, whatever its evaluation shows
  EvalJobResult r = submitted.get();
  KPILOT_RETURN_IF_ERROR(journal_.status());
  if (!r.status.ok()) return r.status;
  NodeData n;
  n.source = root.source;
  n.source_name = root.source_name;
  n.path = *path;
  n.params = root.params;
  AnalyzeNode(deps_.task, opts_, tools_, r.evaluation, &n);
  Outcome out{r.evaluation.verdict.passed(), n.score, root.summary, ""};
  int64_t id = tree_.AddRoot(out);
  ++evaluations_;
  tried_params_.push_back(root.params);
  KPILOT_RETURN_IF_ERROR(RecordNode(id, -1, *seq, n, out, &r.evaluation, r.object_sha));
  data_[id] = std::move(n);
  KPILOT_RETURN_IF_ERROR(events_.Add("evaluated", {{"node", id},
                                                   {"parent", -1},
                                                   {"proposal", *seq},
                                                   {"object_sha", r.object_sha},
                                                   {"verdict", VerdictName(data_[id].verdict)},
                                                   {"speedup", data_[id].speedup},
                                                   {"params", ParamsText(root.params, "(defaults)")},
                                                   {"summary", root.summary},
                                                   {"evaluations", evaluations_},
                                                   {"budget", opts_.budget},
                                                   {"device", r.device},
                                                   {"times", events_.Times(r)}}));
  KPILOT_RETURN_IF_ERROR(MaybePromote(id, &r));
  return Iterate();
}

int64_t OptimizeLoop::EnergyChoice(int64_t fastest) const {
  std::vector<EnergyCandidate> nodes;
  for (const auto& [id, n] : data_) nodes.push_back({id, n.passed(), n.speedup, n.speedup_lo, n.joules});
  const NodeData& f = data_.at(fastest);
  return EnergyBest({fastest, f.passed(), f.speedup, f.speedup_lo, f.joules}, nodes);
}

Result<OptimizeResult> OptimizeLoop::Finish(StopReason reason) {
  // No pick follows: the footprint compiles still queued would only delay the end.
  if (footprints_) footprints_->Cancel();
  Executor& ex = deps_.executor;
  OptimizeResult res;
  res.run_id = run_id_;
  res.stop_reason = reason;
  res.evaluations = evaluations_;
  res.promotion_checks = promotion_checks_;
  res.duplicates = duplicates_;
  res.cancelled = cancelled_;
  res.spend = spend_.Total();
  if (ex.ElapsedSeconds() > 0) {
    res.busy_share = ex.BusySeconds() / (ex.ElapsedSeconds() * ex.Devices());
    res.checks_timing_share = ex.ChecksAndTimingSeconds() / (ex.ElapsedSeconds() * ex.Devices());
  }
  res.devices = ex.Devices();
  res.pipeline_depth = depth_;
  res.anticipated = footprints_ ? static_cast<int>(footprints_->Prefetched()) : 0;
  int64_t best = incumbent_ >= 0 ? incumbent_ : 0;
  if (opts_.objective != Objective::kTime && incumbent_ >= 0) {
    bool measured = false;
    for (const auto& [id, n] : data_) measured = measured || n.joules > 0;
    if (!measured)
      KPILOT_RETURN_IF_ERROR(events_.Add("warning", {{"message",
                                                      "no evaluation measured joules (NVML energy is "
                                                      "unavailable on this GPU or to this user): the best "
                                                      "is by time alone"}}));
  }
  if (opts_.objective == Objective::kEnergy && incumbent_ >= 0) {
    const int64_t fastest = incumbent_;
    best = EnergyChoice(fastest);
    if (best != fastest)
      KPILOT_RETURN_IF_ERROR(events_.Add("energy_choice", {{"fastest", fastest},
                                                           {"fastest_speedup", data_.at(fastest).speedup},
                                                           {"fastest_joules", data_.at(fastest).joules},
                                                           {"chosen", best},
                                                           {"chosen_speedup", data_.at(best).speedup},
                                                           {"chosen_joules", data_.at(best).joules}}));
  }
  // The report's profile is the final best's: it is profiled now if it never was (with the
  // energy objective it may be a node that was never promoted). The other bests the search
  // never expanded are not.
  counters_.ProfileIfWanted(best);
  if (data_.at(best).passed()) counters_.Request(best);  // nothing if done or queued
  counters_.ClearWanted();
  KPILOT_RETURN_IF_ERROR(counters_.Collect(std::nullopt, true));
  res.counter_profiles = counters_.profiles();
  res.counters_s = counters_.seconds();
  const NodeData& b = data_.at(best);
  res.best_node = best;
  res.best_params = b.params;
  res.best_source = b.source;
  res.best_source_name = b.source_name;
  KPILOT_RETURN_IF_ERROR(
      events_.Add("stop", {{"reason", StopReasonName(reason)}, {"evaluations", evaluations_}, {"best", best}}));
  // The final best is evaluated again before it is reported.
  EvalJob job;
  job.task = &deps_.task;
  job.source = b.path;
  job.params = b.params;
  job.options = BaseEvalOptions(opts_);
  job.ahead = true;
  EvalJobResult r = journal_.Submit(std::move(job), {{"final", best}}).get();
  if (!r.status.ok()) return r.status;
  KPILOT_RETURN_IF_ERROR(journal_.status());
  res.final = r.evaluation;
  KPILOT_RETURN_IF_ERROR(
      events_.Add("final", {{"node", best},
                            {"verdict", VerdictName(r.evaluation.verdict.kind)},
                            {"speedup", r.evaluation.speedup_geomean},
                            {"ci", {r.evaluation.speedup_geomean_ci.lo, r.evaluation.speedup_geomean_ci.hi}},
                            {"times", events_.Times(r)},
                            {"evaluation", ToJson(r.evaluation)}}));
  RunRecord run;
  run.id = run_id_;
  run.status = "finished";
  run.stop_reason = StopReasonName(reason);
  run.best_speedup = r.evaluation.verdict.passed() ? r.evaluation.speedup_geomean : 0;
  run.best_node = best;
  KPILOT_RETURN_IF_ERROR(deps_.store.UpdateRun(run));
  return res;
}

}  // namespace kpilot
