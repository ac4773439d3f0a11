// An agent's session as a run (optimizer.h, AgentRun): the nodes an agent's evaluations become,
// their promotion through the paired gate, and the final evaluation of the best. The recording
// (nodes, sources, events) is the search loop's own (node.h), so every reader of runs reads both.
#include <algorithm>
#include <map>
#include <mutex>

#include "core/fs.h"
#include "optimize/counters.h"
#include "optimize/node.h"
#include "optimize/optimizer.h"

namespace kpilot {

using nlohmann::json;

namespace {

std::string NodeIds(const NodeMap& data) {
  std::string s;
  for (const auto& [id, n] : data) s += (s.empty() ? "" : ", ") + std::to_string(id);
  return s;
}

}  // namespace

struct AgentRun::State {
  State(const AgentDeps& d, OptimizeOptions o, int64_t id, FileLock l, std::vector<std::unique_ptr<Tool>> t)
      : deps(d),
        opts(std::move(o)),
        run_id(id),
        lock(std::move(l)),
        tools(std::move(t)),
        events(deps.store, deps.progress, deps.executor, run_id, false),
        counters(deps.task, opts, deps.executor, tools, data, events) {}

  Status Promote(int64_t node, AgentStep* step);
  Status RecordBest();
  Result<AgentStep> Run(const AgentDraft& d, int64_t parent, bool root);
  json NodeJson(int64_t id) const;

