// The report model of an optimize run (report.h): its nodes with everything recorded about each,
// and the series the progress, roofline and timeline views draw. Benches and lineage walks are
// collected in collect_other.cc; both share the run header built here.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "optimize/optimizer.h"
#include "report/collect_internal.h"
#include "task/loader.h"

namespace kpilot::report {

using nlohmann::json;

namespace internal {

json ParseObject(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  return j.is_object() ? j : json::object();
}

std::string Cut(const std::string& text, size_t max_bytes) {
  if (max_bytes == 0 || text.size() <= max_bytes) return text;
  size_t end = max_bytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;  // not inside a UTF-8 sequence
  return text.substr(0, end) +
         fmt::format("\n… [{} more bytes not shown; the whole text is in the store]", text.size() - end);
}

json RunHeader(Store& store, const RunRecord& r) {
  const std::string shown = ShownRunStatus(store, r);
  std::string note;
  if (shown == "running")
    note = "This run is still going: the report shows what was recorded up to now.";
  else if (shown == "interrupted")
    note =
        "This run was interrupted (its process is gone): the report shows what was recorded; "
        "continue it with --resume " +
        std::to_string(r.id) + ".";
  else if (shown == "failed")
    note = "This run failed" + (r.stop_reason.empty() ? std::string() : ": " + r.stop_reason) +
           ". The report shows what was recorded before it stopped.";
  return {{"id", r.id},
          {"task", r.task_name},
          {"task_dir", r.task_dir},
          {"status", shown},
          {"note", note},
          {"stop_reason", r.stop_reason},
          {"best_speedup", r.best_speedup},
          {"best_node", r.best_node},
          {"created_at", r.created_at},
          {"updated_at", r.updated_at},
          {"config", ParseObject(r.config_json)}};
}

}  // namespace internal

namespace {

using internal::Cut;
using internal::ParseObject;

// The part of an evaluation JSON a node's panel shows (the samples stay in the store).
json EvaluationGist(const json& e) {
  json timings = json::array();
  for (const auto& t : e.value("timings", json::array())) {
    const json& s = t.value("speedup", json::object());
    timings.push_back({{"workload", t.value("workload", "")},
                       {"candidate_ms", t.value("candidate_reported_ms", 0.0)},
                       {"baseline_ms", t.value("baseline_reported_ms", 0.0)},
                       {"statistic", t.value("statistic", "")},
                       {"speedup", s.value("ratio", 0.0)},
                       {"ci", s.value("ci", json::array())},
                       {"n", s.value("n", 0)},
                       {"method", t.value("method", "")}});
  }
  const json& compile = e.value("compile", json::object());
  const json& cal = e.value("calibration", json::object());
  json g = {{"verdict", e.value("verdict", json::object())},
            {"speedup", e.value("speedup_geomean", 0.0)},
            {"ci", e.value("speedup_geomean_ci", json::array())},
            {"timings", timings},
            {"findings", e.value("findings", json::array())},
            {"bottleneck", e.value("bottleneck", "")},
            {"achieved_fraction", e.value("achieved_fraction", 0.0)},
            {"joules", e.value("joules", 0.0)},
            {"warnings", e.value("warnings", json::array())},
            {"compile",
             {{"ok", compile.value("ok", false)},
              {"cache_hit", compile.value("cache_hit", false)},
              {"seconds", compile.value("seconds", 0.0)},
              {"first_error", compile.value("first_error", "")},
              {"compiler", compile.value("compiler_version", "")}}},
            {"gpu", cal.value("gpu", "")},
            {"backend", e.value("backend", "")}};
  return g;
}

// The ceilings the roofline draws: the first evaluation that carries a calibration.
void TakeCeilings(const json& e, json* roofline) {
  if (!(*roofline)["ceilings"].is_null()) return;
  const json& cal = e.value("calibration", json::object());
  const double bw = cal.value("dram_bytes_per_s", 0.0), flops = cal.value("fp32_flops_per_s", 0.0);
  if (bw <= 0 && flops <= 0) return;
  (*roofline)["gpu"] = cal.value("gpu", "");
  (*roofline)["ceilings"] = {{"dram_bytes_per_s", bw}, {"fp32_flops_per_s", flops}};
}

// The task's flops and bytes per workload, which place every node on the roofline: from the run's
// start event when it recorded them, else from the task folder (native tasks only).
json RooflineWorkloads(const json& start, const std::string& task_dir, std::string* why_not) {
  if (start.contains("roofline")) return start["roofline"];
  auto task = LoadTask(task_dir);
  if (!task.ok()) {
    *why_not = "the task folder " + task_dir + " could not be read (" + task.status().message() +
               "): its flops and bytes per workload are unknown";
    return json::array();
  }
  json w = json::array();
  for (const auto& wl : task->workloads)
    if (wl.flops > 0 || wl.min_bytes > 0)
      w.push_back({{"workload", wl.name}, {"flops", wl.flops}, {"min_bytes", wl.min_bytes}});
  if (w.empty()) *why_not = "the task declares no [roofline] flops and bytes formulas";
  return w;
}

// One bar of the GPU timeline from an event's executor times: its compile, then its time on the
// queue (evaluation, promotion check or profile).
void AddJobs(const json& times, const std::string& kind, int64_t node, int64_t device, json* jobs) {
  if (!times.is_object() || times.empty()) return;
  const double cs = times.value("compile_start_s", 0.0), ce = times.value("compile_end_s", 0.0);
  const double es = times.value("eval_start_s", 0.0), ee = times.value("eval_end_s", 0.0);
  const int64_t dev = times.value("device", device);
  if (ce > cs && cs > 0)
    jobs->push_back({{"lane", "compile"}, {"kind", "compile"}, {"node", node}, {"start", cs}, {"end", ce}});
  if (ee > es && es > 0 && !times.value("evaluation_reused", false))
    jobs->push_back({{"lane", "queue"},
                     {"device", dev},
                     {"where", times.value("where", "")},
                     {"kind", kind},
                     {"node", node},
                     {"start", es},
                     {"end", ee}});
}

}  // namespace

namespace internal {

Result<json> CollectRun(Store& store, const RunRecord& run, const CollectOptions& options) {
  json model = {{"kind", "run"}, {"run", RunHeader(store, run)}};
  auto nodes = store.ListRunNodes(run.id);
  if (!nodes.ok()) return nodes.status();
  auto events = store.ListRunEvents(run.id);
  if (!events.ok()) return events.status();

  // What the events say of each node.
  std::map<int64_t, json> proposals;    // proposal seq → payload (less its source)
  std::map<int64_t, json> counters;     // node → its counter profile
  std::map<int64_t, json> transcripts;  // parent node → the exchanges of its expansions
  std::map<int64_t, json> evaluated;    // node → the evaluated event
  json promotions = json::array(), progress = json::array(), jobs = json::array(), warnings = json::array();
  json start = json::object(), stop = json::object(), spend = json::object(), final_event = json::object();
  double end_s = 0;
  int64_t best_so_far_node = -1;
  double best_so_far = 0;
  for (const auto& e : *events) {
    json p = ParseObject(e.payload_json);
    const json& times = p.value("times", json::object());
    end_s = std::max(end_s, times.value("now_s", 0.0));
    if (e.kind == "start") start = p;
    if (e.kind == "stop") stop = p;
    if (e.kind == "spend") spend = p;
    if (e.kind == "final") final_event = p;
    if (e.kind == "warning" || e.kind == "generator_failure")
      warnings.push_back({{"kind", e.kind}, {"at", e.created_at}, {"payload", p}});
    if (e.kind == "proposal") {
      p.erase("source");
      proposals[e.seq] = p;
    }
    if (e.kind == "counters") counters[p.value("node", int64_t{-1})] = p;
    if (e.kind == "transcript" && options.transcripts) {
      json t = {{"endpoint", p.value("endpoint", "")},
                {"status", p.value("status", 0)},
                {"seconds", p.value("seconds", 0.0)},
                {"usage", p.value("usage", json::object())},
                {"error", p.value("error", "")}};
      auto text = store.GetBlob(p.value("blob", ""));
      t["text"] = text.ok() ? Cut(*text, options.max_text_bytes) : "(not readable: " + text.status().message() + ")";
      transcripts[p.value("parent", int64_t{-1})].push_back(t);
    }
    if (e.kind == "evaluated") {
      const int64_t node = p.value("node", int64_t{-1});
      evaluated[node] = p;
      AddJobs(times, "evaluate", node, p.value("device", int64_t{-1}), &jobs);
      progress.push_back({{"evaluations", p.value("evaluations", 0)},
                          {"t_s", times.value("now_s", 0.0)},
                          {"node", node},
                          {"verdict", p.value("verdict", "")},
                          {"speedup", p.value("speedup", 0.0)},
                          {"best", p.value("best", 0.0)}});
    }
    if (e.kind == "promote" || e.kind == "reject") {
      const int64_t node = p.value("node", int64_t{-1});
      AddJobs(times, "promotion check", node, -1, &jobs);
      const bool promoted = e.kind == "promote";
      if (promoted) best_so_far_node = node, best_so_far = p.value("speedup", p.value("paired_speedup", 0.0));
      promotions.push_back({{"node", node},
                            {"promoted", promoted},
                            {"incumbent", p.value("incumbent", int64_t{-1})},
                            {"paired_speedup", p.value("paired_speedup", 0.0)},
                            {"ci", p.value("ci", json::array())},
                            {"reason", p.value("reason", "")},
                            {"evaluations", progress.empty() ? 0 : progress.back().value("evaluations", 0)},
                            {"t_s", times.value("now_s", progress.empty() ? 0.0 : progress.back().value("t_s", 0.0))},
                            {"best_node", best_so_far_node},
                            {"best", best_so_far}});
    }
    if (e.kind == "counters") AddJobs(times, "profile", p.value("node", int64_t{-1}), -1, &jobs);
  }

  // The nodes, their sources once each by blob.
  json sources = json::object(), out_nodes = json::array();
  json roofline = {{"gpu", ""}, {"ceilings", nullptr}, {"workloads", json::array()}, {"note", ""}};
  std::map<int64_t, int64_t> parent_of;
  std::set<int64_t> promoted;
  for (const auto& pr : promotions)
    if (pr.value("promoted", false)) promoted.insert(pr.value("node", int64_t{-1}));
  for (const auto& n : *nodes) {
    parent_of[n.node] = n.parent;
    if (!sources.contains(n.source_blob)) {
      auto text = store.GetBlob(n.source_blob);
      sources[n.source_blob] =
          text.ok() ? Cut(*text, options.max_text_bytes) : "(source not readable: " + text.status().message() + ")";
    }
    json node = {{"id", n.node},
                 {"parent", n.parent},
                 {"source", n.source_blob},
                 {"source_name", n.source_name},
                 {"params", ParseObject(n.params_json)},
                 {"summary", n.summary},
                 {"finding", n.finding},
                 {"verdict", n.verdict},
                 {"speedup", n.speedup},
                 {"created_at", n.created_at},
                 {"promoted", promoted.count(n.node) > 0}};
    if (auto it = proposals.find(n.proposal); it != proposals.end()) {
      node["cards_offered"] = it->second.value("skills_offered", json::array());
      node["cards_applied"] = it->second.value("skills_applied", json::array());
    }
    if (auto it = evaluated.find(n.node); it != evaluated.end()) {
      node["device"] = it->second.value("device", int64_t{-1});
      node["t_s"] = it->second.value("times", json::object()).value("now_s", 0.0);
      node["evaluations"] = it->second.value("evaluations", 0);
    }
    if (auto it = counters.find(n.node); it != counters.end()) node["profile"] = it->second;
    if (auto it = transcripts.find(n.parent); it != transcripts.end()) node["transcripts"] = it->second;
    if (!n.result_blob.empty()) {
      auto text = store.GetBlob(n.result_blob);
      json e = text.ok() ? ParseObject(*text) : json::object();
      if (text.ok()) {
        node["evaluation"] = EvaluationGist(e);
        TakeCeilings(e, &roofline);
      } else {
        node["note"] = "its evaluation is not readable: " + text.status().message();
      }
    }
    out_nodes.push_back(std::move(node));
  }
  // The promoted path: the best node back to the root.
  json path = json::array();
  for (int64_t at = run.best_node, guard = 0; at >= 0 && guard <= static_cast<int64_t>(nodes->size()); ++guard) {
    path.push_back(at);
    auto it = parent_of.find(at);
    at = it == parent_of.end() ? -1 : it->second;
  }
  std::reverse(path.begin(), path.end());

  std::string why_not;
  roofline["workloads"] = RooflineWorkloads(start, run.task_dir, &why_not);
  if (roofline["ceilings"].is_null())
    why_not += (why_not.empty() ? "" : "; ") +
               std::string(
                   "no evaluation carries a calibration of the GPU's ceilings (host runs have none; "
                   "kpilot calibrate measures them)");
  roofline["note"] = why_not;

  model["sources"] = sources;
  model["nodes"] = out_nodes;
  model["best_path"] = path;
  model["promotions"] = promotions;
  model["progress"] = progress;
  model["roofline"] = roofline;
  model["timeline"] = {{"jobs", jobs}, {"end_s", end_s}};
  model["stop"] = stop;
  model["spend"] = spend;
  model["warnings"] = warnings;
  if (!final_event.empty()) {
    final_event.erase("evaluation");  // the best node's panel holds it
    model["final"] = final_event;
  }
  return model;
}

}  // namespace internal
}  // namespace kpilot::report
