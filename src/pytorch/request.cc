// The torch worker's `run` request (docs/pytorch.md, "Worker protocol").
#include "pytorch/pytorch.h"

namespace kpilot {

Result<nlohmann::json> BuildWorkerRequest(const Task& task, const PythonSubject& candidate,
                                          const PythonSubject& baseline, const EvalOptions& opt) {
  if (task.reference.kind != ReferenceKind::kPython)
    return Status::InvalidInput("task " + task.name +
                                " has a native reference: it runs in kpilot-runner, not the torch worker");
  auto selected = SelectWorkloads(task, opt.workloads);
  if (!selected.ok()) return selected.status();
  nlohmann::json workloads = nlohmann::json::array();
  for (const Workload* w : *selected) {
    if (task.format != TaskFormat::kFlashInfer) {
      workloads.push_back({{"name", w->name}});
      continue;
    }
    auto record = nlohmann::json::parse(w->record, nullptr, false);
    if (record.is_discarded() || !record.is_object())
      return Status::Internal("task " + task.name + ": workload " + w->name + " has no readable workload record");
    record["name"] = w->name;
    workloads.push_back(std::move(record));
  }
  const TimingConfig& t = opt.timing;
  const std::vector<uint64_t> drawn = EvaluationSeeds(opt);
  nlohmann::json seeds = drawn;
  return nlohmann::json{{"version", 1},
                        {"mode", "run"},
                        {"format", std::string(TaskFormatName(task.format))},
                        {"problem", task.reference.path.string()},
                        {"workloads", std::move(workloads)},
                        {"candidate", ToJson(candidate)},
                        {"baseline", ToJson(baseline)},
                        {"seeds", seeds},
                        // KernelBench's procedure checks 5 trials; kpilot's checks one call per seed.
                        {"check_trials", opt.check_trials > 0                 ? opt.check_trials
                                         : t.mode == TimingMode::kKernelBench ? 5
                                                                              : static_cast<int>(drawn.size())},
                        {"time", opt.time},
                        {"timing",
                         {{"mode", std::string(TimingModeName(t.mode))},
                          {"warmup", t.warmup},
                          {"min_reps", t.min_reps},
                          {"max_reps", t.max_reps},
                          {"max_seconds", t.max_seconds},
                          {"target_rel_ci", t.target_rel_ci}}},
                        {"tolerance", nullptr},  // the format's rule
                        {"libraries", task.libraries},
                        {"device", TorchDevice(opt)},
                        {"lock_dir", GpuLockDir()},
                        {"host_threads", opt.host_threads},
                        {"timeout_s", opt.timeout_s}};
}

}  // namespace kpilot