  AgentDeps deps;
  const OptimizeOptions opts;
  const int64_t run_id;
  FileLock lock;
  std::vector<std::unique_ptr<Tool>> tools;
  NodeMap data;
  std::map<int64_t, std::shared_ptr<const Evaluation>> evaluations_by_node;
  std::map<int64_t, int> devices;  // the GPU queue each node's evaluation ran on
  std::map<int64_t, int64_t> parents;
  std::map<int64_t, std::string> summaries;
  RunEvents events;
  std::mutex seen_mu;
  std::map<std::string, int64_t> seen;  // object sha → the node evaluated from it
  int64_t next_node = 0, last_node = -1, incumbent = -1;
  int evaluations = 0;
  bool finished = false, abandoned = false, stop_recorded = false;
  // Declared last: destroyed first, waiting for the profiles still running (they borrow the above).
  CounterProfiles counters;
};

Result<std::unique_ptr<AgentRun>> AgentRun::Start(const AgentDeps& deps, OptimizeOptions options,
                                                  const Origin& origin) {
  const std::string& client = origin.client;
  options.generator = "agent:" + (client.empty() ? std::string("unknown") : client);
  options.budget = std::max(options.budget, 1);
  KPILOT_RETURN_IF_ERROR(CheckOptions(deps.task, options));
  auto tools = RunTools(options);
  if (!tools.ok()) return tools.status();
  RunRecord r;
  r.task_name = deps.task.name;
  r.task_dir = deps.task.dir.string();
  r.config_json = ToJson(options).dump();
  r.status = "running";
  auto id = deps.store.CreateRun(r);
  if (!id.ok()) return id.status();
  auto lock = FileLock::TryLock(RunLockPath(deps.store, *id), 2.0);
  if (!lock.ok()) return lock.status();
  if (!lock->has_value())
    return Status::Unavailable("the lock of new run " + std::to_string(*id) + " (" +
                               RunLockPath(deps.store, *id).string() + ") is held by another process");
  const std::string from = options.from;
  auto state = std::make_unique<State>(deps, std::move(options), *id, std::move(**lock), std::move(tools).value());
  json start = StartEventPayload(deps.task, state->opts);
  start["agent"] = client;
  if (!origin.context.is_null()) start["context"] = origin.context;
  start["times"] = {{"now_s", deps.executor.ElapsedSeconds()}};
  KPILOT_RETURN_IF_ERROR(state->events.Add("start", start));
  std::unique_ptr<AgentRun> run(new AgentRun(std::move(state)));
  if (!from.empty()) {
    auto text = ReadFile(from);
    if (!text.ok()) return text.status();
    AgentDraft root;
    root.source = *text;
    root.source_name = std::filesystem::path(from).filename().string();
    root.summary = "starting candidate " + root.source_name;
    root.params = origin.params;
    auto step = run->s_->Run(root, -1, true);
    if (!step.ok()) return step.status();
  }
  return run;
}

AgentRun::AgentRun(std::unique_ptr<State> state) : s_(std::move(state)) {}

AgentRun::~AgentRun() {
  if (!s_->finished && !s_->abandoned) (void)Abandon("the session ended without finish");
}

int64_t AgentRun::run_id() const { return s_->run_id; }
int AgentRun::evaluations() const { return s_->evaluations; }
bool AgentRun::finished() const { return s_->finished; }

Result<AgentStep> AgentRun::Evaluate(const AgentDraft& draft) {
  if (s_->finished)
    return Status::Unavailable("the session's run " + std::to_string(s_->run_id) +
                               " is finished: no more evaluations (start a new session to go on)");
  int64_t parent = draft.parent ? *draft.parent : s_->last_node;
  if (draft.parent && !s_->data.count(*draft.parent)) {
    std::string known = s_->data.empty() ? "none yet" : NodeIds(s_->data);
    return Status::InvalidInput("parent " + std::to_string(*draft.parent) + " is not a node of run " +
                                std::to_string(s_->run_id) + " (its nodes: " + known + ")");
  }
  return s_->Run(draft, parent, false);
}

Result<AgentStep> AgentRun::State::Run(const AgentDraft& d, int64_t parent, bool root) {
  auto proposal = deps.store.AddRunEvent(run_id, "proposal",
                                         JsonText(json{{"parent", parent},
                                                       {"summary", d.summary},
                                                       {"params", d.params},
                                                       {"source", d.source},
                                                       {"source_name", d.source_name}}));
  if (!proposal.ok()) return proposal.status();
  auto path = MaterializeRunSource(deps.store, run_id, d.source, d.source_name);
  if (!path.ok()) return path.status();
  EvalJob job;
  job.task = &deps.task;
  job.source = *path;
  job.params = d.params;
  job.options = BaseEvalOptions(opts);
  int64_t duplicate_of = -1;
  job.admit = [this, &duplicate_of](const std::string& sha) {
    std::lock_guard<std::mutex> l(seen_mu);
    auto it = seen.find(sha);
    if (it == seen.end()) return true;
    duplicate_of = it->second;
    return false;
  };
  EvalJobResult r = deps.executor.Submit(std::move(job)).get();
  if (!r.status.ok()) return r.status;
  AgentStep step;
  step.parent = parent;
  step.object_sha = r.object_sha;
  if (r.skipped) {
    // The same binary as an earlier node: its verdict stands, nothing was run again.
    step.duplicate = true;
    step.duplicate_of = duplicate_of;
    step.node = duplicate_of;
    if (evaluations_by_node.count(duplicate_of)) step.evaluation = *evaluations_by_node.at(duplicate_of);
    const NodeData& n = data.at(duplicate_of);
    step.bottleneck = n.bottleneck;
    step.achieved_fraction = n.achieved_fraction;
    step.findings = n.findings;
    step.incumbent = incumbent;
    KPILOT_RETURN_IF_ERROR(events.Add("duplicate", {{"proposal", *proposal},
                                                    {"params", d.params},
                                                    {"object_sha", r.object_sha},
                                                    {"of", duplicate_of},
                                                    {"times", events.Times(r)}}));
    return step;
  }
  NodeData n;
  n.source = d.source;
  n.source_name = d.source_name;
  n.params = d.params;
  n.path = *path;
  AnalyzeNode(deps.task, opts, tools, r.evaluation, &n);
  const std::string summary = !d.summary.empty() ? d.summary : root ? "starting candidate" : "agent's draft";
  Outcome out{r.evaluation.verdict.passed(), n.score, summary, ""};
  const int64_t node = next_node++;
  if (!root) ++evaluations;
  KPILOT_RETURN_IF_ERROR(
      RecordRunNode(deps.store, run_id, node, parent, *proposal, n, out, &r.evaluation, r.object_sha));
  if (!r.object_sha.empty()) {
    std::lock_guard<std::mutex> l(seen_mu);
    seen.emplace(r.object_sha, node);
  }
  data[node] = std::move(n);
  parents[node] = parent;
  summaries[node] = summary;
  evaluations_by_node[node] = std::make_shared<const Evaluation>(r.evaluation);
  devices[node] = r.device;
  last_node = node;
  const NodeData& nd = data.at(node);
  KPILOT_RETURN_IF_ERROR(events.Add("evaluated", {{"node", node},
                                                  {"parent", parent},
                                                  {"proposal", *proposal},
                                                  {"object_sha", r.object_sha},
                                                  {"verdict", VerdictName(nd.verdict)},
                                                  {"speedup", nd.speedup},
                                                  {"params", ParamsText(nd.params, "(defaults)")},
                                                  {"summary", summary},
                                                  {"bottleneck", nd.bottleneck},
                                                  {"finding", nd.findings.empty() ? "" : nd.findings.front().id},
                                                  {"evaluations", evaluations},
                                                  {"budget", opts.budget},
                                                  {"device", r.device},
                                                  {"times", events.Times(r)},
                                                  {"best", incumbent >= 0 ? data.at(incumbent).speedup : 0.0}}));
  step.node = node;
  step.evaluation = r.evaluation;
  step.bottleneck = nd.bottleneck;
  step.achieved_fraction = nd.achieved_fraction;
  step.findings = nd.findings;
  KPILOT_RETURN_IF_ERROR(Promote(node, &step));
  step.incumbent = incumbent;
  return step;
}

Status AgentRun::State::RecordBest() {
  auto run = deps.store.GetRun(run_id);
  if (!run.ok()) return run.status();
  if (!run->has_value() || incumbent < 0) return Status::Ok();
  RunRecord rec = **run;
  rec.best_node = incumbent;
  rec.best_speedup = data.at(incumbent).speedup;
  return deps.store.UpdateRun(rec);
}

Status AgentRun::State::Promote(int64_t node, AgentStep* step) {
  const NodeData& c = data.at(node);
  if (!c.passed()) return Status::Ok();
  if (incumbent < 0) {
    incumbent = node;
    step->promotion = "first passing candidate";
    KPILOT_RETURN_IF_ERROR(
        events.Add("promote", {{"node", node}, {"speedup", c.speedup}, {"reason", "first passing candidate"}}));
    return RecordBest();
  }
  const NodeData& inc = data.at(incumbent);
  if (c.score <= inc.score) return Status::Ok();
  // The paired gate: the challenger timed against the incumbent in one process (PairedGate).
  EvalJobResult r = deps.executor.Submit(PairedGateJob(deps.task, opts, c, inc)).get();
  const GateOutcome gate = DecideGate(opts, node, incumbent, r, events.Times(r));
  if (r.status.ok() && r.evaluation.verdict.passed()) {
    step->paired_speedup = r.evaluation.speedup_geomean;
    step->paired_ci = r.evaluation.speedup_geomean_ci;
  }
  if (!gate.accepted()) {
    step->promotion = "rejected";
    return events.Add(gate.event, gate.payload);
  }
  incumbent = node;
  step->promotion = "promoted";
  KPILOT_RETURN_IF_ERROR(events.Add(gate.event, gate.payload));
  return RecordBest();
}

json AgentRun::State::NodeJson(int64_t id) const {
  const NodeData& n = data.at(id);
  json j = {{"node", id},
            {"parent", parents.at(id)},
            {"summary", summaries.at(id)},
            {"source_name", n.source_name},
            {"params", n.params},
            {"verdict", VerdictName(n.verdict)},
            {"speedup", n.speedup}};
  if (auto it = evaluations_by_node.find(id); it != evaluations_by_node.end() && n.passed())
    j["ci"] = ToJson(it->second->speedup_geomean_ci);
  if (!n.passed()) j["why"] = n.verdict_summary;
  return j;
}

Result<json> AgentRun::Profile(int64_t node) {
  if (!s_->data.count(node))
    return Status::InvalidInput("node " + std::to_string(node) + " is not a node of run " + std::to_string(s_->run_id));
  NodeData& n = s_->data.at(node);
  json j = {{"node", node}};
  std::string how = "static";
  std::string why_static;
  if (!n.passed()) {
    why_static = "the node did not pass (" + std::string(VerdictName(n.verdict)) + "): only its static findings";
  } else if (!s_->counters.Wanted()) {
    why_static = s_->deps.task.backend != Backend::kCuda ? "counters are measured on cuda tasks only"
                 : !s_->counters.off().empty()           ? s_->counters.off()
                                                         : "counter profiles are off for this session";
  } else {
    const auto& ev = s_->evaluations_by_node.at(node);
    s_->counters.Request(node, {ev, s_->devices.at(node)});
    KPILOT_RETURN_IF_ERROR(s_->counters.Collect(node));
    auto rec = s_->counters.Recorded(node);
    if (rec && !rec->contains("error")) {
      how = "counters";
      j["profiler"] = (*rec)["profiler"];
      j["kernels"] = (*rec)["kernels"];
      if (rec->contains("note")) j["note"] = (*rec)["note"];
    } else {
      why_static = rec ? (*rec)["error"].get<std::string>() : "no counter profile of a .cu candidate";
    }
  }
  j["profiled_with"] = how;
  if (!why_static.empty()) j["why_static"] = why_static;
  j["class"] = n.bottleneck;
  j["achieved_fraction_of_roofline"] = n.achieved_fraction;
  json findings = json::array();
  for (const auto& f : n.findings) findings.push_back(ToJson(f));
  j["findings"] = findings;
  if (auto it = s_->evaluations_by_node.find(node); it != s_->evaluations_by_node.end()) {
    json resources = json::array();
    for (const auto& r : it->second->compile.resources) resources.push_back(ToJson(r));
    if (!resources.empty()) j["resources"] = resources;
  }
  return j;
}

json AgentRun::History() const {
  json h = json::array();
  for (const auto& [id, n] : s_->data) h.push_back(s_->NodeJson(id));
  return h;
}

json AgentRun::Best() const {
  json j = {{"run", s_->run_id}, {"evaluations", s_->evaluations}};
  j["best"] = s_->incumbent >= 0 ? s_->NodeJson(s_->incumbent) : json();
  int64_t fastest = -1;
  for (const auto& [id, n] : s_->data)
    if (n.passed() && (fastest < 0 || n.score > s_->data.at(fastest).score)) fastest = id;
  if (fastest >= 0 && fastest != s_->incumbent) {
    j["fastest_unconfirmed"] = s_->NodeJson(fastest);
    j["note"] = "node " + std::to_string(fastest) +
                " measured faster alone, but its paired check against the best did not confirm it";
  }
  return j;
}

Result<AgentDraft> AgentRun::NodeSource(int64_t node) const {
  auto it = s_->data.find(node);
  if (it == s_->data.end())
    return Status::NotFound("node " + std::to_string(node) + " is not a node of run " + std::to_string(s_->run_id));
  AgentDraft d;
  d.source = it->second.source;
  d.source_name = it->second.source_name;
  d.params = it->second.params;
  d.summary = s_->summaries.at(node);
  d.parent = s_->parents.at(node);
  return d;
}

Result<OptimizeResult> AgentRun::Finish(const std::string& reason) {
  if (s_->finished) return Status::InvalidInput("the session's run is finished already");
  KPILOT_RETURN_IF_ERROR(s_->counters.Collect(std::nullopt, true));
  OptimizeResult res;
  res.run_id = s_->run_id;
  res.evaluations = s_->evaluations;
  const int64_t best = s_->incumbent;
  // One stop event, even when the final evaluation fails and Finish (or Abandon) comes again.
  if (!s_->stop_recorded) {
    KPILOT_RETURN_IF_ERROR(
        s_->events.Add("stop", {{"reason", reason}, {"evaluations", s_->evaluations}, {"best", best}}));
    s_->stop_recorded = true;
  }
  RunRecord run;
  run.id = s_->run_id;
  run.status = "finished";
  run.stop_reason = reason;
  run.best_node = best;
  if (best >= 0) {
    const NodeData& b = s_->data.at(best);
    res.best_node = best;
    res.best_params = b.params;
    res.best_source = b.source;
    res.best_source_name = b.source_name;
    EvalJob job;
    job.task = &s_->deps.task;
    job.source = b.path;
    job.params = b.params;
    job.options = BaseEvalOptions(s_->opts);
    EvalJobResult r = s_->deps.executor.Submit(std::move(job)).get();
    if (!r.status.ok()) return r.status;
    res.final = r.evaluation;
    KPILOT_RETURN_IF_ERROR(s_->events.Add("final", {{"node", best},
                                                    {"verdict", VerdictName(r.evaluation.verdict.kind)},
                                                    {"speedup", r.evaluation.speedup_geomean},
                                                    {"ci", ToJson(r.evaluation.speedup_geomean_ci)},
                                                    {"times", s_->events.Times(r)},
                                                    {"evaluation", ToJson(r.evaluation)}}));
    run.best_speedup = r.evaluation.verdict.passed() ? r.evaluation.speedup_geomean : 0;
  }
  KPILOT_RETURN_IF_ERROR(s_->deps.store.UpdateRun(run));
  s_->finished = true;
  return res;
}

Status AgentRun::Abandon(const std::string& reason) {
  if (s_->finished || s_->abandoned) return Status::Ok();
  s_->abandoned = true;
  if (!s_->stop_recorded)
    (void)s_->events.Add("stop", {{"reason", reason}, {"evaluations", s_->evaluations}, {"best", s_->incumbent}});
  RunRecord run;
  run.id = s_->run_id;
  run.status = "interrupted";
  run.stop_reason = reason;
  run.best_node = s_->incumbent;
  run.best_speedup = s_->incumbent >= 0 ? s_->data.at(s_->incumbent).speedup : 0;
  return s_->deps.store.UpdateRun(run);
}

}  // namespace kpilot
