#include "task/task.h"

namespace kpilot {

std::string_view BackendName(Backend b) { return b == Backend::kCuda ? "cuda" : "host"; }

std::string_view TaskFormatName(TaskFormat f) {
  switch (f) {
    case TaskFormat::kNative: return "native";
    case TaskFormat::kKernelBench: return "kernelbench";
    case TaskFormat::kFlashInfer: return "flashinfer";
  }
  return "?";
}

std::string_view InitKindName(InitKind k) {
  switch (k) {
    case InitKind::kNormal: return "normal";
    case InitKind::kUniform: return "uniform";
    case InitKind::kRandint: return "randint";
    case InitKind::kRange: return "range";
    case InitKind::kConstant: return "constant";
  }
  return "?";
}

const Workload* Task::FindWorkload(const std::string& n) const {
  for (const auto& w : workloads)
    if (w.name == n) return &w;
  return nullptr;
}

const SourceRef& Task::Baseline() const { return baselines.empty() ? reference : baselines.front(); }

std::vector<int64_t> Task::ShapeOf(const TensorSpec& t, const Workload& w) const {
  std::vector<int64_t> shape;
  for (const auto& axis : t.shape) {
    auto it = w.axes.find(axis);
    shape.push_back(it == w.axes.end() ? 0 : it->second);
  }
  return shape;
}

Tolerance Task::ToleranceOf(const TensorSpec& output) const {
  return output.tolerance ? *output.tolerance : tolerance;
}

std::string ParamsText(const ParamValues& p, std::string_view if_empty) {
  std::string s;
  for (const auto& [k, v] : p) s += (s.empty() ? "" : " ") + k + "=" + v;
  return s.empty() ? std::string(if_empty) : s;
}

}  // namespace kpilot
