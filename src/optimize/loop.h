// Inside the optimize module: one run's loop. It selects a node, asks the generator for drafts
// (several expansions in flight so that the GPU evaluates one batch while the next compile),
// evaluates them through the journal, grows the tree and the memory, promotes a new best only on
// paired evidence, and records every step in the store. Its parts: RunJournal (journal.h),
// CounterProfiles (counters.h), SpendLedger (spend.h), SkillOffers (skill_offers.h), and the pure
// decisions of policy.h.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "optimize/counters.h"
#include "optimize/journal.h"
#include "optimize/node.h"
#include "optimize/optimizer.h"
#include "optimize/skill_offers.h"
#include "optimize/spend.h"

namespace kpilot {

class OptimizeLoop {
 public:
  // `tools`: the built-in tools and the run's rule-file tools (LoadToolsFor).
  OptimizeLoop(const OptimizeDeps& deps, OptimizeOptions opts, int64_t run_id,
               std::vector<std::unique_ptr<Tool>> tools);
  // Waits for every job in flight: they call back into the loop and borrow the task and tools.
  ~OptimizeLoop();

  Result<OptimizeResult> Start();
  // Resumes from what the store holds of the run (created at `run_created_at`): resume.cc.
  Result<OptimizeResult> Continue(const std::vector<RunNodeRecord>& nodes, const std::vector<RunEventRecord>& events,
                                  const std::string& run_created_at);

 private:
  // One expansion: its drafts still being written by the generator (`drafts` valid), or
  // recorded, submitted (compiling) and not yet evaluated.
  struct Batch {
    int64_t parent;
    std::vector<std::pair<int64_t, Draft>> proposed;
    std::vector<std::future<EvalJobResult>> futures;
    std::future<Result<std::vector<Draft>>> drafts;
    bool proposing() const { return drafts.valid(); }
  };
  // What became of an expansion's answer from the generator (TakeDrafts).
  enum class Taken {
    kSubmitted,        // its drafts are recorded and submitted into the batch
    kFailed,           // the generator failed to make any: tried again on a later selection
    kClosed,           // the node was closed (failures in a row, or nothing new)
    kChildrenPending,  // nothing new, but the node's other expansions are still in flight
    kNone,             // drafts, but the budget is spent: none was submitted
  };

