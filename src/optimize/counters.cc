// Counter profiles of new bests (counters.h).
#include "optimize/counters.h"

#include <chrono>

#include "core/fs.h"
#include "core/subprocess.h"
#include "profile/collect.h"
#include "profile/profiler.h"

namespace kpilot {

using nlohmann::json;

CounterProfiles::~CounterProfiles() {
  for (auto& [node, f] : pending_)
    if (f.valid()) f.wait();
}

bool CounterProfiles::Wanted() const {
  // Under --feedback none the generator sees no findings or numbers: a profile would be GPU time
  // spent for nothing.
  return opts_.counters && opts_.space_file.empty() && task_.backend == Backend::kCuda && off_.empty() &&
         opts_.feedback != FeedbackMode::kNone;
}

void CounterProfiles::Want(int64_t node, ProfileSource have) {
  if (!Wanted() || done_.count(node) || pending_.count(node)) return;
  // An evaluation at hand is kept over none (a resumed run wants its incumbent again with none).
  auto it = wanted_.find(node);
  if (it == wanted_.end())
    wanted_.emplace(node, std::move(have));
  else if (!it->second.evaluation)
    it->second = std::move(have);
}

void CounterProfiles::ProfileIfWanted(int64_t node) {
  auto it = wanted_.find(node);
  if (it == wanted_.end()) return;
  ProfileSource have = std::move(it->second);
  wanted_.erase(it);
  Request(node, std::move(have));
}

void CounterProfiles::Request(int64_t node, ProfileSource have) {
  if (!Wanted() || done_.count(node) || pending_.count(node)) return;
  const NodeData& n = nodes_.at(node);
  // Only a compiled kernel is profiled (a KernelBench ModelNew .py or a flashinfer solution is not).
  if (n.path.extension() != ".cu") return;
  EvalJob job;
  job.task = &task_;
  job.source = n.path;
  job.params = n.params;
  job.options = BaseEvalOptions(opts_);
  // One workload, as `kpilot profile` does by default: the run's last (usually the largest).
  job.options.workloads = {opts_.workloads.empty() ? task_.workloads.back().name : opts_.workloads.back()};
  job.options.energy = false;  // the profile needs the time and trace, not joules
  job.counter_tools = &tools_;
  job.ahead = true;  // a proposal may wait for it
  job.counters_of = std::move(have.evaluation);
  job.counters_of_device = have.device;
  if (!ncu_) ncu_ = FindOnPath("ncu");
  job.counters.ncu_path = *ncu_;
  pending_[node] = executor_.Submit(std::move(job));
}

void CounterProfiles::Apply(int64_t node, const json& payload) {
  auto it = nodes_.find(node);
  if (it == nodes_.end() || payload.contains("error")) return;
  NodeData& n = it->second;
  n.findings = FindingsFromJson(payload.value("findings", json::array()));
  if (!payload.value("bottleneck", "").empty()) n.bottleneck = payload.value("bottleneck", "");
  json m = n.metrics.empty() ? json::object() : json::parse(n.metrics, nullptr, false);
  if (!m.is_object()) m = json::object();
  m["bottleneck"] = n.bottleneck;
  // By kernel; `--feedback raw` keeps "counters" for the findings' evidence.
  json counters = json::object();
  for (const auto& k : payload.value("kernels", json::array()))
    if (k.contains("metrics")) counters[k.value("kernel", "")] = k["metrics"];
  m["kernel_counters"] = counters;
  n.metrics = JsonText(m);
}

void CounterProfiles::Restore(const json& payload) {
  const int64_t node = payload.value("node", int64_t{-1});
  Apply(node, payload);
  done_.insert(node);
  if (payload.value("counters_off", false)) off_ = payload.value("error", "");
}

Status CounterProfiles::Collect(std::optional<int64_t> wait_for, bool wait_all) {
  for (auto it = pending_.begin(); it != pending_.end();) {
    const bool ready = it->second.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
    if (!ready && !wait_all && wait_for != it->first) {
      ++it;
      continue;
    }
    const int64_t node = it->first;
    EvalJobResult r = it->second.get();
    it = pending_.erase(it);
    done_.insert(node);
    json payload = {{"node", node}};
    Status why = !r.status.ok()            ? r.status
                 : r.counters              ? Status::Ok()
                 : !r.counters_status.ok() ? r.counters_status
                                           : Status::Internal("the executor returned no counter profile");
    if (!why.ok()) {
      payload["error"] = why.message();
      payload["times"] = events_.Times(r);
      // A profiler that cannot run here (no CUPTI counters and no ncu, no permission) will not
      // run for the next best either: the run goes on with static findings.
      if (why.code() == StatusCode::kUnavailable) {
        off_ = why.message();
        payload["counters_off"] = true;
      }
      recorded_[node] = payload;
      KPILOT_RETURN_IF_ERROR(events_.Add("counters", payload));
      continue;
    }
    const CounterProfile& cp = *r.counters;
    json findings = json::array(), kernels = json::array();
    for (const auto& f : AllFindings(cp.reports)) findings.push_back(ToJson(f));
    for (const auto& k : cp.reports) kernels.push_back(ToJson(k, true));
    payload["times"] = events_.Times(r);
    payload["profiler"] = cp.profiler;
    payload["version"] = cp.version;
    payload["wall_s"] = r.counters_s;
    payload["bottleneck"] = cp.reports.empty() ? "" : std::string(BottleneckName(cp.reports.front().roofline.result));
    payload["stage1"] = std::string(BottleneckName(cp.stage1));
    payload["findings"] = findings;
    payload["kernels"] = kernels;
    if (!cp.fallback_note.empty()) payload["note"] = cp.fallback_note;
    // Where the profile's time went (runner steps, CUPTI's set-up, passes): bench/busy_timeline.py.
    if (!cp.info.empty()) payload["profiler_info"] = cp.info;
    Apply(node, payload);
    ++profiles_;
    seconds_ += r.counters_s;
    recorded_[node] = payload;
    KPILOT_RETURN_IF_ERROR(events_.Add("counters", payload));
  }
  return Status::Ok();
}

}  // namespace kpilot
