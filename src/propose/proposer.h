// Proposers: where new candidate drafts come from. The search asks a Proposer through this
// interface only; `params` (moves in a task's tunable space, steered by profile findings) and
// `replay:DIR` (drafts from a folder, in order) live here; LLM and agent-CLI proposers come later.
#pragma once

#include <cstdint>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "profile/profile.h"
#include "task/task.h"

namespace kpilot {

// One proposed candidate: a complete source file plus params.
struct Draft {
  std::string source;             // the whole candidate file
  std::string source_name;        // a file name with the task's extension, e.g. "blocked_omp.cpp"
  ParamValues params;             // -D values
  std::string summary;            // one line: what changed and why
  std::string targeted_finding;   // the finding id the change answers ("" = none)
};

// One candidate the run has evaluated, for generators that learn from the run so far.
struct EvaluatedParams {
  ParamValues params;
  bool passed = false;
  double speedup = 0;              // what the search tree was given (passed only)
};

struct ProposalContext {
  const Task* task = nullptr;
  // The parent candidate.
  int64_t parent_node = -1;
  std::string parent_source;
  std::string parent_source_name;
  ParamValues parent_params;
  std::string parent_verdict;      // "passed", …
  double parent_speedup = 0;
  std::string bottleneck;          // the parent's roofline class name ("" = not profiled)
  std::vector<Finding> findings;   // the parent's findings, ranked
  std::string memory_summary;      // SearchMemory::Summary for the parent
  std::vector<ParamValues> tried_params;  // params already evaluated anywhere in the run (dedupe)
  std::vector<EvaluatedParams> evaluated;  // every evaluated node of the run, in evaluation order
  std::vector<std::string> sibling_summaries;
  int remaining_budget = 0;        // evaluations left
  int k = 1;                       // return at most k drafts
  uint64_t seed = 0;               // for randomized moves; same seed, same drafts
};

class Proposer {
 public:
  virtual ~Proposer() = default;
  virtual std::string name() const = 0;   // "params", "replay:DIR", …
  // Up to ctx.k drafts; an empty list means "nothing more from this parent" (the search closes
  // it). Asynchronous: an LLM call can take minutes and several may be in flight.
  virtual std::future<Result<std::vector<Draft>>> Propose(const ProposalContext& ctx) = 0;
};

// "params" or "replay:DIR". InvalidInput naming the spec and the choices otherwise; `params`
// on a task without tunable params is InvalidInput with the fix ("declare [params] in task.toml").
Result<std::unique_ptr<Proposer>> MakeProposer(const std::string& spec, const Task& task);

}  // namespace kpilot
