// The results journal: an evaluation that ended before the run was interrupted — a draft's, a
// promotion check's, the final re-evaluation — is served from the store on --resume, not run
// again. Interruptions are made where a kill -9 would land: after the evaluation ended and
// before the loop recorded what it means (a generator that fails, a store write that fails).
#include <gtest/gtest.h>

#include <ctime>
#include <map>
#include <mutex>
#include <set>

#include "core/fs.h"
#include "optimize/optimizer.h"
#include "task/loader.h"
#include "test_paths.h"

namespace kpilot {
namespace {

enum class JobKind { kDraft, kGate, kFinal };

// Every evaluation passes; a candidate's speedup follows from its source, so an evaluation run
// again gives the same answer. Reports each result through on_done, as the local executor does,
// and logs what it was asked to run.
class JournalingExecutor : public Executor {
 public:
  std::future<EvalJobResult> Submit(EvalJob job) override {
    auto src = ReadFile(job.source);
    const std::string text = src.ok() ? *src : "";
    EvalJobResult r;
    r.object_sha = Sha(text);
    r.submitted_s = r.compile_start_s = r.compile_end_s = r.eval_start_s = 0.5;  // on a live-looking clock
    r.eval_end_s = 1;
    JobKind kind = job.options.baseline_source ? JobKind::kGate : job.admit ? JobKind::kDraft : JobKind::kFinal;
    {
      std::lock_guard<std::mutex> lock(mu_);
      log.push_back({kind, text});
    }
    if (job.admit && !job.admit(r.object_sha)) {
      r.skipped = true;
    } else {
      Evaluation& e = r.evaluation;
      e.verdict.kind = VerdictKind::kPassed;
      double s = 1.0 + static_cast<double>(text.size() % 97) / 10.0 + static_cast<double>(text.size()) / 1000.0;
      if (kind == JobKind::kGate) s = gate_speedup;  // a clear win over the incumbent
      e.speedup_geomean = s;
      e.speedup_geomean_ci = {s * 0.99, s * 1.01};
      e.run.status = "passed";
      if (job.on_done) job.on_done(r);
    }
    std::promise<EvalJobResult> p;
    p.set_value(std::move(r));
    return p.get_future();
  }
  double gate_speedup = 1.5;
  double BusySeconds() const override { return 0; }
  double ElapsedSeconds() const override { return 1; }

  int Count(JobKind kind) const {
    int n = 0;
    for (const auto& [k, text] : log) n += k == kind;
    return n;
  }
  std::vector<std::pair<JobKind, std::string>> log;

 private:
  static std::string Sha(const std::string& text) { return "sha-" + std::to_string(std::hash<std::string>()(text)); }
  std::mutex mu_;
};

// Distinct drafts that grow longer (so faster, by the executor's rule); fails with an error
// Status on call `fail_at` (1-based; 0: never), as a crash at that point would end the loop.
class GrowingGenerator : public Generator {
 public:
  std::string name() const override { return "growing"; }
  std::future<Result<std::vector<Draft>>> Propose(const ProposalContext& ctx) override {
    std::promise<Result<std::vector<Draft>>> p;
    if (++calls_ == fail_at) {
      p.set_value(Status::Internal("the generator died"));
      return p.get_future();
    }
    std::vector<Draft> drafts;
    for (int i = 0; i < ctx.k; ++i) {
      Draft d;
      d.source = ctx.parent_source + "// variant " + std::to_string(next_++) + " of node " +
                 std::to_string(ctx.parent_node) + "\n";
      d.source_name = "grown.cpp";
      d.summary = "variant";
      drafts.push_back(std::move(d));
    }
    p.set_value(std::move(drafts));
    return p.get_future();
  }
  GeneratorSpend Spent() const override { return {}; }
  int fail_at = 0;
  // Resumed runs start numbering where the interrupted one stopped, so no source repeats.
  int next_ = 0;

