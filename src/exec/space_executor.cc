#include "exec/space_executor.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "core/fs.h"

namespace kpilot {
namespace {

using nlohmann::json;

// Quantile(…, 0.5)'s definition (the mean of the middle two for an even count) in O(n), on a
// buffer the caller may reorder: the bootstrap takes thousands of medians per gate.
double MedianInPlace(std::vector<double>& v) {
  const size_t n = v.size();
  if (n == 0) return 0;
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(v.begin(), mid, v.end());
  if (n % 2) return *mid;
  return (*std::max_element(v.begin(), mid) + *mid) / 2;
}

// 1 / each candidate sample, scaled by the baseline median of the same run.
std::vector<double> ScaledSpeeds(const SpaceConfig& c) {
  const double base = Median(c.baseline_ms);
  std::vector<double> s;
  for (double x : c.candidate_ms)
    if (x > 0) s.push_back(base / x);
  return s;
}

double Sum(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }

}  // namespace

// The gate's statistic. The real gate times challenger and incumbent interleaved in one process
// and takes the median of their paired ratios. A sweep timed each config in its own run, paired
// with the task's baseline. Here each config's samples are scaled by its own run's baseline
// median (which cancels drift between the two runs: a loaded host, a warmer GPU), and the gate's
// ratio is the challenger's median scaled speed over the incumbent's: the ratio of the two
// configs' stored speedups (baseline median / candidate median). Its 95% CI is a percentile
// bootstrap that resamples the two configs' candidate samples independently (2000 resamples,
// rng() % n, so a seed gives the same CI on every platform). Per-pair baseline ratios would cancel
// drift too, but bring the baseline's sample noise in twice more; unpaired, the CI is still wider
// than an interleaved run's, so replays promote somewhat less readily than the live gate.
PairedRatio SpaceGate(const SpaceConfig& challenger, const SpaceConfig& incumbent, uint64_t seed) {
  const std::vector<double> a = ScaledSpeeds(challenger), b = ScaledSpeeds(incumbent);
  PairedRatio r;
  r.n = std::min(a.size(), b.size());
  if (a.empty() || b.empty()) return r;
  std::vector<double> ta = a, tb = b;
  const double mb = MedianInPlace(tb);
  r.ratio = mb > 0 ? MedianInPlace(ta) / mb : 0;
  constexpr int kResamples = 2000;
  std::mt19937_64 rng(seed);
  std::vector<double> boot;
  boot.reserve(kResamples);
  for (int k = 0; k < kResamples; ++k) {
    for (auto& x : ta) x = a[rng() % a.size()];
    for (auto& x : tb) x = b[rng() % b.size()];
    const double d = MedianInPlace(tb);
    boot.push_back(d > 0 ? MedianInPlace(ta) / d : 0);
  }
  r.ci = {Quantile(boot, 0.025), Quantile(boot, 0.975)};
  return r;
}

Result<Calibration> ReadCalibrationFile(const std::filesystem::path& file) {
  auto text = ReadFile(file);
  if (!text.ok()) return text.status();
  json j = json::parse(*text, nullptr, false);
  if (!j.is_object())
    return Status::InvalidInput(file.string() + ": not a JSON object; give the output of kpilot calibrate --json");
  for (const char* field : {"dram_bytes_per_s", "fp32_flops_per_s"})
    if (!j.contains(field) || !j[field].is_number() || j[field].get<double>() <= 0)
      return Status::InvalidInput(
          file.string() + ": " + field +
          " must be a positive number (bytes or FLOP per second); kpilot calibrate --json prints it");
  return CalibrationFromJson(j);
}

std::string SpaceExecutor::SetCalibration(const Calibration& c) {
  space_.calibration = c;
  if (space_.gpu.empty() || c.gpu.empty() || c.gpu.rfind(space_.gpu, 0) == 0) return "";
  return "the calibration is of " + c.gpu + ", and " + space_.file.filename().string() + " was swept on " + space_.gpu;
}

SpaceExecutor::SpaceExecutor(Space space, uint64_t seed) : space_(std::move(space)), seed_(seed) {
  for (size_t i = 0; i < space_.configs.size(); ++i) index_.emplace(space_.configs[i].params, i);
}

Result<std::unique_ptr<SpaceExecutor>> SpaceExecutor::Open(const std::filesystem::path& file, const Task& task,
                                                           uint64_t seed) {
  auto space = LoadSpace(file);
  if (!space.ok()) return space.status();
  if (space->task != task.name)
    return Status::InvalidInput(file.string() + " was swept for task \"" + space->task + "\", not for task \"" +
                                task.name + "\" (" + task.dir.string() + ")");
  return std::make_unique<SpaceExecutor>(std::move(space).value(), seed);
}

Result<const SpaceConfig*> SpaceExecutor::Find(const Task* task, const ParamValues& params) const {
  ParamValues full = params;
  if (task)
    for (const auto& p : task->params)
      if (!p.values.empty()) full.emplace(p.name, p.values.front());
  auto it = index_.find(full);
  if (it == index_.end())
    return Status::InvalidInput("folder: config " + ParamsText(full, "(no params)") + " is not in " +
                                space_.file.string() + " (" + std::to_string(space_.configs.size()) + " configs)");
  return &space_.configs[it->second];
}

// What every replayed evaluation shares: identity, verdict, compile record.
Evaluation SpaceExecutor::Base(const EvalJob& job, const SpaceConfig& c) const {
  Evaluation e;
  e.task = space_.task;
  e.candidate = job.source.string();
  e.params = job.params;
  if (job.task) e.backend = job.task->backend;
  e.baseline = space_.baseline;
  e.verdict.kind = SpaceVerdict(c.status).value();
  e.verdict.summary = c.status == "passed"    ? "passed (served from " + space_.file.filename().string() + ")"
                      : c.status == "not_run" ? "not run in the sweep" + (c.message.empty() ? "" : ": " + c.message)
                                              : c.message;
  if (e.verdict.summary.empty()) e.verdict.summary = c.status + " (served from the space)";
  e.verdict.evidence = {{"space", space_.file.string()}, {"status", c.status}};
  e.compile.ok = c.status != "compile_error";
  e.compile.resources = c.resources;
  if (!e.compile.ok) e.compile.first_error = c.message;
  e.run.status = c.status;
  e.run.message = c.message;
  e.run.calibration = space_.calibration;
  if (!c.mixes.empty()) e.run.details["static_mix"] = c.mixes;
  return e;
}

Result<EvalJobResult> SpaceExecutor::Serve(EvalJob& job) {
  auto found = Find(job.task, job.params);
  if (!found.ok()) return found.status();
  const SpaceConfig& c = **found;
  EvalJobResult r;
  r.compiled = c.status != "compile_error";
  if (job.compile_only) {
    // The stored report; the simulated clock is left alone (a probe's compiles run beside the
    // evaluations, and the evaluation's own compile is still charged in full).
    if (r.compiled) r.object_sha = c.object_sha, r.resources = c.resources;
    r.skipped = true;
    return r;
  }
  r.resources = c.resources;
  {
    // The toolchain caches objects: only a config's first compile costs its stored time.
    std::lock_guard<std::mutex> lock(mu_);
    if (compiled_.insert(&c - space_.configs.data()).second) r.compile_s = c.compile_s;
  }
  // As the local executor: only a compiled object is admitted (or refused as a duplicate).
  if (c.status != "compile_error") {
    r.object_sha = c.object_sha;
    if (job.admit && !job.admit(r.object_sha)) {
      r.skipped = true;
      std::lock_guard<std::mutex> lock(mu_);
      elapsed_s_ += r.compile_s;
      return r;
    }
  }
  r.evaluation = Base(job, c);
  Evaluation& e = r.evaluation;
  double run_s = (Sum(c.candidate_ms) + Sum(c.baseline_ms)) / 1000;
  if (job.options.baseline_source) {
    auto inc = Find(job.task, job.options.baseline_params);
    if (!inc.ok()) return inc.status().WithContext("the incumbent of a promotion check");
    const SpaceConfig& b = **inc;
    e.baseline = job.options.baseline_name;
    if (e.verdict.passed() && b.status != "passed") {
      e.verdict.kind = VerdictKind::kRuntimeError;
      e.verdict.summary =
          "the baseline (" + ParamsText(b.params, "(no params)") + ") did not pass in the sweep: " + b.status;
    }
    if (e.verdict.passed()) {
      const uint64_t pair = static_cast<uint64_t>(&c - space_.configs.data()) * 1000003u +
                            static_cast<uint64_t>(&b - space_.configs.data());
      WorkloadTiming w;
      w.workload = space_.workload;
      w.candidate_ms = c.candidate_ms;
      w.baseline_ms = b.candidate_ms;
      w.candidate = Summarize(w.candidate_ms);
      w.baseline = Summarize(w.baseline_ms);
      w.speedup = SpaceGate(c, b, seed_ * 0x9E3779B97F4A7C15ull + pair);
      w.method = "folder: both configs' stored samples, each scaled by its run's baseline median; bootstrap CI";
      w.candidate_reported_ms = w.candidate.median;
      w.baseline_reported_ms = w.baseline.median;
      e.timings.push_back(std::move(w));
      e.speedup_geomean = e.timings.back().speedup.ratio;
      e.speedup_geomean_ci = e.timings.back().speedup.ci;
    }
    run_s = (Sum(c.candidate_ms) + Sum(b.candidate_ms)) / 1000;
  } else if (e.verdict.passed()) {
    TimingRecord t;
    t.workload = space_.workload;
    t.candidate_ms = c.candidate_ms;
    t.baseline_ms = c.baseline_ms;
    t.method = "folder: stored sweep samples";
    e.run.timings.push_back(std::move(t));
    SummarizeTimings(e.run, &e);
  }
  if (job.counter_tools) r.counters_status = Status::Unavailable("a space run's space stores no counters");
  e.compile_s = r.compile_s;
  e.run_s = e.verdict.passed() ? run_s : 0;
  e.total_s = e.compile_s + e.run_s;
  std::lock_guard<std::mutex> lock(mu_);
  r.eval_start_s = elapsed_s_ + r.compile_s;
  r.eval_end_s = r.eval_start_s + e.run_s;
  elapsed_s_ = r.eval_end_s;
  busy_s_ += e.run_s;
  return r;
}

std::future<EvalJobResult> SpaceExecutor::Submit(EvalJob job) {
  auto served = Serve(job);
  EvalJobResult r;
  if (served.ok())
    r = std::move(served).value();
  else
    r.status = served.status();
  std::promise<EvalJobResult> p;
  p.set_value(std::move(r));
  return p.get_future();
}

double SpaceExecutor::BusySeconds() const {
  std::lock_guard<std::mutex> lock(mu_);
  return busy_s_;
}

double SpaceExecutor::ElapsedSeconds() const {
  std::lock_guard<std::mutex> lock(mu_);
  return elapsed_s_;
}

}  // namespace kpilot
