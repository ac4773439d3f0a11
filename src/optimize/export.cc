#include <map>

#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "optimize/optimizer.h"

namespace kpilot {

namespace {

// What a final evaluation was verified on: the task's dtypes, workloads, backend, baseline, GPU,
// driver and toolkit. The GPU and driver come from the cuda runner ("driver" is the driver's
// release from NVML, "cuda_driver" the CUDA version it supports); the toolkit is the compiler
// that built the object. `where` is where the runner ran ("slurm job 12 on gpu-07"; "" for the
// machine kpilot ran on).
nlohmann::json VerifiedOn(const nlohmann::json& evaluation, const nlohmann::json& dtypes, const std::string& where) {
  const nlohmann::json gpu = evaluation.value("run_details", nlohmann::json::object()).value("gpu", nlohmann::json());
  const nlohmann::json compile = evaluation.value("compile", nlohmann::json::object());
  nlohmann::json v = {{"backend", evaluation.value("backend", "")},
                      {"baseline", evaluation.value("baseline", "")},
                      {"dtypes", dtypes},
                      {"workloads", evaluation.value("timings", nlohmann::json::array())},
                      {"gpu", gpu},
                      {"toolkit", compile.is_object() ? compile.value("compiler_version", "") : ""},
                      {"cutlass", compile.is_object() ? compile.value("cutlass_version", "") : ""},
                      {"compile", compile},
                      {"where", where.empty() ? "the machine kpilot ran on" : where}};
  if (gpu.is_object()) {
    v["driver"] = gpu.value("driver_version", "");
    v["cuda_driver"] = gpu.value("driver", "");
  }
  // Samples are long; the report keeps the summary per workload.
  for (auto& w : v["workloads"]) {
    w.erase("candidate_samples_ms");
    w.erase("baseline_samples_ms");
  }
  return v;
}

}  // namespace

Status ExportRun(Store& store, int64_t run_id, const std::filesystem::path& dir) {
  auto run = store.GetRun(run_id);
  if (!run.ok()) return run.status();
  if (!run->has_value())
    return Status::NotFound("run " + std::to_string(run_id) + " is not in store " + store.dir().string());
  auto nodes = store.ListRunNodes(run_id);
  if (!nodes.ok()) return nodes.status();
  auto events = store.ListRunEvents(run_id);
  if (!events.ok()) return events.status();
  // The reported best: the last "final" event's node, else the last promoted one, else the root.
  int64_t best = (*run)->best_node >= 0 ? (*run)->best_node : 0;
  nlohmann::json final_eval;
  std::string final_where;                     // where the final evaluation ran (its event's times)
  nlohmann::json dtypes;                       // the task's tensors, from the run's start event
  std::map<int64_t, nlohmann::json> counters;  // counter profiles by node
  for (const auto& e : *events) {
    auto p = nlohmann::json::parse(e.payload_json, nullptr, false);
    if (!p.is_object()) continue;
    if (e.kind == "counters" && !p.contains("error")) counters[p.value("node", int64_t{-1})] = p;
    if (e.kind == "promote") best = p.value("node", best);
    if (e.kind == "start" && p.contains("dtypes")) dtypes = p["dtypes"];
    if (e.kind == "final") {
      best = p.value("node", best);
      final_eval = p.value("evaluation", nlohmann::json());
      final_where = p.value("times", nlohmann::json::object()).value("where", "");
    }
  }
  const RunNodeRecord* node = nullptr;
  for (const auto& n : *nodes)
    if (n.node == best) node = &n;
  if (!node && nodes->empty())
    return Status::NotFound("run " + std::to_string(run_id) +
                            " has no evaluated node yet: resume it (kpilot optimize "
                            "--resume " +
                            std::to_string(run_id) + ") and export it after");
  if (!node)
    return Status::NotFound("run " + std::to_string(run_id) + " has no evaluated node " + std::to_string(best));
  auto source = store.GetBlob(node->source_blob);
  if (!source.ok()) return source.status();
  nlohmann::json params = nlohmann::json::parse(node->params_json, nullptr, false);
  // The params go in as #defines ahead of the source's own `#ifndef NAME` defaults, so the file
  // alone reproduces the node (kpilot eval / profile need no params).
  std::string baked;
  if (params.is_object() && !params.empty()) {
    baked = "// kpilot: run " + std::to_string(run_id) + ", node " + std::to_string(best) + " params\n";
    for (auto it = params.begin(); it != params.end(); ++it)
      baked += "#define " + it.key() + " " + (it->is_string() ? it->get<std::string>() : it->dump()) + "\n";
    baked += "\n";
  }
  KPILOT_RETURN_IF_ERROR(WriteFileAtomic(dir / node->source_name, baked + *source));
  KPILOT_RETURN_IF_ERROR(WriteFileAtomic(dir / "params.json", params.dump(2) + "\n"));
  nlohmann::json recorded;  // the node's own record: its evaluation, class and static findings
  if (!node->result_blob.empty()) {
    auto r = store.GetBlob(node->result_blob);
    if (r.ok()) recorded = nlohmann::json::parse(*r, nullptr, false);
  }
  nlohmann::json evaluation = final_eval.is_null() ? recorded : final_eval;
  // The profile summary: the node's counter profile when it has one, else its static findings.
  nlohmann::json profile = nlohmann::json::object();
  const nlohmann::json* from = counters.count(best) ? &counters[best] : recorded.is_object() ? &recorded : nullptr;
  if (from) {
    profile["source"] = counters.count(best) ? "counters (" + from->value("profiler", "") + ")" : "static";
    profile["class"] = from->value("bottleneck", "");
    if (recorded.is_object()) profile["achieved_fraction"] = recorded.value("achieved_fraction", 0.0);
    profile["findings"] = nlohmann::json::array();
    for (const auto& f : from->value("findings", nlohmann::json::array()))
      profile["findings"].push_back(
          {{"id", f.value("id", "")}, {"severity", f.value("severity", 0.0)}, {"guidance", f.value("guidance", "")}});
  }
  nlohmann::json report = {
      {"run", run_id},
      {"task", (*run)->task_name},
      {"task_dir", (*run)->task_dir},
      {"status", (*run)->status},
      {"stop_reason", (*run)->stop_reason},
      {"node", best},
      {"source", node->source_name},
      {"params", params},
      {"summary", node->summary},
      {"verdict", evaluation.is_object() ? evaluation["verdict"] : nlohmann::json(node->verdict)},
      {"speedup", evaluation.is_object() ? evaluation.value("speedup_geomean", node->speedup) : node->speedup},
      {"profile", profile},
      {"speedup_ci", evaluation.is_object() ? evaluation.value("speedup_geomean_ci", nlohmann::json::array())
                                            : nlohmann::json::array()},
      {"verified_on", evaluation.is_object() ? VerifiedOn(evaluation, dtypes, final_where) : nlohmann::json()},
  };
  return WriteFileAtomic(dir / "report.json", report.dump(2) + "\n");
}

}  // namespace kpilot
