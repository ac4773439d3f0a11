// ExecutorFootprints (footprints.h): compile footprints through the executor, never waited for
// with the GPU idle.
#include <chrono>

#include "optimize/footprints.h"

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

bool Ready(const std::shared_future<EvalJobResult>& f) {
  return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

}  // namespace

ExecutorFootprints::ExecutorFootprints(Executor& executor, const Task& task, EvalOptions options,
                                       Materializer materialize)
    : executor_(executor), task_(task), options_(std::move(options)), materialize_(std::move(materialize)) {}

ExecutorFootprints::~ExecutorFootprints() {
  Cancel();
  for (auto& [key, c] : pending_) c.result.wait();
}

std::vector<std::optional<Footprint>> ExecutorFootprints::Probe(const std::string& source,
                                                                const std::string& source_name,
                                                                const std::vector<ParamValues>& configs) {
  std::vector<std::optional<Footprint>> out(configs.size());
  auto path = materialize_(source, source_name);
  if (!path.ok()) return out;
  // This call's compiles not known yet. The lock is not held while waiting for them: Prefetch is
  // called on the executor's evaluation thread, which must not wait for a Probe (measured on the
  // H200: held while waiting, it left the GPU idle 3.9 s with a compiled draft queued, the
  // evaluation thread blocked on this lock).
  std::vector<Compile> asked;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Harvest();  // a guess that has finished is known, not asked again
    for (const ParamValues& params : configs) {
      Key key{*path, params};
      if (known_.count(key)) continue;
      auto it = pending_.find(key);
      if (it == pending_.end()) it = pending_.emplace(key, Submit(*path, params, true)).first;
      it->second.waited_for->store(true);  // a guess or an earlier probe's leftover moves up
      asked.push_back(it->second);
    }
  }
  // Wait while the GPUs have compiled work queued behind what they run; once they have none,
  // stop at the first compile not done, so that the next drafts compile while the last
  // evaluations run. Drafts still compiling do not count: the GPUs idle until they are done.
  bool running_dry = false;
  for (const auto& c : asked) {
    while (!running_dry && c.result.wait_for(std::chrono::milliseconds(20)) != std::future_status::ready)
      running_dry = executor_.EvaluationsReady() <= executor_.Devices();
    if (running_dry) break;
  }
  // What is left goes on compiling, behind what a later probe waits for.
  for (const auto& c : asked) c.waited_for->store(false);
  std::lock_guard<std::mutex> lock(mu_);
  Harvest();
  for (size_t i = 0; i < configs.size(); ++i)
    if (auto it = known_.find({*path, configs[i]}); it != known_.end()) out[i] = it->second;
  return out;
}

ExecutorFootprints::Compile ExecutorFootprints::Submit(const std::filesystem::path& source, const ParamValues& params,
                                                       bool waited_for) {
  auto flag = std::make_shared<std::atomic<bool>>(waited_for);
  EvalJob job;
  job.task = &task_;
  job.source = source;
  job.params = params;
  job.options = options_;
  job.compile_only = true;
  job.waited_for = flag;
  job.cancelled = cancelled_;
  return {executor_.Submit(std::move(job)).share(), flag};
}

size_t ExecutorFootprints::Prefetch(const std::filesystem::path& source, const std::vector<ParamValues>& configs) {
  std::lock_guard<std::mutex> lock(mu_);
  if (cancelled_->load()) return 0;
  Harvest();
  size_t submitted = 0;
  // Last config first: the executor takes the jobs no one waits for newest first.
  for (auto it = configs.rbegin(); it != configs.rend(); ++it) {
    Key key{source, *it};
    if (known_.count(key) || pending_.count(key)) continue;
    pending_.emplace(key, Submit(source, *it, false));
    ++submitted;
  }
  prefetched_ += submitted;
  return submitted;
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
    if (!Ready(it->second.result)) {
      ++it;
      continue;
    }
    const EvalJobResult& r = it->second.result.get();
    if (r.status.ok()) known_[it->first] = FootprintOf(r);  // else (cancelled, failed) a later ask tries again
    it = pending_.erase(it);
  }
}

}  // namespace kpilot
