// An Evaluation as a record: everything in it, as JSON, and back.
#include <exception>

#include "harness/harness.h"

namespace kpilot {

namespace {

using nlohmann::json;

json IntervalJson(const Interval& i) { return json::array({JsonNumber(i.lo), JsonNumber(i.hi)}); }
Interval IntervalFrom(const json& j) { return {NumFrom(j.at(0)), NumFrom(j.at(1))}; }

json Numbers(const std::vector<double>& v) {
  json a = json::array();
  for (double x : v) a.push_back(JsonNumber(x));
  return a;
}
std::vector<double> NumbersFrom(const json& j) {
  std::vector<double> v;
  for (const auto& x : j) v.push_back(NumFrom(x));
  return v;
}

json SummaryRecord(const SampleSummary& s) {
  return {{"n", s.n},
          {"median", JsonNumber(s.median)},
          {"mean", JsonNumber(s.mean)},
          {"min", JsonNumber(s.min)},
          {"max", JsonNumber(s.max)},
          {"q1", JsonNumber(s.q1)},
          {"q3", JsonNumber(s.q3)},
          {"median_ci", IntervalJson(s.median_ci)},
          {"mean_ci", IntervalJson(s.mean_ci)}};
}
SampleSummary SummaryFrom(const json& j) {
  SampleSummary s;
  s.n = j.at("n").get<size_t>();
  s.median = NumFrom(j.at("median"));
  s.mean = NumFrom(j.at("mean"));
  s.min = NumFrom(j.at("min"));
  s.max = NumFrom(j.at("max"));
  s.q1 = NumFrom(j.at("q1"));
  s.q3 = NumFrom(j.at("q3"));
  s.median_ci = IntervalFrom(j.at("median_ci"));
  s.mean_ci = IntervalFrom(j.at("mean_ci"));
  return s;
}

VerdictKind VerdictKindFrom(const std::string& name) {
  if (auto k = ParseVerdictKind(name)) return *k;
  throw std::runtime_error("unknown verdict \"" + name + "\"");
}

Backend BackendFrom(const std::string& name) {
  for (Backend b : {Backend::kHost, Backend::kCuda})
    if (BackendName(b) == name) return b;
  throw std::runtime_error("unknown backend \"" + name + "\"");
}

}  // namespace

json ToJson(const KernelResources& r) {
  return {{"name", r.name},
          {"mangled", r.mangled},
          {"arch", r.arch},
          {"registers", r.registers},
          {"shared_bytes", r.shared_bytes},
          {"stack_bytes", r.stack_bytes},
          {"spill_stores", r.spill_stores},
          {"spill_loads", r.spill_loads},
          {"constant_bytes", r.constant_bytes},
          {"barriers", r.barriers}};
}

KernelResources KernelResourcesFromJson(const json& j) {
  KernelResources r;
  r.name = j.at("name").get<std::string>();
  r.mangled = j.at("mangled").get<std::string>();
  r.arch = j.at("arch").get<std::string>();
  r.registers = j.at("registers").get<int>();
  r.shared_bytes = j.at("shared_bytes").get<int64_t>();
  r.stack_bytes = j.at("stack_bytes").get<int64_t>();
  r.spill_stores = j.at("spill_stores").get<int64_t>();
  r.spill_loads = j.at("spill_loads").get<int64_t>();
  r.constant_bytes = j.at("constant_bytes").get<int64_t>();
  r.barriers = j.at("barriers").get<int>();
  return r;
}

json RecordJson(const Evaluation& e) {
  json timings = json::array();
  for (const auto& t : e.timings)
    timings.push_back(
        {{"workload", t.workload},
         {"candidate", SummaryRecord(t.candidate)},
         {"baseline", SummaryRecord(t.baseline)},
         {"speedup", {{"n", t.speedup.n}, {"ratio", JsonNumber(t.speedup.ratio)}, {"ci", IntervalJson(t.speedup.ci)}}},
         {"candidate_ms", Numbers(t.candidate_ms)},
         {"baseline_ms", Numbers(t.baseline_ms)},
         {"method", t.method},
         {"statistic", t.statistic},
         {"candidate_reported_ms", JsonNumber(t.candidate_reported_ms)},
         {"baseline_reported_ms", JsonNumber(t.baseline_reported_ms)},
         {"joules_per_call", JsonNumber(t.joules_per_call)},
         {"watts", JsonNumber(t.watts)},
         {"baseline_joules_per_call", JsonNumber(t.baseline_joules_per_call)},
         {"baseline_watts", JsonNumber(t.baseline_watts)}});
  json resources = json::array();
  for (const auto& r : e.compile.resources) resources.push_back(ToJson(r));
  const CompileOutput& c = e.compile;
  return {{"kpilot_evaluation_record_version", 1},
          {"verdict",
           {{"kind", VerdictName(e.verdict.kind)}, {"summary", e.verdict.summary}, {"evidence", e.verdict.evidence}}},
          {"task", e.task},
          {"candidate", e.candidate},
          {"params", e.params},
          {"backend", BackendName(e.backend)},
          {"baseline", e.baseline},
          {"compile",
           {{"ok", c.ok},
            {"object", c.object.string()},
            {"log", c.log},
            {"first_error", c.first_error},
            {"timed_out", c.timed_out},
            {"seconds", c.seconds},
            {"cache_hit", c.cache_hit},
            {"key", c.key},
            {"command", c.command},
            {"resources", resources},
            {"sass", c.sass},
            {"sass_status", c.sass_status},
            {"compiler_version", c.compiler_version},
            {"cutlass_version", c.cutlass_version}}},
          {"timings", timings},
          {"speedup_geomean", JsonNumber(e.speedup_geomean)},
          {"speedup_geomean_ci", IntervalJson(e.speedup_geomean_ci)},
          {"run", ToJson(e.run)},
          {"compile_s", e.compile_s},
          {"run_s", e.run_s},
          {"total_s", e.total_s}};
}

Result<Evaluation> EvaluationFromRecord(const json& j) {
  try {
    if (j.at("kpilot_evaluation_record_version").get<int>() != 1)
      return Status::InvalidInput("an evaluation record of an unknown version");
    Evaluation e;
    const json& v = j.at("verdict");
    e.verdict.kind = VerdictKindFrom(v.at("kind").get<std::string>());
    e.verdict.summary = v.at("summary").get<std::string>();
    e.verdict.evidence = v.at("evidence");
    e.task = j.at("task").get<std::string>();
    e.candidate = j.at("candidate").get<std::string>();
    e.params = j.at("params").get<ParamValues>();
    e.backend = BackendFrom(j.at("backend").get<std::string>());
    e.baseline = j.at("baseline").get<std::string>();
    const json& c = j.at("compile");
    e.compile.ok = c.at("ok").get<bool>();
    e.compile.object = c.at("object").get<std::string>();
    e.compile.log = c.at("log").get<std::string>();
    e.compile.first_error = c.at("first_error").get<std::string>();
    e.compile.timed_out = c.at("timed_out").get<bool>();
    e.compile.seconds = c.at("seconds").get<double>();
    e.compile.cache_hit = c.at("cache_hit").get<bool>();
    e.compile.key = c.at("key").get<std::string>();
    e.compile.command = c.at("command").get<std::vector<std::string>>();
    for (const auto& r : c.at("resources")) e.compile.resources.push_back(KernelResourcesFromJson(r));
    e.compile.sass = c.at("sass").get<std::string>();
    e.compile.sass_status = c.at("sass_status").get<std::string>();
    e.compile.compiler_version = c.value("compiler_version", "");  // records before it existed have none
    e.compile.cutlass_version = c.value("cutlass_version", "");
    for (const auto& t : j.at("timings")) {
      WorkloadTiming w;
      w.workload = t.at("workload").get<std::string>();
      w.candidate = SummaryFrom(t.at("candidate"));
      w.baseline = SummaryFrom(t.at("baseline"));
      const json& s = t.at("speedup");
      w.speedup.n = s.at("n").get<size_t>();
      w.speedup.ratio = NumFrom(s.at("ratio"));
      w.speedup.ci = IntervalFrom(s.at("ci"));
      w.candidate_ms = NumbersFrom(t.at("candidate_ms"));
      w.baseline_ms = NumbersFrom(t.at("baseline_ms"));
      w.method = t.at("method").get<std::string>();
      w.statistic = t.at("statistic").get<std::string>();
      w.candidate_reported_ms = NumFrom(t.at("candidate_reported_ms"));
      w.baseline_reported_ms = NumFrom(t.at("baseline_reported_ms"));
      w.joules_per_call = NumFrom(t.at("joules_per_call"));
      w.watts = NumFrom(t.at("watts"));
      w.baseline_joules_per_call = NumFrom(t.at("baseline_joules_per_call"));
      w.baseline_watts = NumFrom(t.at("baseline_watts"));
      e.timings.push_back(std::move(w));
    }
    e.speedup_geomean = NumFrom(j.at("speedup_geomean"));
    e.speedup_geomean_ci = IntervalFrom(j.at("speedup_geomean_ci"));
    auto run = RunResultFromJson(j.at("run"));
    if (!run.ok()) return run.status();
    e.run = std::move(run).value();
    e.compile_s = j.at("compile_s").get<double>();
    e.run_s = j.at("run_s").get<double>();
    e.total_s = j.at("total_s").get<double>();
    return e;
  } catch (const std::exception& ex) {
    return Status::InvalidInput(std::string("an evaluation record is malformed: ") + ex.what());
  }
}

}  // namespace kpilot