 private:
  int calls_ = 0;
};

// A store whose AddRunEvent of kind `fail_kind` fails once (the `fail_nth` one), as a kill would
// stop the process right before that write; everything else goes to the real store.
class InterruptingStore : public Store {
 public:
  explicit InterruptingStore(Store& real) : real_(real) {}
  const std::filesystem::path& dir() const override { return real_.dir(); }
  int SchemaVersion() const override { return real_.SchemaVersion(); }
  Result<std::string> PutBlob(const std::string& c) override { return real_.PutBlob(c); }
  Result<std::string> GetBlob(const std::string& sha) override { return real_.GetBlob(sha); }
  Result<int64_t> AddTask(const TaskRecord& t) override { return real_.AddTask(t); }
  Result<int64_t> AddCandidate(const CandidateRecord& c) override { return real_.AddCandidate(c); }
  Result<int64_t> AddEvaluation(const EvaluationRecord& e) override { return real_.AddEvaluation(e); }
  Result<std::vector<EvaluationRecord>> ListEvaluations(int64_t id) override { return real_.ListEvaluations(id); }
  Result<std::optional<EvaluationRecord>> GetEvaluation(int64_t id) override { return real_.GetEvaluation(id); }
  Result<int64_t> CountRows(const std::string& table) override { return real_.CountRows(table); }
  Status PutValue(const std::string& k, const std::string& v) override { return real_.PutValue(k, v); }
  Result<std::optional<std::string>> GetValue(const std::string& k) override { return real_.GetValue(k); }
  Result<int64_t> CreateRun(const RunRecord& r) override { return real_.CreateRun(r); }
  Status UpdateRun(const RunRecord& r) override { return real_.UpdateRun(r); }
  Result<std::optional<RunRecord>> GetRun(int64_t id) override {
    auto r = real_.GetRun(id);
    if (r.ok() && r->has_value() && !created_at.empty()) (*r)->created_at = created_at;
    return r;
  }
  Result<std::vector<RunRecord>> ListRuns() override { return real_.ListRuns(); }
  Status AddRunNode(const RunNodeRecord& n) override {
    if (fail_nodes) return Status::Internal("killed before writing node " + std::to_string(n.node));
    return real_.AddRunNode(n);
  }
  Result<std::vector<RunNodeRecord>> ListRunNodes(int64_t id) override { return real_.ListRunNodes(id); }
  Result<int64_t> AddRunEvent(int64_t run_id, const std::string& kind, const std::string& payload) override {
    if (kind == fail_kind && ++seen_ == fail_nth) return Status::Internal("killed before writing " + kind);
    return real_.AddRunEvent(run_id, kind, payload);
  }
  Result<std::vector<RunEventRecord>> ListRunEvents(int64_t id) override { return real_.ListRunEvents(id); }
  std::string fail_kind;
  int fail_nth = 1;
  std::string created_at;   // when set, the run's row says it was created then
  bool fail_nodes = false;  // every AddRunNode fails

 private:
  Store& real_;
  int seen_ = 0;
};

class Quiet : public ProgressSink {
 public:
  void Event(const nlohmann::json& e) override { events.push_back(e); }
  std::vector<nlohmann::json> events;
};

class JournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = TempDir::Create("kpilot-journal-");
    ASSERT_TRUE(d.ok());
    dir_.emplace(std::move(d).value());
    auto s = Store::Open(dir_->path() / "store");
    ASSERT_TRUE(s.ok());
    store_ = std::move(s).value();
    auto t = LoadTask(testing::SourceDir() / "examples" / "host" / "saxpy");
    ASSERT_TRUE(t.ok());
    task_ = *t;
    task_.params.clear();  // the generator here rewrites sources; no params to enumerate
    o_.task_dir = task_.dir.string();
    o_.from = (task_.dir / "candidates" / "omp_simd.cpp").string();
    o_.budget = 8;
    o_.drafts_per_expansion = 2;
    o_.pipeline_depth = 2;
  }

  std::vector<RunEventRecord> Events(int64_t run) { return *store_->ListRunEvents(run); }
  std::vector<RunNodeRecord> Nodes(int64_t run) { return *store_->ListRunNodes(run); }