  Result<OptimizeResult> Iterate();
  Result<OptimizeResult> Finish(StopReason reason);
  // Selects nodes and asks for their drafts until depth_ expansions are in flight or a stop rule
  // holds (returned).
  Result<std::optional<StopReason>> FillPipeline();
  // The generators' answers taken in the order they were asked for; true when any was.
  Result<bool> TakeAnswers();
  // Evaluates the oldest batch, then adapts the depth (adaptive runs only).
  Status EvaluateOldest(double* busy0, double* elapsed0);
  // Records the generator's spend and the drafts it failed to make, closes a node whose
  // expansions keep failing or that has nothing new (unless `siblings_in_flight`), and otherwise
  // records each proposal (so a crash can resume it) and submits it into `b`, counting pending_.
  Result<Taken> TakeDrafts(int64_t sel, Result<std::vector<Draft>> drafts, bool siblings_in_flight, Batch* b);
  // Evaluates one draft proposed from `parent` (recorded as event `proposal`); false when the
  // binary was seen before (a duplicate, not evaluated).
  Result<bool> EvaluateDraft(int64_t parent, int64_t proposal, const Draft& d, std::future<EvalJobResult> f);
  // Submits draft `d` (event `proposal` number `proposal`) through the journal.
  std::future<EvalJobResult> SubmitDraft(const Draft& d, const std::filesystem::path& path, int64_t proposal);
  // `own`: the node's evaluation job when the caller has it (a new best's counter profile takes
  // its evaluation, or the promotion gate's, instead of evaluating the node again).
  Status MaybePromote(int64_t node, const EvalJobResult* own = nullptr);
  // Records node `node` (its source, params and evaluation) in the store.
  Status RecordNode(int64_t node, int64_t parent, int64_t proposal, const NodeData& n, const Outcome& out,
                    const Evaluation* e, const std::string& object_sha);
  // The run's row: the incumbent as its best so far, so `kpilot runs` shows a run in progress
  // (or interrupted) with what it has found; Finish writes the re-evaluated final.
  Status RecordBest();
  Status RecordGeneratorFailure(int64_t parent, const Draft& d);
  Status RecordSpend();
  Result<std::filesystem::path> Materialize(const std::string& source, const std::string& name);
  ProposalContext ContextFor(int64_t node);
  // Speculative compiles (ExecutorFootprints::Prefetch) of the configs the generator anticipates
  // for a node at `params` of `source`: for the root as it is submitted, and for each draft whose
  // evaluation passes within kAnticipateWithin of the best evaluation ended so far, the moment it
  // ends (on the executor's thread), so that its likely children compile while the GPU runs its
  // profile, the promotion checks and the drafts queued before them. Cuda runs with footprints
  // only, never a space run (whose results are ready at once).
  bool Anticipating() const;
  void Anticipate(const std::filesystem::path& source, const ParamValues& params);
  void AnticipateAfter(const std::filesystem::path& source, const ParamValues& params, const EvalJobResult& r);
  // Expansions in flight that the generator is still writing.
  int Proposing() const;
  // Evaluations the budget still has room for: less those done, the drafts submitted and not yet
  // evaluated, and --drafts for each expansion the generator is still writing.
  int BudgetLeft() const;
  RunProgress Progress() const;
  // The nodes as the energy objective weighs them.
  int64_t EnergyChoice(int64_t fastest) const;

  const OptimizeDeps deps_;
  const OptimizeOptions opts_;
  const int64_t run_id_;
  SearchTree tree_;
  SearchMemory memory_;
  std::mt19937_64 rng_;
  NodeMap data_;
  // The built-in and rule-file tools: every node's static findings and the counter profiles'.
  std::vector<std::unique_ptr<Tool>> tools_;
  RunEvents events_;
  SeenBinaries seen_;
  RunJournal journal_;
  SpendLedger spend_;
  SkillOffers skills_;
  std::vector<ParamValues> tried_params_;
  int64_t incumbent_ = -1;
  int evaluations_ = 0, promotion_checks_ = 0, duplicates_ = 0, since_promotion_ = 0;
  int cancelled_ = 0;  // drafts dropped when --time passed (this process's)
  int pending_ = 0;    // drafts submitted and not yet evaluated
  // Drafts in a row whose binary was evaluated already (StopRule's kDuplicates).
  int duplicates_in_a_row_ = 0;
  std::map<int64_t, int> generator_failures_;  // failed expansions in a row, by node
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  double earlier_processes_s_ = 0;  // wall time the run's interrupted processes used (resume)
  // Set when --time has passed (deadline_): the drafts still compiling or waiting for a GPU are
  // dropped (EvalJob::cancelled) rather than waited for.
  std::shared_ptr<std::atomic<bool>> time_up_ = std::make_shared<std::atomic<bool>>(false);
  std::unique_ptr<DeadlineFlag> deadline_;
  int depth_;                                       // expansions kept in flight (opts_.pipeline_depth, or adaptive)
  std::unique_ptr<ExecutorFootprints> footprints_;  // null: none (--footprints off, not cuda)
  std::atomic<double> best_ended_ = 0;  // the best passing speedup among evaluations ended (AnticipateAfter)
  std::deque<Batch> in_flight_;         // expansions in flight (waited for by the destructor)
  // Declared after the state its jobs read back, so that it is destroyed (waiting for them) first.
  CounterProfiles counters_;
  int64_t root_proposal_ = -1;              // resume before the root was recorded: its proposal's number
  std::optional<std::string> root_source_;  // ...and the source it recorded
};

}  // namespace kpilot
