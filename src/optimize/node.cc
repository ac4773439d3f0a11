// Node analysis and the run's event log (node.h).
#include "optimize/node.h"

#include <algorithm>

#include "core/fs.h"
#include "core/sha256.h"
#include "profile/rule_tool.h"
#include "profile/collect.h"
#include "profile/profiler.h"
#include "profile/static_profile.h"

namespace kpilot {

using nlohmann::json;

void EvidenceFromJson(const json& ej, std::string* summary, std::string* evidence, std::string* metrics) {
  if (!ej.is_object()) return;
  json v = ej.value("verdict", json::object());
  *summary = v.value("summary", "");
  json ev = v.value("evidence", json::object());
  *evidence = ev.empty() ? "" : JsonText(ev);
  json m = json::object();
  json c = ej.value("compile", json::object());
  if (!c.value("resources", json::array()).empty()) m["kernels"] = c["resources"];
  json times = json::object();
  for (const auto& t : ej.value("timings", json::array()))
    times[t.value("workload", "")] = t.value("candidate", json::object()).value("median_ms", 0.0);
  if (!times.empty()) m["median_ms"] = times;
  for (const char* k : {"bottleneck", "achieved_fraction", "joules"})
    if (ej.contains(k)) m[k] = ej[k];
  *metrics = m.empty() ? "" : JsonText(m);
}

std::vector<Finding> FindingsFromJson(const json& a) {
  std::vector<Finding> out;
  if (a.is_array())
    for (const auto& f : a) out.push_back(FindingFromJson(f));
  return out;
}

ParamValues ParamsFromJson(const std::string& text) {
  ParamValues p;
  json j = json::parse(text, nullptr, false);
  if (j.is_object())
    for (auto it = j.begin(); it != j.end(); ++it) p[it.key()] = it->is_string() ? it->get<std::string>() : it->dump();
  return p;
}

void AnalyzeNode(const Task& task, const OptimizeOptions& o, const std::vector<std::unique_ptr<Tool>>& tools,
                 const Evaluation& e, NodeData* n) {
  n->verdict = e.verdict.kind;
  n->speedup = e.verdict.passed() ? e.speedup_geomean : 0;
  n->speedup_lo = e.verdict.passed() ? e.speedup_geomean_ci.lo : 0;
  n->score = n->speedup;
  if (o.objective == Objective::kMix && e.verdict.passed())
    n->score = MixScore(e.speedup_geomean, JoulesRatio(e), o.energy_weight);
  double joules = 0;
  for (const auto& t : e.timings) joules += t.joules_per_call;
  n->joules = e.timings.empty() ? 0 : joules / static_cast<double>(e.timings.size());
  EvidenceFromJson(ToJson(e), &n->verdict_summary, &n->verdict_evidence, &n->metrics);
  if (task.backend != Backend::kCuda || !e.verdict.passed() || e.compile.resources.empty()) return;
  // Stage-1 class from the measured time and the calibration; stage-2 tools on what needs no
  // counters (the static profile).
  ProfileContext ctx;
  ctx.compute_precision = std::string(DTypeName(task.compute_precision.value_or(task.outputs.front().dtype)));
  RooflineInput in;
  if (!e.timings.empty()) {
    const Workload* w = task.FindWorkload(e.timings.back().workload);
    if (w) {
      in.flops = w->flops;
      in.min_bytes = w->min_bytes;
    }
    in.time_ms = e.timings.back().candidate.median;
  }
  in.dram_bytes_per_s = e.run.calibration.dram_bytes_per_s;
  in.peak_flops_per_s = e.run.calibration.fp32_flops_per_s;
  ctx.roofline = ClassifyRoofline(in);
  n->bottleneck = std::string(BottleneckName(ctx.roofline.result));
  n->achieved_fraction = ctx.roofline.achieved_fraction;
  auto limits = SmLimitsFor(e.compile.resources.front().arch.empty() ? "sm_90a" : e.compile.resources.front().arch);
  // The kernels the calls launched (all of them where some workload was not traced, or nothing
  // was, as in a space run).
  std::vector<std::string> timed;
  for (const auto& t : e.timings) timed.push_back(t.workload);
  auto profiles = LaunchedOnly(StaticProfiles(e.compile), TracedKernelNames(e.run.details, timed));
  if (e.run.details.is_object() && e.run.details.contains("static_mix"))
    AdoptStoredMixes(e.run.details["static_mix"], &profiles);  // a space run's stored SASS mix
  for (const auto& sp : profiles) {
    ProfileContext k = ctx;
    k.kernel = sp.resources.name;
    k.static_profile = sp;
    if (limits.ok()) k.occupancy = ComputeOccupancy(*limits, 256, sp.resources.registers, sp.resources.shared_bytes);
    KernelReport r = AnalyzeKernel(k, tools, false);
    n->findings.insert(n->findings.end(), r.findings.begin(), r.findings.end());
  }
  std::sort(n->findings.begin(), n->findings.end(),
            [](const Finding& a, const Finding& b) { return a.severity > b.severity; });
  json m = n->metrics.empty() ? json::object() : json::parse(n->metrics, nullptr, false);
  m["bottleneck"] = n->bottleneck;
  m["achieved_fraction"] = n->achieved_fraction;
  n->metrics = JsonText(m);
}

Status RunEvents::Add(const std::string& kind, json payload) {
  auto seq = store_.AddRunEvent(run_id_, kind, JsonText(payload));
  if (!seq.ok()) return seq.status();
  payload["event"] = kind;
  payload["run"] = run_id_;
  progress_.Event(payload);
  return Status::Ok();
}

json RunEvents::Times(const EvalJobResult& r) const {
  if (space_run_ || r.submitted_s <= 0) return json::object();
  json t = {{"now_s", executor_.ElapsedSeconds()},
            {"submitted_s", r.submitted_s},
            {"compile_start_s", r.compile_start_s},
            {"compile_end_s", r.compile_end_s},
            {"eval_start_s", r.eval_start_s},
            {"eval_end_s", r.eval_end_s},
            {"device", r.device}};
  if (!r.where.empty()) t["where"] = r.where;
  // A counter job that took an evaluation made before ran no runner of its own for it.
  if (r.evaluation_reused) {
    t["evaluation_reused"] = true;
    if (r.sass_end_s > 0) t["sass_end_s"] = r.sass_end_s;
    return t;
  }
  // The runner's own steps (seconds since it started: context, objects, checks, timing, end),
  // which say how much of the time on the GPU went to checks and timing.
  const json& d = r.evaluation.run.details;
  if (d.is_object() && d.contains("timeline_s")) t["runner_timeline_s"] = d["timeline_s"];
  t["runner_s"] = r.evaluation.run_s;  // the evaluation's runner process, start to exit
  if (r.sass_end_s > 0) t["sass_end_s"] = r.sass_end_s;
  return t;
}

Status RecordRunNode(Store& store, int64_t run_id, int64_t node, int64_t parent, int64_t proposal, const NodeData& n,
                     const Outcome& out, const Evaluation* e, const std::string& object_sha) {
  RunNodeRecord r;
  r.run_id = run_id;
  r.node = node;
  r.parent = parent;
  r.proposal = proposal;
  r.source_name = n.source_name;
  auto blob = store.PutBlob(n.source);
  if (!blob.ok()) return blob.status();
  r.source_blob = *blob;
  r.params_json = json(n.params).dump();
  r.summary = out.summary;
  r.finding = out.finding;
  r.verdict = std::string(VerdictName(n.verdict));
  r.speedup = n.speedup;
  if (e) {
    json ej = ToJson(*e);
    ej["object_sha"] = object_sha;
    ej["bottleneck"] = n.bottleneck;
    ej["joules"] = n.joules;
    ej["achieved_fraction"] = n.achieved_fraction;
    ej["tree_speedup"] = out.speedup;  // what the tree was given (differs from speedup under --objective mix)
    json findings = json::array();
    for (const auto& f : n.findings) findings.push_back(ToJson(f));
    ej["findings"] = findings;
    auto rb = store.PutBlob(JsonText(ej));
    if (!rb.ok()) return rb.status();
    r.result_blob = *rb;
  }
  return store.AddRunNode(r);
}

EvalJob PairedGateJob(const Task& task, const OptimizeOptions& opts, const NodeData& challenger,
                      const NodeData& incumbent) {
  EvalJob job;
  job.task = &task;
  job.source = challenger.path;
  job.params = challenger.params;
  job.options = BaseEvalOptions(opts);
  job.options.baseline_source = incumbent.path;
  job.options.baseline_params = incumbent.params;
  return job;
}

GateOutcome DecideGate(const OptimizeOptions& opts, int64_t node, int64_t incumbent, const EvalJobResult& r,
                       const json& times) {
  const Evaluation& e = r.evaluation;
  // A gate that could not run (the incumbent failed as a baseline, the challenger failed this
  // time) keeps the incumbent: promotion needs evidence.
  if (!r.status.ok() || !e.verdict.passed())
    return {"reject",
            {{"node", node},
             {"incumbent", incumbent},
             {"paired_speedup", 0.0},
             {"ci", {0.0, 0.0}},
             {"reason", !r.status.ok() ? r.status.message() : e.verdict.summary},
             {"times", times}}};
  const GateDecision gate = PairedGate(opts, e);
  json payload = {{"node", node},
                  {"incumbent", incumbent},
                  {"paired_speedup", e.speedup_geomean},
                  {"ci", ToJson(e.speedup_geomean_ci)},
                  {"times", times}};
  if (opts.objective == Objective::kMix) {
    payload["joules_ratio"] = gate.joules_ratio;
    payload["score_lo"] = gate.score_lo;
  }
  return {gate.accept ? "promote" : "reject", payload};
}

Result<std::filesystem::path> MaterializeRunSource(Store& store, int64_t run_id, const std::string& source,
                                                   const std::string& name) {
  std::string ext = std::filesystem::path(name).extension().string();
  std::filesystem::path p = store.dir() / "runs" / std::to_string(run_id) / "sources" /
                            (Sha256Hex(source).substr(0, 16) + "-" + std::filesystem::path(name).stem().string() + ext);
  if (!std::filesystem::exists(p)) KPILOT_RETURN_IF_ERROR(WriteFileAtomic(p, source));
  return p;
}

json StartEventPayload(const Task& task, const OptimizeOptions& opts) {
  json start = {{"options", ToJson(opts)}};
  json dtypes = {{"inputs", json::object()}, {"outputs", json::object()}};
  for (const auto& t : task.inputs) dtypes["inputs"][t.name] = std::string(DTypeName(t.dtype));
  for (const auto& t : task.outputs) dtypes["outputs"][t.name] = std::string(DTypeName(t.dtype));
  if (task.compute_precision) dtypes["compute_precision"] = std::string(DTypeName(*task.compute_precision));
  start["dtypes"] = dtypes;
  json roofline = json::array();
  for (const auto& w : task.workloads)
    if (w.flops > 0 || w.min_bytes > 0)
      roofline.push_back({{"workload", w.name}, {"flops", w.flops}, {"min_bytes", w.min_bytes}});
  start["roofline"] = roofline;
  return start;
}

Result<std::vector<std::unique_ptr<Tool>>> RunTools(const OptimizeOptions& o) {
  auto tools = LoadTools(RuleToolDirs(o.task_dir, UserToolDir(), o.tool_dirs));
  if (!tools.ok()) return tools.status().WithContext("--tools");
  return tools;
}

std::filesystem::path RunLockPath(const Store& store, int64_t run_id) {
  return store.dir() / "runs" / std::to_string(run_id) / "lock";
}

}  // namespace kpilot