  // Proposals journaled as evaluated but recorded as no node (what an interruption left).
  std::set<int64_t> JournaledWithoutNode(int64_t run) {
    std::set<int64_t> journaled, recorded;
    for (const auto& e : Events(run))
      if (e.kind == "result") {
        auto p = nlohmann::json::parse(e.payload_json);
        if (p.contains("proposal")) journaled.insert(p["proposal"].get<int64_t>());
      }
    for (const auto& n : Nodes(run)) recorded.insert(n.proposal);
    std::set<int64_t> out;
    for (int64_t p : journaled)
      if (!recorded.count(p)) out.insert(p);
    return out;
  }
  std::string ProposalSource(int64_t run, int64_t seq) {
    for (const auto& e : Events(run))
      if (e.seq == seq) return nlohmann::json::parse(e.payload_json).value("source", "");
    return "";
  }
  int CountEvents(int64_t run, const std::string& kind) {
    int n = 0;
    for (const auto& e : Events(run)) n += e.kind == kind;
    return n;
  }

  std::optional<TempDir> dir_;
  std::unique_ptr<Store> store_;
  Task task_;
  OptimizeOptions o_;
  Quiet progress_;
};

TEST_F(JournalTest, DraftsThatFinishedBeforeTheInterruptionAreNotEvaluatedAgain) {
  JournalingExecutor first;
  GrowingGenerator dying;
  dying.fail_at = 3;  // two expansions in flight, the first one recorded, then the crash
  Optimizer interrupted(task_, dying, first, *store_, progress_);
  auto res = interrupted.Run(o_);
  ASSERT_FALSE(res.ok());
  const int64_t run = 1;
  const std::set<int64_t> lost = JournaledWithoutNode(run);
  ASSERT_FALSE(lost.empty()) << "the test needs evaluations that ended but were never recorded";
  std::set<std::string> lost_sources;
  for (int64_t seq : lost) lost_sources.insert(ProposalSource(run, seq));
  const size_t nodes_before = store_->ListRunNodes(run)->size();

  JournalingExecutor second;
  GrowingGenerator alive;
  alive.next_ = 1000;
  Optimizer resumed(task_, alive, second, *store_, progress_);
  auto done = resumed.Resume(run);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  for (const auto& [kind, text] : second.log)
    EXPECT_FALSE(kind == JobKind::kDraft && lost_sources.count(text)) << "evaluated again:\n" << text;
  auto nodes = *store_->ListRunNodes(run);
  EXPECT_EQ(static_cast<int>(nodes.size()), o_.budget) << "the budget counts each evaluation once";
  std::set<int64_t> proposals;
  for (const auto& n : nodes) EXPECT_TRUE(proposals.insert(n.proposal).second) << "proposal " << n.proposal;
  for (int64_t seq : lost) EXPECT_TRUE(proposals.count(seq)) << "the journaled proposal " << seq << " became a node";
  EXPECT_EQ(second.Count(JobKind::kDraft), o_.budget - static_cast<int>(nodes_before) - static_cast<int>(lost.size()))
      << "only drafts never evaluated before are evaluated now";
  // Every evaluation ran once over both processes: one journal entry per proposal.
  std::map<int64_t, int> per_proposal;
  for (const auto& e : Events(run))
    if (e.kind == "result") {
      auto p = nlohmann::json::parse(e.payload_json);
      if (p.contains("proposal")) ++per_proposal[p["proposal"].get<int64_t>()];
    }
  for (const auto& [seq, n] : per_proposal) EXPECT_EQ(n, 1) << "proposal " << seq;
  bool said = false;
  for (const auto& e : progress_.events)
    if (e.value("event", "") == "resume") said = e.value("journaled_results", 0) == static_cast<int>(lost.size());
  EXPECT_TRUE(said) << "the resume event counts the results served from the journal";
  // A result served from the journal shows no times: they are on the killed process's clock.
  bool resumed_yet = false;
  int timed = 0, untimed = 0;
  for (const auto& e : progress_.events) {
    resumed_yet |= e.value("event", "") == "resume";
    if (!resumed_yet || e.value("event", "") != "evaluated") continue;
    const bool served = lost.count(e.value("proposal", int64_t{-1})) > 0;
    EXPECT_EQ(e.value("times", nlohmann::json::object()).empty(), served) << e.dump();
    ++(served ? untimed : timed);
  }
  EXPECT_EQ(untimed, static_cast<int>(lost.size()));
  EXPECT_GT(timed, 0);
  EXPECT_EQ((*store_->GetRun(run))->status, "finished");
}

