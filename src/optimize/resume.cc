// Resuming a run (OptimizeLoop::Continue): the tree, the memory and the incumbent rebuilt from
// the recorded nodes and events; evaluations that ended before the interruption served from the
// journal; proposals recorded but never evaluated evaluated now, in their order; then the loop
// carries on.
#include <set>

#include "optimize/loop.h"

namespace kpilot {

using nlohmann::json;

namespace {

// The wall time a run's earlier processes used, for --time on resume: each from its start (the
// run's creation, then each `resume` event) to its last recorded event. A process killed while
// proposing or evaluating used a little more, up to the kill, that no record shows.
double EarlierProcessesSeconds(const std::string& run_created_at, const std::vector<RunEventRecord>& events) {
  std::optional<double> start = StoreTimeSeconds(run_created_at), last = start;
  double total = 0;
  for (const auto& e : events) {
    std::optional<double> t = StoreTimeSeconds(e.created_at);
    if (!t) continue;
    if (e.kind == "resume") {
      if (start && last) total += std::max(0.0, *last - *start);
      start = t;
    }
    if (!start) start = t;  // a run row without a readable created_at: its first event
    last = t;
  }
  if (start && last) total += std::max(0.0, *last - *start);
  return total;
}

}  // namespace

Result<OptimizeResult> OptimizeLoop::Continue(const std::vector<RunNodeRecord>& nodes,
                                              const std::vector<RunEventRecord>& events,
                                              const std::string& run_created_at) {
  std::set<int64_t> evaluated_proposals;
  for (const auto& r : nodes) {
    NodeData n;
    double tree_speedup = 0;
    auto src = deps_.store.GetBlob(r.source_blob);
    if (!src.ok()) return src.status();
    n.source = *src;
    n.source_name = r.source_name;
    n.params = ParamsFromJson(r.params_json);
    auto verdict = ParseVerdictKind(r.verdict);
    if (!verdict)
      return Status::InvalidInput("run " + std::to_string(run_id_) + " node " + std::to_string(r.node) +
                                  ": unknown verdict \"" + r.verdict + "\" in the store");
    n.verdict = *verdict;
    n.speedup = r.speedup;
    std::string failure = n.passed() ? "" : r.verdict;
    if (!r.result_blob.empty()) {
      auto res = deps_.store.GetBlob(r.result_blob);
      json j = res.ok() ? json::parse(*res, nullptr, false) : json();
      if (j.is_object()) {
        n.bottleneck = j.value("bottleneck", "");
        n.joules = j.value("joules", 0.0);
        n.achieved_fraction = j.value("achieved_fraction", 0.0);
        EvidenceFromJson(j, &n.verdict_summary, &n.verdict_evidence, &n.metrics);
        tree_speedup = j.value("tree_speedup", 0.0);
        const json ci = j.value("speedup_geomean_ci", json::array());
        if (n.passed() && ci.is_array() && !ci.empty() && ci[0].is_number()) n.speedup_lo = ci[0].get<double>();
        if (j.contains("object_sha")) seen_.Insert(j["object_sha"].get<std::string>());
        n.findings = FindingsFromJson(j.value("findings", json::array()));
        if (!n.verdict_summary.empty() && !n.passed()) failure = n.verdict_summary;
      }
    }
    auto path = Materialize(n.source, n.source_name);
    if (!path.ok()) return path.status();
    n.path = *path;
    n.score = tree_speedup > 0 ? tree_speedup : r.speedup;
    Outcome out{n.passed(), n.score, r.summary, r.finding};
    int64_t id = r.parent < 0 ? tree_.AddRoot(out) : tree_.AddChild(r.parent, out);
    if (id != r.node)
      return Status::Internal("run " + std::to_string(run_id_) + ": stored node ids are not contiguous");
    evaluated_proposals.insert(r.proposal);
    tried_params_.push_back(n.params);
    if (r.parent >= 0) {
      // As EvaluateDraft recorded it: the change over the parent, and the verdict's sentence.
      const double parent_speedup = data_.count(r.parent) ? data_.at(r.parent).speedup : 0;
      const double delta = parent_speedup > 0 && r.speedup > 0 ? r.speedup / parent_speedup - 1 : 0;
      memory_.Record({id, r.parent, r.summary, r.finding, r.verdict, r.speedup, delta, failure});
    }
    data_[id] = std::move(n);
    ++evaluations_;
  }
  // The incumbent is the last promoted node; proposals with neither a node nor a duplicate
  // record were interrupted and are evaluated now, before anything new is proposed.
  std::vector<std::pair<int64_t, json>> pending;
  std::set<int64_t> decided;
  for (const auto& e : events) {
    json p = json::parse(e.payload_json, nullptr, false);
    if (!p.is_object()) continue;
    if (e.kind == "promote" || e.kind == "reject") {
      decided.insert(p.value("node", -1));
      // A decision against an incumbent followed a paired check (the first promotion has none).
      if (p.contains("incumbent")) ++promotion_checks_;
    }
    if (e.kind == "promote") incumbent_ = p.value("node", incumbent_);
    if (e.kind == "duplicate") {
      evaluated_proposals.insert(p.value("proposal", -1));
      ++duplicates_;
      ++duplicates_in_a_row_;
    }
    if (e.kind == "evaluated") duplicates_in_a_row_ = 0;
    if (e.kind == "counters") counters_.Restore(p);
    if (e.kind == "proposal" && p.value("parent", -1) >= 0) pending.push_back({e.seq, p});
    if (e.kind == "proposal" && p.value("parent", -1) < 0) {
      root_proposal_ = e.seq;
      if (p.contains("source") && p["source"].is_string()) root_source_ = p["source"].get<std::string>();
    }
    if (e.kind == "result") journal_.Remember(p);
    // A node closed before the kill stays closed (its generator failures are not paid again).
    if (e.kind == "close") {
      const int64_t node = p.value("node", int64_t{-1});
      if (node >= 0 && static_cast<size_t>(node) < tree_.size()) tree_.Close(node, p.value("reason", ""));
    }
    if (e.kind == "generator_failure")
      memory_.Record(
          {-1, p.value("parent", -1), p.value("summary", ""), "", "no_candidate", 0, 0, p.value("reason", "")});
    if (e.kind == "spend") spend_.Restore(p);
  }
  // Proposals whose evaluation ended before the kill: their journaled results are served, not
  // evaluated again.
  if (!nodes.empty()) root_proposal_ = -1;
  const int journaled = journal_.ReadAhead([&](const json& key) {
    const int64_t seq = key.value("proposal", int64_t{-1});
    return key.contains("proposal") && (nodes.empty() ? seq == root_proposal_ : !evaluated_proposals.count(seq));
  });
  earlier_processes_s_ = EarlierProcessesSeconds(run_created_at, events);
  KPILOT_RETURN_IF_ERROR(events_.Add("resume", {{"nodes", nodes.size()},
                                                {"incumbent", incumbent_},
                                                {"journaled_results", journaled},
                                                {"earlier_processes_s", earlier_processes_s_}}));
  if (nodes.empty()) return Start();
  for (const auto& r : nodes)
    if (r.parent >= 0 && r.node > incumbent_) ++since_promotion_;  // with no incumbent: every child
  // A kill between a node's record and its promotion decision: decide now, in order.
  for (const auto& r : nodes)
    if (!decided.count(r.node)) KPILOT_RETURN_IF_ERROR(MaybePromote(r.node));
  // Bests not profiled before the kill (a kill between a promotion and its profile, or a best
  // never selected since) are profiled as in a run that was not interrupted: when next selected,
  // the final one at the end.
  for (const auto& e : events)
    if (e.kind == "promote")
      if (json p = json::parse(e.payload_json, nullptr, false); p.is_object() && p.value("node", int64_t{-1}) >= 0)
        counters_.Want(p.value("node", int64_t{-1}), {});
  for (const auto& [seq, p] : pending) {
    if (evaluated_proposals.count(seq) || evaluations_ >= opts_.budget) continue;
    Draft d;
    d.source = p.value("source", "");
    d.source_name = p.value("source_name", "");
    d.params = ParamsFromJson(p.value("params", json::object()).dump());
    d.summary = p.value("summary", "");
    d.targeted_finding = p.value("finding", "");
    d.skills_applied = p.value("skills_applied", std::vector<std::string>{});
    if (p.contains("skills_offered"))
      skills_.Restore(p.value("parent", int64_t{-1}), p["skills_offered"].get<std::vector<std::string>>());
    int64_t parent = p.value("parent", 0);
    auto path = Materialize(d.source, d.source_name);
    if (!path.ok()) return path.status();
    tried_params_.push_back(d.params);
    auto done = EvaluateDraft(parent, seq, d, SubmitDraft(d, *path, seq));
    if (!done.ok()) return done.status();
  }
  return Iterate();
}

}  // namespace kpilot
