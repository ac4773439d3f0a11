// The eager and torch.compile baselines of PyTorch-defined tasks, cached in the store per (problem,
// GPU, torch version, timing procedure, workload).
#include <cmath>
#include <map>

#include "core/fs.h"
#include "core/sha256.h"
#include "pytorch/pytorch.h"

namespace kpilot {

std::string ProblemSha(const Task& task) {
  if (task.reference.kind != ReferenceKind::kPython) return "";
  auto text = ReadFile(task.reference.path);
  return text.ok() ? Sha256Hex(*text) : "";
}

namespace {

// The geometric mean of baseline_ms[w] / the candidate's ms over the workloads; 0 unless every
// timed workload has a baseline time.
double GeomeanSpeedup(const std::map<std::string, double>& baseline_ms, const Evaluation& e) {
  double log_sum = 0;
  int n = 0;
  for (const auto& t : e.timings) {
    auto it = baseline_ms.find(t.workload);
    if (it == baseline_ms.end() || t.candidate_reported_ms <= 0) continue;
    log_sum += std::log(it->second / t.candidate_reported_ms);
    ++n;
  }
  return n > 0 && n == static_cast<int>(e.timings.size()) ? std::exp(log_sum / n) : 0.0;
}

}  // namespace

Result<nlohmann::json> TorchBaselines(Store* store, const Task& task, const Evaluation& e, TimingMode timing) {
  const RunReport report = e.run.Report();
  nlohmann::json out = {
      {"gpu", report.gpu_name}, {"torch", report.torch_version}, {"timing", std::string(TimingModeName(timing))}};
  std::string measured = e.baseline == "eager" ? "eager" : e.baseline == "torch.compile" ? "compile" : "";
  std::map<std::string, std::map<std::string, double>> ms;  // baseline → workload → ms
  std::map<std::string, bool> cached;
  for (const auto& t : e.timings)
    if (!measured.empty() && t.baseline_reported_ms > 0) ms[measured][t.workload] = t.baseline_reported_ms;
  std::string sha = ProblemSha(task);
  std::string gpu = out["gpu"], torch = out["torch"];
  if (gpu.empty()) gpu = out["gpu"] = "cpu";  // the worker names no GPU on the cpu device
  if (store && !sha.empty() && !gpu.empty() && !torch.empty()) {
    for (const auto& t : e.timings) {
      if (measured.empty() || t.baseline_reported_ms <= 0) continue;
      BaselineTimingRecord r{sha,
                             gpu,
                             torch,
                             measured,
                             out["timing"],
                             t.workload,
                             t.baseline_reported_ms,
                             t.statistic,
                             nlohmann::json(t.baseline_ms).dump(),
                             ""};
      KPILOT_RETURN_IF_ERROR(store->PutBaselineTiming(r));
    }
    auto rows = store->GetBaselineTimings(sha, gpu, torch, out["timing"]);
    if (!rows.ok()) return rows.status();
    for (const auto& r : *rows)
      if (r.baseline != measured) {
        ms[r.baseline][r.workload] = r.ms;
        cached[r.baseline] = true;
      }
  }
  for (const char* b : {"eager", "compile"}) {
    if (!ms.count(b)) {
      out[b] = nullptr;
      continue;
    }
    // This run's baseline: its paired speedup; the other: the cached time over the candidate's.
    double speedup = b == measured ? e.speedup_geomean : GeomeanSpeedup(ms[b], e);
    out[b] = {{"ms", ms[b]}, {"cached", cached[b]}, {"speedup", speedup}};
  }
  return out;
}

}  // namespace kpilot