TEST_F(JournalTest, APromotionCheckThatFinishedIsNotRunAgain) {
  InterruptingStore interrupting(*store_);
  interrupting.fail_kind = "promote";
  interrupting.fail_nth = 2;  // the first is the start's (no check); the second follows a check
  JournalingExecutor first;
  GrowingGenerator generator;
  Optimizer interrupted(task_, generator, first, interrupting, progress_);
  ASSERT_FALSE(interrupted.Run(o_).ok());
  ASSERT_GE(first.Count(JobKind::kGate), 1);
  ASSERT_EQ(CountEvents(1, "promote"), 1);
  const std::string challenger = first.log.back().second;  // the check was the last job
  ASSERT_EQ(first.log.back().first, JobKind::kGate);

  JournalingExecutor second;
  second.gate_speedup = 1.7;  // a check run again would say 1.7
  generator.next_ = 1000;
  Optimizer resumed(task_, generator, second, *store_, progress_);
  auto done = resumed.Resume(1);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  for (const auto& [kind, text] : second.log)
    EXPECT_FALSE(kind == JobKind::kGate && text == challenger) << "the check ran again";
  // The interrupted decision is made on the journaled check: the first promotion after the
  // resume has its paired speedup, 1.5.
  double first_paired = 0;
  for (const auto& e : Events(1))
    if (e.kind == "promote" && first_paired == 0)
      first_paired = nlohmann::json::parse(e.payload_json).value("paired_speedup", 0.0);
  EXPECT_EQ(first_paired, 1.5);
}

TEST_F(JournalTest, TheFinalReEvaluationThatFinishedIsNotRunAgain) {
  InterruptingStore interrupting(*store_);
  interrupting.fail_kind = "final";
  JournalingExecutor first;
  GrowingGenerator generator;
  Optimizer interrupted(task_, generator, first, interrupting, progress_);
  ASSERT_FALSE(interrupted.Run(o_).ok());
  ASSERT_EQ(first.Count(JobKind::kFinal), 1);
  EXPECT_EQ((*store_->GetRun(1))->status, "failed");

  JournalingExecutor second;
  Optimizer resumed(task_, generator, second, *store_, progress_);
  auto done = resumed.Resume(1);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_TRUE(second.log.empty()) << "nothing left to evaluate: the budget was spent and the final journaled";
  EXPECT_TRUE(done->final.verdict.passed());
  EXPECT_EQ((*store_->GetRun(1))->status, "finished");
}

TEST_F(JournalTest, ARunningRunWhoseLockNobodyHoldsIsShownInterrupted) {
  RunRecord r;
  r.task_name = "saxpy";
  r.status = "running";
  auto id = store_->CreateRun(r);
  ASSERT_TRUE(id.ok());
  r.id = *id;
  {
    auto held = FileLock::TryLock(store_->dir() / "runs" / std::to_string(*id) / "lock");
    ASSERT_TRUE(held.ok() && held->has_value());
    EXPECT_EQ(ShownRunStatus(*store_, r), "running") << "its process holds the lock";
  }
  EXPECT_EQ(ShownRunStatus(*store_, r), "interrupted");
  r.status = "finished";
  EXPECT_EQ(ShownRunStatus(*store_, r), "finished");
}

TEST_F(JournalTest, ARunInProgressShowsItsBestAndCannotBeResumedTwice) {
  InterruptingStore interrupting(*store_);
  interrupting.fail_kind = "stop";  // fails at the end, after every promotion
  JournalingExecutor executor;
  GrowingGenerator generator;
  Optimizer interrupted(task_, generator, executor, interrupting, progress_);
  ASSERT_FALSE(interrupted.Run(o_).ok());
  auto run = *store_->GetRun(1);
  EXPECT_GT(run->best_speedup, 1.0) << "the incumbent is recorded as it is promoted";
  EXPECT_GE(run->best_node, 0);
  // Another process holding the run's lock: refused, and the run is left as it was.
  auto held = FileLock::TryLock(store_->dir() / "runs" / "1" / "lock");
  ASSERT_TRUE(held.ok() && held->has_value());
  EXPECT_EQ(ShownRunStatus(*store_, *run), "failed");
  Optimizer again(task_, generator, executor, *store_, progress_);
  auto refused = again.Resume(1);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("another kpilot process"), std::string::npos) << refused.status().message();
  EXPECT_EQ((*store_->GetRun(1))->status, "failed");
  held->reset();
  auto done = again.Resume(1);
  EXPECT_TRUE(done.ok()) << done.status().ToString();
}

