// Inside the optimize module: what the loop keeps per node beyond the tree's numbers, how a node
// is analysed from its evaluation, and how the run's events are recorded and shown.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "optimize/optimizer.h"
#include "profile/tool.h"
#include "search/tree.h"

namespace kpilot {

struct NodeData {
  std::string source;
  std::string source_name;
  std::filesystem::path path;  // the materialized source file
  ParamValues params;
  VerdictKind verdict = VerdictKind::kRuntimeError;
  double speedup = 0;
  double speedup_lo = 0;  // the lower end of its speedup's CI (energy objective)
  // What the tree and the promotion rule compare: the speedup, or under --objective mix the
  // speedup weighed with the energy saving (MixScore).
  double score = 0;
  double joules = 0;  // mean joules per call over workloads (energy objective)
  std::string bottleneck;
  double achieved_fraction = 0;  // of the roofline floor (cuda with a calibration; 0 = unknown)
  std::vector<Finding> findings;
  std::string verdict_summary, verdict_evidence, metrics;  // for generators (EvidenceFromJson)

  bool passed() const { return verdict == VerdictKind::kPassed; }
};
using NodeMap = std::map<int64_t, NodeData>;

// A node's verdict evidence and raw numbers for generators that read them (llm:, command:), from
// its evaluation JSON (fresh, or the stored result blob on resume).
void EvidenceFromJson(const nlohmann::json& ej, std::string* summary, std::string* evidence, std::string* metrics);
std::vector<Finding> FindingsFromJson(const nlohmann::json& a);
ParamValues ParamsFromJson(const std::string& text);

// Fills `n` from evaluation `e`: verdict, speedup, score under the objective, joules, evidence;
// for a passed cuda node also the stage-1 roofline class and the findings of `tools` that need
// no counters (its static profile): cheap enough for every node.
void AnalyzeNode(const Task& task, const OptimizeOptions& o, const std::vector<std::unique_ptr<Tool>>& tools,
                 const Evaluation& e, NodeData* n);

// Records node `node` of run `run_id` (its source, params and evaluation) in the store: the
// node's row, with its evaluation JSON (plus the object hash, class, joules, findings and what the
// tree was given) as a blob. Shared by the search loop and an agent's session (AgentRun).
Status RecordRunNode(Store& store, int64_t run_id, int64_t node, int64_t parent, int64_t proposal, const NodeData& n,
                     const Outcome& out, const Evaluation* e, const std::string& object_sha);
// A draft's source as a file of the run (STORE/runs/ID/sources/<sha>-<stem><ext>), written once.
Result<std::filesystem::path> MaterializeRunSource(Store& store, int64_t run_id, const std::string& source,
                                                   const std::string& name);
// The `start` event's payload: the options, the task's dtypes (what `kpilot export` says the
// run was verified on) and its flops and bytes per workload (the report's roofline).
nlohmann::json StartEventPayload(const Task& task, const OptimizeOptions& opts);
// The built-in tools and the rule files beside the task, in ~/.config/kpilot/tools and in the
// run's --tools folders: what every node's findings come from (skill cards may name their ids).
Result<std::vector<std::unique_ptr<Tool>>> RunTools(const OptimizeOptions& o);
// STORE/runs/ID/lock, held by the process running the run.
std::filesystem::path RunLockPath(const Store& store, int64_t run_id);

// The paired gate (PairedGate) of a search and of an agent's run alike: the job that times
// `challenger` against `incumbent` in one process, and what its result decides — `event` is
// "promote" or "reject", `payload` the event's (node, incumbent, paired speedup and CI, the mix
// objective's numbers; for a gate that could not run, the reason: promotion needs evidence).
EvalJob PairedGateJob(const Task& task, const OptimizeOptions& opts, const NodeData& challenger,
                      const NodeData& incumbent);
struct GateOutcome {
  std::string event;
  nlohmann::json payload;
  bool accepted() const { return event == "promote"; }
};
GateOutcome DecideGate(const OptimizeOptions& opts, int64_t node, int64_t incumbent, const EvalJobResult& r,
                       const nlohmann::json& times);

// The run's event log: each event stored (runs/ID events) and then shown to the progress sink.
class RunEvents {
 public:
  RunEvents(Store& store, ProgressSink& progress, Executor& executor, int64_t run_id, bool space_run)
      : store_(store), progress_(progress), executor_(executor), run_id_(run_id), space_run_(space_run) {}
  Status Add(const std::string& kind, nlohmann::json payload);
  // When job `r` was submitted, compiled and held its GPU, with the executor's clock now
  // (seconds; bench/busy_timeline.py finds where a GPU idled and what it waited for); empty for
  // a space run, whose clock is modelled, and for a result served from the journal, which keeps
  // no submit time (its times were an earlier process's clock).
  nlohmann::json Times(const EvalJobResult& r) const;

 private:
  Store& store_;
  ProgressSink& progress_;
  Executor& executor_;
  int64_t run_id_;
  bool space_run_;
};

}  // namespace kpilot
