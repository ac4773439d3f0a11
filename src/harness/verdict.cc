#include <algorithm>
#include <cmath>

#include "core/fs.h"
#include "harness/harness.h"

namespace kpilot {

std::string_view VerdictName(VerdictKind k) {
  switch (k) {
    case VerdictKind::kCompileError:
      return "compile_error";
    case VerdictKind::kRuntimeError:
      return "runtime_error";
    case VerdictKind::kTimeout:
      return "timeout";
    case VerdictKind::kIncorrect:
      return "incorrect";
    case VerdictKind::kSuspicious:
      return "suspicious";
    case VerdictKind::kPassed:
      return "passed";
  }
  return "?";
}

std::optional<VerdictKind> ParseVerdictKind(std::string_view name) {
  for (VerdictKind k : {VerdictKind::kCompileError, VerdictKind::kRuntimeError, VerdictKind::kTimeout,
                        VerdictKind::kIncorrect, VerdictKind::kSuspicious, VerdictKind::kPassed})
    if (VerdictName(k) == name) return k;
  return std::nullopt;
}

namespace {

nlohmann::json SummaryJson(const SampleSummary& s) {
  return {{"n", s.n},          {"median_ms", s.median},
          {"mean_ms", s.mean}, {"min_ms", s.min},
          {"max_ms", s.max},   {"q1_ms", s.q1},
          {"q3_ms", s.q3},     {"median_ci_ms", {s.median_ci.lo, s.median_ci.hi}}};
}

}  // namespace

Verdict VerdictFromRun(const RunResult& run) {
  Verdict v;
  v.summary = run.message;
  if (run.status == "passed")
    v.kind = VerdictKind::kPassed;
  else if (run.status == "incorrect")
    v.kind = VerdictKind::kIncorrect;
  else if (run.status == "timeout")
    v.kind = VerdictKind::kTimeout;
  else if (run.status == "suspicious")
    v.kind = VerdictKind::kSuspicious;
  else
    v.kind = VerdictKind::kRuntimeError;
  if (v.summary.empty() && v.passed())
    v.summary = "every check passed (" + std::to_string(run.checks.size()) + " output comparisons)";

  nlohmann::json ev = nlohmann::json::object();
  ev["phase"] = run.phase;
  if (run.exit_signal) ev["signal"] = run.exit_signal;
  for (const auto& c : run.checks) {
    if (c.ok) continue;
    ev["workload"] = c.workload;
    ev["seed"] = c.seed;
    ev["output"] = c.output;
    ev["mismatches"] = c.mismatches;
    ev["numel"] = c.numel;
    ev["max_abs_error"] = JsonNumber(c.max_abs_error);
    ev["max_rel_error"] = JsonNumber(c.max_rel_error);
    ev["first_bad_index"] = c.first_bad_index;
    ev["first_bad_value"] = JsonNumber(c.first_bad_value);
    ev["first_bad_expected"] = JsonNumber(c.first_bad_expected);
    ev["guards_intact"] = c.guards_intact;
    if (c.first_bad_index >= 0) {
      v.summary += "; first bad element " + std::to_string(c.first_bad_index) + ": got " +
                   JsonNumber(c.first_bad_value).dump() + ", expected " + JsonNumber(c.first_bad_expected).dump();
    }
    break;
  }
  if (!run.candidate_stderr_tail.empty() && !v.passed()) ev["stderr_tail"] = Tail(run.candidate_stderr_tail, 1000);
  v.evidence = ev;
  return v;
}

void SummarizeTimings(const RunResult& run, Evaluation* e) {
  e->timings.clear();
  std::vector<double> ratios, los, his;
  for (const auto& t : run.timings) {
    WorkloadTiming w;
    w.workload = t.workload;
    w.candidate_ms = t.candidate_ms;
    w.baseline_ms = t.baseline_ms;
    w.method = t.method;
    w.candidate = Summarize(t.candidate_ms);
    w.baseline = Summarize(t.baseline_ms);
    w.speedup = PairedSpeedup(t.baseline_ms, t.candidate_ms);
    w.statistic = t.statistic;
    w.candidate_reported_ms = t.statistic == "mean" ? w.candidate.mean : w.candidate.median;
    w.baseline_reported_ms = t.statistic == "mean" ? w.baseline.mean : w.baseline.median;
    // A procedure that reports means (KernelBench's) defines speedup as the ratio of means, with
    // its own (bootstrap) CI.
    if (t.statistic == "mean") w.speedup = RatioOfMeans(t.baseline_ms, t.candidate_ms);
    w.joules_per_call = t.joules_per_call;
    w.watts = t.watts;
    w.baseline_joules_per_call = t.baseline_joules_per_call;
    w.baseline_watts = t.baseline_watts;
    ratios.push_back(w.speedup.ratio);
    los.push_back(w.speedup.ci.lo);
    his.push_back(w.speedup.ci.hi);
    e->timings.push_back(std::move(w));
  }
  e->speedup_geomean = GeometricMean(ratios);
  e->speedup_geomean_ci = {GeometricMean(los), GeometricMean(his)};
}

nlohmann::json ToJson(const Interval& ci) { return nlohmann::json::array({ci.lo, ci.hi}); }

nlohmann::json ToJson(const Evaluation& e) {
  // The trials' input seeds, in the order they ran (drawn per evaluation unless given: --seed
  // reproduces them).
  std::vector<uint64_t> seeds;
  for (const auto& c : e.run.checks)
    if (std::find(seeds.begin(), seeds.end(), c.seed) == seeds.end()) seeds.push_back(c.seed);
  nlohmann::json timings = nlohmann::json::array();
  for (const auto& t : e.timings)
    timings.push_back(
        {{"workload", t.workload},
         {"candidate", SummaryJson(t.candidate)},
         {"baseline", SummaryJson(t.baseline)},
         {"speedup", {{"ratio", t.speedup.ratio}, {"ci", {t.speedup.ci.lo, t.speedup.ci.hi}}, {"n", t.speedup.n}}},
         {"statistic", t.statistic},
         {"candidate_reported_ms", t.candidate_reported_ms},
         {"baseline_reported_ms", t.baseline_reported_ms},
         {"energy",
          {{"joules_per_call", t.joules_per_call},
           {"watts", t.watts},
           {"baseline_joules_per_call", t.baseline_joules_per_call},
           {"baseline_watts", t.baseline_watts}}},
         {"candidate_samples_ms", t.candidate_ms},
         {"baseline_samples_ms", t.baseline_ms},
         {"method", t.method}});
  nlohmann::json resources = nlohmann::json::array();
  for (const auto& r : e.compile.resources)
    resources.push_back({{"kernel", r.name},
                         {"arch", r.arch},
                         {"registers", r.registers},
                         {"shared_bytes", r.shared_bytes},
                         {"stack_bytes", r.stack_bytes},
                         {"spill_store_bytes", r.spill_stores},
                         {"spill_load_bytes", r.spill_loads}});
  return {{"kpilot_evaluation_version", 1},
          {"task", e.task},
          {"candidate", e.candidate},
          {"params", e.params},
          {"backend", BackendName(e.backend)},
          {"baseline", e.baseline},
          {"verdict",
           {{"kind", VerdictName(e.verdict.kind)}, {"summary", e.verdict.summary}, {"evidence", e.verdict.evidence}}},
          {"compile",
           {{"ok", e.compile.ok},
            {"cache_hit", e.compile.cache_hit},
            {"seconds", e.compile.seconds},
            {"first_error", e.compile.first_error},
            {"key", e.compile.key},
            {"command", e.compile.command},
            {"sass", e.compile.sass_status},
            {"resources", resources},
            {"compiler_version", e.compile.compiler_version},
            {"cutlass_version", e.compile.cutlass_version}}},
          {"timings", timings},
          {"speedup_geomean", e.speedup_geomean},
          {"speedup_geomean_ci", ToJson(e.speedup_geomean_ci)},
          {"sandbox", SandboxJson(e.run)},
          {"seeds", seeds},
          {"wall_s", {{"compile", e.compile_s}, {"run", e.run_s}, {"total", e.total_s}}},
          {"warnings", e.run.warnings},
          {"calibration",
           {{"gpu", e.run.calibration.gpu},
            {"dram_bytes_per_s", e.run.calibration.dram_bytes_per_s},
            {"fp32_flops_per_s", e.run.calibration.fp32_flops_per_s},
            {"measured_now", e.run.calibration_measured}}},
          {"run_details", e.run.details}};
}

}  // namespace kpilot