// --time counts the run's earlier processes too, and the JSON result's promotion checks and
// duplicates are the whole run's. The interrupted run's row is made to say it began an hour
// before its last event, as a run interrupted after an hour would.
TEST_F(JournalTest, AResumedRunCountsTheTimeAndTheChecksOfItsEarlierProcesses) {
  InterruptingStore interrupting(*store_);
  interrupting.fail_kind = "promote";
  interrupting.fail_nth = 3;  // the start's promotion, one after a check, then a check's is lost
  JournalingExecutor first;
  GrowingGenerator generator;
  Optimizer interrupted(task_, generator, first, interrupting, progress_);
  o_.time_limit_s = 1800;
  o_.budget = 40;  // far from spent at the interruption
  ASSERT_FALSE(interrupted.Run(o_).ok());
  ASSERT_LT(static_cast<int>(Nodes(1).size()), o_.budget);
  ASSERT_EQ(first.Count(JobKind::kGate), 2) << "one check decided, one ended but not decided";
  const std::vector<RunEventRecord> before = Events(1);
  auto last = StoreTimeSeconds(before.back().created_at);
  ASSERT_TRUE(last.has_value());
  const std::time_t an_hour_earlier = static_cast<std::time_t>(*last) - 3600;
  std::tm tm{};
  gmtime_r(&an_hour_earlier, &tm);
  char created[40];
  std::strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%S.000Z", &tm);
  interrupting.created_at = created;
  interrupting.fail_kind.clear();

  JournalingExecutor second;
  generator.next_ = 1000;
  Optimizer resumed(task_, generator, second, interrupting, progress_);
  auto done = resumed.Resume(1);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_EQ(done->stop_reason, StopReason::kTime) << "an hour of a 30-minute limit was spent before the resume";
  EXPECT_EQ(second.Count(JobKind::kDraft), 0) << "no new expansion once the time is spent";
  EXPECT_EQ(done->promotion_checks, first.Count(JobKind::kGate) + second.Count(JobKind::kGate))
      << "the check decided before the kill counts, and the journaled one once";
  double earlier = 0;
  for (const auto& e : progress_.events)
    if (e.value("event", "") == "resume") earlier = e.value("earlier_processes_s", 0.0);
  EXPECT_GE(earlier, 3600);
  EXPECT_LT(earlier, 3660);
}

// Killed after the starting candidate's evaluation ended but before its node was recorded, then
// the file edited: the resumed run's root is the source that was evaluated, served from the
// journal, not the edited file.
TEST_F(JournalTest, ARootServedFromTheJournalKeepsTheSourceItWasEvaluatedOn) {
  const auto from = dir_->path() / "start.cpp";
  std::filesystem::copy_file(o_.from, from);
  o_.from = from.string();
  const std::string original = *ReadFile(from);
  InterruptingStore interrupting(*store_);
  interrupting.fail_nodes = true;
  JournalingExecutor first;
  GrowingGenerator generator;
  Optimizer interrupted(task_, generator, first, interrupting, progress_);
  ASSERT_FALSE(interrupted.Run(o_).ok());
  ASSERT_EQ(first.log.size(), 1u) << "only the root was evaluated";
  ASSERT_TRUE(Nodes(1).empty());
  const std::string edited = original + "// edited after the kill\n";
  ASSERT_TRUE(WriteFileAtomic(from, edited).ok());

  JournalingExecutor second;
  Optimizer resumed(task_, generator, second, *store_, progress_);
  auto done = resumed.Resume(1);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  for (const auto& [kind, text] : second.log)
    EXPECT_TRUE(kind != JobKind::kDraft || (text != original && text != edited)) << "the root was evaluated again";
  auto nodes = Nodes(1);
  ASSERT_FALSE(nodes.empty());
  EXPECT_EQ(*store_->GetBlob(nodes[0].source_blob), original) << "node 0 is the source its result is of";
}

}  // namespace
}  // namespace kpilot
