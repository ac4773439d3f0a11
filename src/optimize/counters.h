// Inside the optimize module: counter profiles of new bests (OptimizeOptions::counters). Only the
// bests the search acts on are profiled: a new best is marked (Want), its profile queued on the
// executor when the tree selects it for expansion (ProfileIfWanted) or at the end for the final
// best, and a finished profile's findings and class replace the node's static ones before its
// drafts are asked for. Each profile is recorded as event `counters`.
#pragma once

#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "optimize/node.h"

namespace kpilot {

// An evaluation of a node that its counter profile may take instead of evaluating the node again
// (EvalJob::counters_of).
struct ProfileSource {
  std::shared_ptr<const Evaluation> evaluation;  // null: none at hand (the node is evaluated again)
  int device = -1;                               // the GPU queue that made it
};

class CounterProfiles {
 public:
  // Borrowed: all outlive this, and `nodes` holds every node passed in.
  CounterProfiles(const Task& task, const OptimizeOptions& opts, Executor& executor,
                  const std::vector<std::unique_ptr<Tool>>& tools, NodeMap& nodes, RunEvents& events)
      : task_(task), opts_(opts), executor_(executor), tools_(tools), nodes_(nodes), events_(events) {}
  // Waits for the profiles still running (their jobs borrow the task and the tools).
  ~CounterProfiles();

  // Whether profiles are made in this run: live cuda runs with --counters on, while the profiler
  // works here, and never under --feedback none (the generator would see nothing of them).
  bool Wanted() const;
  // Marks `node` a new best, with `have`, an evaluation of it at hand (one with an evaluation is
  // kept over one without).
  void Want(int64_t node, ProfileSource have);
  // Queues a marked node's profile (the tree selected it, or it is the final best).
  void ProfileIfWanted(int64_t node);
  // Queues `node`'s profile unless it is done or queued.
  void Request(int64_t node, ProfileSource have = {});
  // Forgets the marks not queued yet (the run is ending).
  void ClearWanted() { wanted_.clear(); }
  // Applies the profiles that have finished and records each, waiting for `wait_for`'s or, with
  // `wait_all`, for every one.
  Status Collect(std::optional<int64_t> wait_for, bool wait_all = false);
  // Resume: a recorded `counters` event puts its findings and class on the node again.
  void Restore(const nlohmann::json& payload);

  // The `counters` event recorded for `node` by this process (nullopt: none yet).
  std::optional<nlohmann::json> Recorded(int64_t node) const {
    auto it = recorded_.find(node);
    return it == recorded_.end() ? std::nullopt : std::optional<nlohmann::json>(it->second);
  }
  // Why profiles are not made ("" when they are, or when it is not known yet).
  const std::string& off() const { return off_; }

  int profiles() const { return profiles_; }
  double seconds() const { return seconds_; }

 private:
  void Apply(int64_t node, const nlohmann::json& payload);

  const Task& task_;
  const OptimizeOptions& opts_;
  Executor& executor_;
  const std::vector<std::unique_ptr<Tool>>& tools_;
  NodeMap& nodes_;
  RunEvents& events_;
  std::map<int64_t, std::future<EvalJobResult>> pending_;  // by node
  std::set<int64_t> done_;                                 // recorded (or failed)
  std::map<int64_t, nlohmann::json> recorded_;             // the events recorded, by node
  // Bests not profiled yet, with the evaluation a profile may take. A best superseded before the
  // tree selects it is profiled only if the tree selects it later; at the end, only the final
  // best is.
  std::map<int64_t, ProfileSource> wanted_;
  std::string off_;                 // why profiles stopped for this run ("" = they did not)
  std::optional<std::string> ncu_;  // ncu's path, looked up at the first profile ("" = none)
  int profiles_ = 0;
  double seconds_ = 0;
};

}  // namespace kpilot
