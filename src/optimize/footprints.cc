// ExecutorFootprints (optimizer.h): compile footprints through the executor, never waited for
// with the GPU idle.
#include <chrono>

#include "optimize/optimizer.h"

namespace kpilot {
namespace {

// nullopt: compiled, but with no ptxas report (unknown).
std::optional<Footprint> FootprintOf(const EvalJobResult& r) {
  if (!r.compiled) return Footprint{.compiles = false};
  if (r.resources.empty()) return std::nullopt;
  Footprint f;
  for (const auto& k : r.resources) {
    f.registers = std::max(f.registers, k.registers);
    f.spill_bytes += k.spill_stores + k.spill_loads;
    f.shared_bytes = std::max(f.shared_bytes, k.shared_bytes);
  }
  return f;
}

bool Ready(std::future<EvalJobResult>& f) { return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }

}  // namespace

ExecutorFootprints::ExecutorFootprints(Executor& executor, const Task& task, EvalOptions options,
                                       Materializer materialize)
    : executor_(executor), task_(task), options_(std::move(options)), materialize_(std::move(materialize)) {}

ExecutorFootprints::~ExecutorFootprints() {
  Cancel();
  for (auto& [key, f] : pending_) f.wait();
}

std::vector<std::optional<Footprint>> ExecutorFootprints::Probe(const std::string& source,
                                                                const std::string& source_name,
                                                                const std::vector<ParamValues>& configs) {
  std::vector<std::optional<Footprint>> out(configs.size());
  auto path = materialize_(source, source_name);
  if (!path.ok()) return out;
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Key> asked;  // this call's configs whose compiles are not known yet
  for (const ParamValues& params : configs) {
    Key key{*path, params};
    if (known_.count(key)) continue;
    if (!pending_.count(key)) {
      EvalJob job;
      job.task = &task_;
      job.source = *path;
      job.params = params;
      job.options = options_;
      job.compile_only = true;
      job.cancelled = cancelled_;
      pending_.emplace(key, executor_.Submit(std::move(job)));
    }
    asked.push_back(std::move(key));
  }
  // Wait while the GPUs have compiled work queued behind what they run; once they have none,
  // stop at the first compile not done, so that the next drafts compile while the last
  // evaluations run. Drafts still compiling do not count: the GPUs idle until they are done.
  bool running_dry = false;
  for (const Key& key : asked) {
    auto& f = pending_.at(key);
    while (!running_dry && f.wait_for(std::chrono::milliseconds(20)) != std::future_status::ready)
      running_dry = executor_.EvaluationsReady() <= executor_.Devices();
    if (running_dry) break;
  }
  Harvest();
  for (size_t i = 0; i < configs.size(); ++i)
    if (auto it = known_.find({*path, configs[i]}); it != known_.end()) out[i] = it->second;
  return out;
}

void ExecutorFootprints::Remember(const std::filesystem::path& source, const ParamValues& params,
                                  const EvalJobResult& r) {
  if (!r.status.ok()) return;
  std::lock_guard<std::mutex> lock(mu_);
  known_.emplace(Key{source, params}, FootprintOf(r));
}

size_t ExecutorFootprints::Pending() {
  std::lock_guard<std::mutex> lock(mu_);
  Harvest();
  return pending_.size();
}

void ExecutorFootprints::Harvest() {
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (!Ready(it->second)) {
      ++it;
      continue;
    }
    EvalJobResult r = it->second.get();
    if (r.status.ok()) known_[it->first] = FootprintOf(r);  // else (cancelled, failed) a later ask tries again
    it = pending_.erase(it);
  }
}

}  // namespace kpilot
