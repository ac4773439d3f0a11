// One run's loop (loop.h): the pipeline of expansions, evaluation of drafts and promotion.
// Its two ends are in run_ends.cc, resuming it in resume.cc.
#include "optimize/loop.h"

#include <algorithm>

#include "core/fs.h"

namespace kpilot {

using nlohmann::json;

namespace {

// A passing evaluation within this fraction of the best so far has its likely children compiled
// ahead (AnticipateAfter). UCT on the log reward expands the best nodes and their near ties most;
// the many passing configs well below the best would only compete for the same compile threads
// with the guesses for those. Not tuned: any new best is covered, and ties within 3%.
constexpr double kAnticipateWithin = 0.97;

// Expansions in a row whose every draft the generator failed to make before the node is closed.
constexpr int kGeneratorFailuresToClose = 2;

// Waits for every job of a batch when it goes out of scope (the jobs call back into the loop).
struct WaitForAll {
  std::vector<std::future<EvalJobResult>>& futures;
  ~WaitForAll() {
    for (auto& f : futures)
      if (f.valid()) f.wait();
  }
};

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

OptimizeLoop::OptimizeLoop(const OptimizeDeps& deps, OptimizeOptions opts, int64_t run_id,
                           std::vector<std::unique_ptr<Tool>> tools)
    : deps_(deps),
      opts_(std::move(opts)),
      run_id_(run_id),
      tree_(opts_.search),
      rng_(opts_.seed),
      tools_(std::move(tools)),
      events_(deps_.store, deps_.progress, deps_.executor, run_id_, !opts_.space_file.empty()),
      journal_(deps_.store, deps_.executor, run_id_, seen_),
      spend_(deps_.generator, opts_),
      skills_(deps_.task, opts_, deps_.skills, deps_.usage),
      depth_(opts_.pipeline_depth > 0   ? opts_.pipeline_depth
             : opts_.space_file.empty() ? MinPipelineDepth(deps_.executor.Devices())
                                        : kSpacePipelineDepth),
      counters_(deps_.task, opts_, deps_.executor, tools_, data_, events_) {
  // Only cuda compiles report registers, spills and shared memory.
  if (opts_.footprints && deps_.task.backend == Backend::kCuda)
    footprints_ = std::make_unique<ExecutorFootprints>(
        deps_.executor, deps_.task, BaseEvalOptions(opts_),
        [this](const std::string& source, const std::string& name) { return Materialize(source, name); });
}

OptimizeLoop::~OptimizeLoop() {
  // Nothing in flight is wanted any more (an error return leaves batches behind): drop what has
  // not reached a GPU.
  time_up_->store(true);
  deadline_.reset();
  for (auto& b : in_flight_) {
    for (auto& f : b.futures)
      if (f.valid()) f.wait();
    if (b.drafts.valid()) b.drafts.wait();  // a generator still writing borrows the context's task
  }
}

Result<std::filesystem::path> OptimizeLoop::Materialize(const std::string& source, const std::string& name) {
  return MaterializeRunSource(deps_.store, run_id_, source, name);
}

Status OptimizeLoop::RecordBest() {
  auto run = deps_.store.GetRun(run_id_);
  if (!run.ok()) return run.status();
  if (!run->has_value() || incumbent_ < 0) return Status::Ok();
  RunRecord rec = **run;
  rec.best_node = incumbent_;
  rec.best_speedup = data_.at(incumbent_).speedup;
  return deps_.store.UpdateRun(rec);
}

std::future<EvalJobResult> OptimizeLoop::SubmitDraft(const Draft& d, const std::filesystem::path& path,
                                                     int64_t proposal) {
  EvalJob job;
  job.task = &deps_.task;
  job.source = path;
  job.params = d.params;
  job.options = BaseEvalOptions(opts_);
  // A binary evaluated before is not evaluated again (the set is touched on compile threads).
  job.admit = [this](const std::string& sha) { return seen_.Insert(sha); };
  job.cancelled = time_up_;
  if (Anticipating())
    job.on_done = [this, path, params = d.params](const EvalJobResult& r) { AnticipateAfter(path, params, r); };
  return journal_.Submit(std::move(job), {{"proposal", proposal}});
}

bool OptimizeLoop::Anticipating() const { return opts_.anticipate && footprints_ && opts_.space_file.empty(); }

void OptimizeLoop::Anticipate(const std::filesystem::path& source, const ParamValues& params) {
  if (!Anticipating()) return;
  try {  // maybe on the executor's thread: nothing may escape
    footprints_->Prefetch(source, deps_.generator.Anticipate(deps_.task, params));
  } catch (const std::exception&) {
    // Only a guess: a failure to make it costs nothing but the head start.
  }
}

void OptimizeLoop::AnticipateAfter(const std::filesystem::path& source, const ParamValues& params,
                                   const EvalJobResult& r) {
  if (!r.evaluation.verdict.passed()) return;
  const double s = r.evaluation.speedup_geomean;
  double best = best_ended_.load();
  while (s > best && !best_ended_.compare_exchange_weak(best, s)) {
  }
  if (s >= kAnticipateWithin * best) Anticipate(source, params);
}

Status OptimizeLoop::RecordNode(int64_t node, int64_t parent, int64_t proposal, const NodeData& n, const Outcome& out,
                                const Evaluation* e, const std::string& object_sha) {
  return RecordRunNode(deps_.store, run_id_, node, parent, proposal, n, out, e, object_sha);
}

ProposalContext OptimizeLoop::ContextFor(int64_t node) {
  const NodeData& n = data_.at(node);
  ProposalContext c;
  c.task = &deps_.task;
  c.parent_node = node;
  c.parent_source = n.source;
  c.parent_source_name = n.source_name;
  c.parent_params = n.params;
  c.parent_verdict = std::string(VerdictName(n.verdict));
  c.parent_verdict_summary = n.verdict_summary;
  c.parent_verdict_evidence = n.verdict_evidence;
  c.parent_metrics = n.metrics;
  c.run_id = run_id_;
  c.parent_speedup = n.speedup;
  c.bottleneck = n.bottleneck;
  c.findings = n.findings;
  c.memory_summary = memory_.Summary(node);
  c.tried_params = tried_params_;
  // The params generator ranks its drafts with a model fitted to these (docs/search.md).
  for (const auto& [id, d] : data_)
    c.evaluated.push_back({d.params, tree_.node(id).outcome.passed, tree_.node(id).outcome.speedup});
  for (int64_t child : tree_.node(node).children) c.sibling_summaries.push_back(tree_.node(child).outcome.summary);
  c.remaining_budget = BudgetLeft();
  c.k = std::max(1, std::min(opts_.drafts_per_expansion, c.remaining_budget));
  c.seed = opts_.seed * 1000003u + static_cast<uint64_t>(tree_.size());
  c.skills_enabled = opts_.skills;
  c.skills = skills_.For(node, n);
  c.footprints = footprints_.get();
  ApplyAblations(opts_, &c);
  return c;
}

Result<bool> OptimizeLoop::EvaluateDraft(int64_t parent, int64_t proposal, const Draft& d,
                                         std::future<EvalJobResult> f) {
  EvalJobResult r = f.get();
  if (!r.status.ok()) return r.status;
  KPILOT_RETURN_IF_ERROR(journal_.status());
  if (r.cancelled) {
    ++cancelled_;
    // The time ran out before it reached a GPU: not evaluated, and not counted (a resumed run
    // evaluates it).
    KPILOT_RETURN_IF_ERROR(events_.Add(
        "cancelled", {{"proposal", proposal}, {"params", d.params}, {"reason", "time"}, {"times", events_.Times(r)}}));
    return false;
  }
  auto path = Materialize(d.source, d.source_name);
  if (!path.ok()) return path.status();
  if (footprints_) footprints_->Remember(*path, d.params, r);
  if (r.skipped) {
    ++duplicates_;
    ++duplicates_in_a_row_;
    KPILOT_RETURN_IF_ERROR(events_.Add(
        "duplicate",
        {{"proposal", proposal}, {"params", d.params}, {"object_sha", r.object_sha}, {"times", events_.Times(r)}}));
    return false;
  }
  duplicates_in_a_row_ = 0;
  NodeData n;
  n.source = d.source;
  n.source_name = d.source_name;
  n.params = d.params;
  AnalyzeNode(deps_.task, opts_, tools_, r.evaluation, &n);
  n.path = *path;
  Outcome out{r.evaluation.verdict.passed(), n.score, d.summary, d.targeted_finding};
  int64_t node = tree_.AddChild(parent, out);
  ++evaluations_;
  ++since_promotion_;
  KPILOT_RETURN_IF_ERROR(RecordNode(node, parent, proposal, n, out, &r.evaluation, r.object_sha));
  const NodeData* p = data_.count(parent) ? &data_.at(parent) : nullptr;
  Attempt a;
  a.node = node;
  a.parent = parent;
  a.summary = d.summary;
  a.finding = d.targeted_finding;
  a.verdict = std::string(VerdictName(n.verdict));
  a.speedup = n.speedup;
  a.delta = p && p->speedup > 0 && n.speedup > 0 ? n.speedup / p->speedup - 1 : 0;
  if (!out.passed) a.failure = r.evaluation.verdict.summary;
  memory_.Record(a);
  data_[node] = std::move(n);
  const NodeData& nd = data_.at(node);
  KPILOT_RETURN_IF_ERROR(skills_.RecordChild(run_id_, node, d, parent, data_.at(parent), nd));
  KPILOT_RETURN_IF_ERROR(events_.Add("evaluated", {{"node", node},
                                                   {"parent", parent},
                                                   {"proposal", proposal},
                                                   {"object_sha", r.object_sha},
                                                   {"verdict", VerdictName(nd.verdict)},
                                                   {"speedup", nd.speedup},
                                                   {"params", ParamsText(nd.params, "(defaults)")},
                                                   {"summary", d.summary},
                                                   {"bottleneck", nd.bottleneck},
                                                   {"skills_applied", d.skills_applied},
                                                   {"finding", nd.findings.empty() ? "" : nd.findings.front().id},
                                                   {"targeted", d.targeted_finding},
                                                   {"parent_bottleneck", p ? p->bottleneck : ""},
                                                   {"evaluations", evaluations_},
                                                   {"budget", opts_.budget},
                                                   {"device", r.device},
                                                   {"times", events_.Times(r)},
                                                   {"best", incumbent_ >= 0 ? data_.at(incumbent_).speedup : 0.0}}));
  KPILOT_RETURN_IF_ERROR(MaybePromote(node, &r));
  return true;
}

Status OptimizeLoop::MaybePromote(int64_t node, const EvalJobResult* own) {
  const NodeData& c = data_.at(node);
  if (!c.passed()) return Status::Ok();
  if (incumbent_ < 0) {
    incumbent_ = node;
    since_promotion_ = 0;
    KPILOT_RETURN_IF_ERROR(
        events_.Add("promote", {{"node", node}, {"speedup", c.speedup}, {"reason", "first passing candidate"}}));
    KPILOT_RETURN_IF_ERROR(RecordBest());
    counters_.Want(
        node, own ? ProfileSource{std::make_shared<const Evaluation>(own->evaluation), own->device} : ProfileSource{});
    return Status::Ok();
  }
  const NodeData& inc = data_.at(incumbent_);
  if (c.score <= inc.score) return Status::Ok();
  // The paired gate: time the challenger against the incumbent in one process (PairedGate).
  EvalJob job = PairedGateJob(deps_.task, opts_, c, inc);
  job.ahead = true;  // the loop waits for it: it goes before the drafts queued for the GPU
  EvalJobResult r = journal_.Submit(std::move(job), {{"gate", node}, {"incumbent", incumbent_}}).get();
  KPILOT_RETURN_IF_ERROR(journal_.status());
  ++promotion_checks_;
  const GateOutcome gate = DecideGate(opts_, node, incumbent_, r, events_.Times(r));
  if (!gate.accepted()) return events_.Add(gate.event, gate.payload);
  incumbent_ = node;
  since_promotion_ = 0;
  KPILOT_RETURN_IF_ERROR(events_.Add(gate.event, gate.payload));
  KPILOT_RETURN_IF_ERROR(RecordBest());
  // The gate has just evaluated the challenger (its checks, timing and trace): a profile takes
  // that evaluation.
  counters_.Want(node, {std::make_shared<const Evaluation>(r.evaluation), r.device});
  return Status::Ok();
}

Status OptimizeLoop::RecordGeneratorFailure(int64_t parent, const Draft& d) {
  memory_.Record({-1, parent, d.summary, d.targeted_finding, "no_candidate", 0, 0, d.failure});
  return events_.Add("generator_failure", {{"parent", parent}, {"summary", d.summary}, {"reason", d.failure}});
}

// One "spend" event with the run's totals whenever they changed (resume starts from the last).
Status OptimizeLoop::RecordSpend() {
  auto changed = spend_.Changed();
  return changed ? events_.Add("spend", *changed) : Status::Ok();
}

Result<OptimizeLoop::Taken> OptimizeLoop::TakeDrafts(int64_t sel, Result<std::vector<Draft>> drafts,
                                                     bool siblings_in_flight, Batch* b) {
  Status spent = RecordSpend();
  if (!drafts.ok() || !spent.ok())
    return !spent.ok() ? spent : drafts.status().WithContext("the " + deps_.generator.name() + " generator");
  spend_.Answered();
  // Drafts the generator failed to make are remembered, not evaluated; a node whose expansions
  // fail kGeneratorFailuresToClose times in a row is closed.
  size_t asked = drafts->size();
  std::string last_failure;
  for (const auto& d : *drafts)
    if (!d.failure.empty()) {
      KPILOT_RETURN_IF_ERROR(RecordGeneratorFailure(sel, d));
      last_failure = d.failure;
    }
  std::erase_if(*drafts, [](const Draft& d) { return !d.failure.empty(); });
  if (asked > 0 && drafts->empty()) {
    if (++generator_failures_[sel] < kGeneratorFailuresToClose) return Taken::kFailed;
    std::string reason = "the generator failed " + std::to_string(kGeneratorFailuresToClose) +
                         " times in a row: " + last_failure.substr(0, 200);
    tree_.Close(sel, reason);
    KPILOT_RETURN_IF_ERROR(events_.Add("close", {{"node", sel}, {"reason", reason}}));
    return Taken::kClosed;
  }
  if (asked > 0) generator_failures_.erase(sel);
  if (drafts->empty()) {
    if (siblings_in_flight) return Taken::kChildrenPending;
    tree_.Close(sel, "the generator has nothing new for it");
    KPILOT_RETURN_IF_ERROR(events_.Add("close", {{"node", sel}, {"reason", "the generator has nothing new for it"}}));
    return Taken::kClosed;
  }
  // Record every proposal first (so a crash can resume them), then compile them in parallel
  // and evaluate them one at a time.
  for (auto& d : *drafts) {
    if (evaluations_ + pending_ >= opts_.budget) break;
    if (d.source.empty()) {
      d.source = data_.at(sel).source;
      d.source_name = data_.at(sel).source_name;
    }
    tried_params_.push_back(d.params);
    json payload = {{"parent", sel},
                    {"source", d.source},
                    {"source_name", d.source_name},
                    {"params", d.params},
                    {"summary", d.summary},
                    {"finding", d.targeted_finding},
                    {"skills_applied", d.skills_applied},
                    {"skills_offered", skills_.Offered(sel)}};
    auto seq = deps_.store.AddRunEvent(run_id_, "proposal", JsonText(payload));
    auto path = seq.ok() ? Materialize(d.source, d.source_name) : Result<std::filesystem::path>(seq.status());
    if (!path.ok()) return path.status();
    b->futures.push_back(SubmitDraft(d, *path, *seq));
    b->proposed.push_back({*seq, d});
    ++pending_;
  }
  return b->proposed.empty() ? Taken::kNone : Taken::kSubmitted;
}

int OptimizeLoop::Proposing() const {
  return static_cast<int>(
      std::count_if(in_flight_.begin(), in_flight_.end(), [](const Batch& b) { return b.proposing(); }));
}

int OptimizeLoop::BudgetLeft() const {
  return opts_.budget - evaluations_ - pending_ - Proposing() * std::max(1, opts_.drafts_per_expansion);
}

RunProgress OptimizeLoop::Progress() const {
  RunProgress p;
  p.budget_left = BudgetLeft();
  p.elapsed_s = earlier_processes_s_ + Seconds(start_);
  p.since_promotion = since_promotion_;
  p.spend = spend_.Total();
  p.duplicates_in_a_row = duplicates_in_a_row_;
  if (incumbent_ >= 0) p.best_achieved_fraction = data_.at(incumbent_).achieved_fraction;
  return p;
}

Result<std::optional<StopReason>> OptimizeLoop::FillPipeline() {
  // Keep the next expansions compiling while the GPU evaluates the current one (depth_
  // expansions in flight; with 2 the tree is one batch behind). The stop is decided afresh each
  // round: skipped duplicates give budget back.
  while (static_cast<int>(in_flight_.size()) < depth_) {
    if (auto stop = StopRule(opts_, Progress())) return stop;
    if (!spend_.AllowsAnotherRequest(Proposing())) break;  // the answers in flight decide
    std::optional<int64_t> sel = tree_.Select(rng_);
    if (!sel) {
      if (in_flight_.empty()) return std::optional<StopReason>(StopReason::kExhausted);
      break;  // results in flight may open new nodes
    }
    // A node's drafts see its counter profile: a new best is profiled when it is first selected
    // (most bests profiled at promotion were never expanded); wait for the selected node's,
    // apply any other that finished.
    counters_.ProfileIfWanted(*sel);
    KPILOT_RETURN_IF_ERROR(counters_.Collect(*sel));
    Batch b{*sel, {}, {}, deps_.generator.Propose(ContextFor(*sel))};
    WaitForAll guard{b.futures};
    // A generator still writing (an llm: or command: request can take minutes) leaves its
    // expansion in flight and the loop selects the next: several requests run at once, each
    // counted against the budget at --drafts until it answers (TakeDrafts).
    if (b.drafts.wait_for(std::chrono::seconds(0)) == std::future_status::timeout) {
      in_flight_.push_back(std::move(b));
      continue;
    }
    bool siblings = false;
    for (const auto& other : in_flight_) siblings = siblings || other.parent == *sel;
    auto taken = TakeDrafts(*sel, b.drafts.get(), siblings, &b);
    if (!taken.ok()) return taken.status();
    if (*taken == Taken::kChildrenPending) break;
    if (*taken == Taken::kSubmitted) in_flight_.push_back(std::move(b));
  }
  return std::optional<StopReason>();
}

Result<bool> OptimizeLoop::TakeAnswers() {
  // In the order they were asked for, up to the first still being written (so proposals are
  // recorded in the order their batches are evaluated: a resumed run evaluates what was recorded
  // in that order); the oldest expansion is waited for, since it is evaluated next.
  bool took = false;
  for (auto it = in_flight_.begin(); it != in_flight_.end();) {
    if (!it->proposing()) {
      ++it;
      continue;
    }
    if (it != in_flight_.begin() && it->drafts.wait_for(std::chrono::seconds(0)) == std::future_status::timeout) break;
    bool siblings = false;
    for (auto other = in_flight_.begin(); other != in_flight_.end(); ++other)
      siblings = siblings || (other != it && other->parent == it->parent);
    auto taken = TakeDrafts(it->parent, it->drafts.get(), siblings, &*it);
    if (!taken.ok()) return taken.status();
    took = true;
    it = *taken == Taken::kSubmitted ? std::next(it) : in_flight_.erase(it);
  }
  return took;
}

Status OptimizeLoop::EvaluateOldest(double* busy0, double* elapsed0) {
  // The oldest batch, even when a later one has ended first: a run's node order then follows its
  // proposals, which folder:DIR needs to reproduce a run.
  Batch b = std::move(in_flight_.front());
  in_flight_.pop_front();
  WaitForAll guard{b.futures};
  for (size_t i = 0; i < b.proposed.size(); ++i) {
    --pending_;
    auto done = EvaluateDraft(b.parent, b.proposed[i].first, b.proposed[i].second, std::move(b.futures[i]));
    if (!done.ok()) return done.status();
  }
  // Adaptive depth: measured on the real executor only (a space run's clock does not model the
  // parallel compiles that the depth is there to hide). The window runs from the previous
  // batch's end to this one's, so evaluations that finished while the loop was selecting and
  // proposing count too.
  if (opts_.pipeline_depth != 0 || !opts_.space_file.empty()) return Status::Ok();
  const double busy1 = deps_.executor.BusySeconds(), elapsed1 = deps_.executor.ElapsedSeconds();
  const double busy = busy1 - *busy0, elapsed = elapsed1 - *elapsed0;
  *busy0 = busy1;
  *elapsed0 = elapsed1;
  const int next = NextPipelineDepth(depth_, busy, elapsed, deps_.executor.Devices());
  if (next == depth_) return Status::Ok();
  depth_ = next;
  return events_.Add("pipeline", {{"depth", depth_},
                                  {"busy_s", busy},
                                  {"elapsed_s", elapsed},
                                  {"devices", deps_.executor.Devices()},
                                  {"reason", "the evaluation queues were idle while drafts compiled"}});
}

Result<OptimizeResult> OptimizeLoop::Iterate() {
  // Batches in flight are waited for by the destructor, the one being built or evaluated by its
  // guard: an error return or an exception leaves no job calling into a dead loop. busy0 and
  // elapsed0: the executor's seconds at the end of the last batch (adaptive depth).
  double busy0 = deps_.executor.BusySeconds(), elapsed0 = deps_.executor.ElapsedSeconds();
  // --time: when it passes, drafts still compiling (a CUTLASS GEMM's take a minute) are dropped,
  // so the run ends within about one evaluation of its limit, then evaluates its best again.
  if (opts_.time_limit_s > 0 && !deadline_) {
    const std::chrono::duration<double> left(std::max(0.0, opts_.time_limit_s - earlier_processes_s_));
    deadline_ = std::make_unique<DeadlineFlag>(
        start_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(left), time_up_);
  }
  for (;;) {
    // Spend of requests answered but not yet taken is recorded now: a kill before they are taken
    // must not hide it from a resumed run's caps.
    KPILOT_RETURN_IF_ERROR(RecordSpend());
    auto stop = FillPipeline();
    if (!stop.ok()) return stop.status();
    // A batch just submitted is compiling, so after taking answers the loop goes back to decide
    // the stop and fill the pipeline before it waits for it.
    auto took = TakeAnswers();
    if (!took.ok()) return took.status();
    if (*took) continue;
    if (in_flight_.empty()) return Finish(stop->value_or(StopReason::kExhausted));
    KPILOT_RETURN_IF_ERROR(EvaluateOldest(&busy0, &elapsed0));
  }
}

}  // namespace kpilot
