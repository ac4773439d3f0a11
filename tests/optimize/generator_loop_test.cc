// How the loop treats LLM-style generators, with an executor double: the spending and token caps
// stop the run ("cost", "tokens"), slow requests for several expansions are in flight at once
// within the caps and the budget, drafts a generator failed to make go to search memory and the
// events (and close the node when it keeps failing), and the context carries the parent's
// verdict evidence.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>

#include "collect_events.h"
#include "core/fs.h"
#include "optimize/optimizer.h"
#include "skills/skills.h"
#include "task/loader.h"
#include "test_paths.h"

namespace kpilot {
namespace {

// Every draft passes, 10% faster per evaluation; the root fails when asked to.
class CountingExecutor : public Executor {
 public:
  std::future<EvalJobResult> Submit(EvalJob job) override {
    EvalJobResult r;
    auto src = ReadFile(job.source);
    r.object_sha = "sha-" + std::to_string(std::hash<std::string>()(src.ok() ? *src : "") ^ job.params.size());
    if (job.admit && !job.admit(r.object_sha)) r.skipped = true;
    Evaluation& e = r.evaluation;
    if (fail_root && n_++ == 0) {
      e.verdict.kind = VerdictKind::kIncorrect;
      e.verdict.summary = "y[17] = 3.5, expected 2.5";
      e.verdict.evidence = {{"first_bad_index", 17}};
    } else {
      e.verdict.kind = VerdictKind::kPassed;
      double s = 1.0 + 0.1 * static_cast<double>(n_++);
      e.speedup_geomean = s;
      e.speedup_geomean_ci = {s * 0.99, s * 1.01};
    }
    busy_s_ += busy_per_job;
    elapsed_s_ += 1;
    std::promise<EvalJobResult> p;
    p.set_value(std::move(r));
    return p.get_future();
  }
  // A clock that moves one second per job, of which `busy_per_job` on the evaluation queue.
  double BusySeconds() const override { return busy_s_; }
  double ElapsedSeconds() const override { return elapsed_s_; }
  bool fail_root = false;
  double busy_per_job = 1;

 private:
  int n_ = 0;
  double busy_s_ = 0, elapsed_s_ = 0;
};

// Spends `cost` dollars per call; makes a distinct draft, or fails to when `fail` is set.
class SpendingGenerator : public Generator {
 public:
  std::string name() const override { return "spending"; }
  std::future<Result<std::vector<Draft>>> Propose(const ProposalContext& ctx) override {
    contexts.push_back(ctx);
    spent_.requests += 1;
    spent_.cost_usd += cost;
    spent_.input_tokens += 1000;
    spent_.output_tokens += 500;
    Draft d;
    if (fail) {
      d.failure = "the reply has no fenced code block; several files";
      d.summary = "fake: no usable candidate";
    } else if (repeat) {
      d.source = "// the same kernel, every time\n";
      d.source_name = "llm.cpp";
      d.summary = "the same again";
    } else {
      d.source = ctx.parent_source + "// variant " + std::to_string(calls_++) + "\n";
      d.source_name = "llm.cpp";
      d.summary = "variant";
      for (const auto& sk : ctx.skills) d.skills_applied.push_back(sk.id);
    }
    std::promise<Result<std::vector<Draft>>> p;
    p.set_value(std::vector<Draft>{d});
    return p.get_future();
  }
  GeneratorSpend Spent() const override { return spent_; }
  double cost = 0.4;
  bool fail = false;
  bool repeat = false;  // always the same source: every draft after the first is a duplicate
  std::vector<ProposalContext> contexts;

 private:
  GeneratorSpend spent_;
  int calls_ = 0;
};

using Collect = testing::CollectEvents;

// Answers each request on a thread of its own, once another request has run beside it (or after
// 1 s alone): a loop that waits for each answer before it asks again never sees two at once.
class ConcurrentGenerator : public Generator {
 public:
  std::string name() const override { return "concurrent"; }
  std::future<Result<std::vector<Draft>>> Propose(const ProposalContext& ctx) override {
    const int call = calls_++;
    std::string source = ctx.parent_source + "// variant " + std::to_string(call) + "\n";
    return std::async(std::launch::async, [this, source, call]() -> Result<std::vector<Draft>> {
      {
        std::unique_lock<std::mutex> lock(mu_);
        max_running = std::max(max_running, ++running_);
        cv_.notify_all();
        if (wait_for_company) cv_.wait_for(lock, std::chrono::seconds(1), [this] { return max_running >= 2; });
        --running_;
        spent_.requests += 1;
        spent_.cost_usd += cost;
      }
      Draft d;
      d.source = source;
      d.source_name = "llm.cpp";
      d.summary = "variant";
      if (failing.count(call)) {
        d.failure = "the reply has no fenced code block";
        d.summary = "fake: no usable candidate";
      }
      return std::vector<Draft>{d};
    });
  }
  GeneratorSpend Spent() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return spent_;
  }
  int max_running = 0;  // read after the run
  bool wait_for_company = true;
  std::set<int> failing;  // calls (from 0) whose draft the generator fails to make
  double cost = 0;        // dollars a request

 private:
  GeneratorSpend spent_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int running_ = 0;
  int calls_ = 0;
};

class GeneratorLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = TempDir::Create("kpilot-generator-loop-");
    ASSERT_TRUE(d.ok());
    dir_.emplace(std::move(d).value());
    auto s = Store::Open(dir_->path() / "store");
    ASSERT_TRUE(s.ok());
    store_ = std::move(s).value();
    auto t = LoadTask(testing::SourceDir() / "examples" / "host" / "saxpy");
    ASSERT_TRUE(t.ok());
    task_ = *t;
    o_.task_dir = task_.dir.string();
    o_.from = (task_.dir / "candidates" / "omp_simd.cpp").string();
    o_.budget = 20;
    o_.drafts_per_expansion = 1;
    o_.pipeline_depth = 1;
  }
  std::optional<TempDir> dir_;
  std::unique_ptr<Store> store_;
  Task task_;
  OptimizeOptions o_;
  CountingExecutor executor_;
  SpendingGenerator generator_;
  Collect progress_;
};

TEST_F(GeneratorLoopTest, TheSpendingCapStopsTheRun) {
  o_.max_cost_usd = 1.0;
  Optimizer optimizer(task_, generator_, executor_, *store_, progress_);
  auto res = optimizer.Run(o_);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_EQ(res->stop_reason, StopReason::kCost);
  EXPECT_EQ(generator_.contexts.size(), 3u) << "0.4, 0.8, 1.2 ≥ 1.0: no fourth request";
  EXPECT_EQ(res->evaluations, 4);
  EXPECT_NEAR(res->spend.cost_usd, 1.2, 1e-9);
  EXPECT_EQ(res->spend.requests, 3);
  EXPECT_EQ(progress_.Count("spend"), 3);
  auto run = store_->GetRun(res->run_id);
  ASSERT_TRUE(run.ok() && run->has_value());
  EXPECT_EQ((*run)->stop_reason, "cost");
  EXPECT_EQ(generator_.contexts.front().run_id, res->run_id);
}

TEST_F(GeneratorLoopTest, TheTokenCapStopsTheRun) {
  o_.max_tokens = 3000;  // 1500 a request: the second reaches it
  Optimizer optimizer(task_, generator_, executor_, *store_, progress_);
  auto res = optimizer.Run(o_);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_EQ(res->stop_reason, StopReason::kTokens);
  EXPECT_EQ(generator_.contexts.size(), 2u);
  EXPECT_EQ(res->spend.input_tokens + res->spend.output_tokens, 3000);
}

TEST_F(GeneratorLoopTest, SeveralRequestsAreInFlightAtOnce) {
  ConcurrentGenerator generator;
  o_.pipeline_depth = 3;
  o_.budget = 7;
  o_.search.policy = Policy::kGreedy;
  Optimizer optimizer(task_, generator, executor_, *store_, progress_);
  auto started = std::chrono::steady_clock::now();
  auto res = optimizer.Run(o_);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_GE(generator.max_running, 2) << "the loop asked for the next expansion while a request was unanswered";
  EXPECT_EQ(res->stop_reason, StopReason::kBudget);
  EXPECT_EQ(res->evaluations, 7) << "requests in flight count against the budget: none evaluated beyond it";
  auto events = store_->ListRunEvents(res->run_id);
  ASSERT_TRUE(events.ok());
  int proposals = 0;
  for (const auto& e : *events) proposals += e.kind == "proposal";
  EXPECT_EQ(proposals, 7) << "every draft the requests made is recorded and evaluated";
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), 5.0);
}

TEST_F(GeneratorLoopTest, UnderASpendingCapRequestsGoOutOnlyWhileTheCapAllowsThem) {
  // $1 a request, cap $2.50: the first goes out alone (no cost known yet); after its answer two
  // may be in flight ($1 spent + $1 expected < $2.50), not three. Sequential requests would also
  // stop after the third.
  ConcurrentGenerator generator;
  generator.wait_for_company = false;
  generator.cost = 1;
  o_.pipeline_depth = 4;
  o_.max_cost_usd = 2.5;
  o_.search.policy = Policy::kGreedy;
  Optimizer optimizer(task_, generator, executor_, *store_, progress_);
  auto res = optimizer.Run(o_);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_EQ(res->stop_reason, StopReason::kCost);
  EXPECT_EQ(res->spend.requests, 3);
  EXPECT_LE(generator.max_running, 2);
}

TEST_F(GeneratorLoopTest, ARequestInFlightThatFailsGivesItsBudgetBack) {
  // Budget 3, two drafts an expansion: after the start, the first request reserves the rest and
  // is the only one in flight. It fails: the run asks again instead of ending with "budget" at
  // one evaluation.
  ConcurrentGenerator generator;
  generator.wait_for_company = false;
  generator.failing = {0};
  o_.pipeline_depth = 3;
  o_.drafts_per_expansion = 2;
  o_.budget = 3;
  o_.search.policy = Policy::kGreedy;
  Optimizer optimizer(task_, generator, executor_, *store_, progress_);
  auto res = optimizer.Run(o_);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_EQ(res->stop_reason, StopReason::kBudget);
  EXPECT_EQ(res->evaluations, 3);
  EXPECT_EQ(progress_.Count("generator_failure"), 1);
}

TEST_F(GeneratorLoopTest, WithoutACapTheBudgetStopsIt) {
  o_.budget = 4;
  Optimizer optimizer(task_, generator_, executor_, *store_, progress_);
  auto res = optimizer.Run(o_);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_EQ(res->stop_reason, StopReason::kBudget);
  EXPECT_NEAR(res->spend.cost_usd, 1.2, 1e-9);
}

TEST_F(GeneratorLoopTest, AGeneratorThatOnlyRepeatsItselfEndsTheRun) {
  // Duplicates hand their budget back, so without this stop the run would never end.
  generator_.repeat = true;
  generator_.cost = 0;
  o_.budget = 4;
  Optimizer optimizer(task_, generator_, executor_, *store_, progress_);
  auto res = optimizer.Run(o_);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_EQ(res->stop_reason, StopReason::kDuplicates);
  EXPECT_EQ(res->evaluations, 2) << "the start and the one new kernel";
  EXPECT_EQ(res->duplicates, 16) << "at least 16 in a row, and at least the budget";
}

TEST_F(GeneratorLoopTest, FailedDraftsAreRememberedAndAFailingNodeIsClosed) {
  generator_.fail = true;
  executor_.fail_root = true;
  Optimizer optimizer(task_, generator_, executor_, *store_, progress_);
  auto res = optimizer.Run(o_);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_EQ(res->stop_reason, StopReason::kExhausted);
  EXPECT_EQ(res->evaluations, 1);
  ASSERT_EQ(generator_.contexts.size(), 2u) << "closed after two failed expansions";
  EXPECT_EQ(progress_.Count("generator_failure"), 2);
  // The second request already knows why the first failed, and why the parent is wrong.
  const ProposalContext& second = generator_.contexts[1];
  EXPECT_NE(second.memory_summary.find("no fenced code block"), std::string::npos) << second.memory_summary;
  EXPECT_EQ(second.parent_verdict, "incorrect");
  EXPECT_EQ(second.parent_verdict_summary, "y[17] = 3.5, expected 2.5");
  EXPECT_NE(second.parent_verdict_evidence.find("first_bad_index"), std::string::npos);
  bool closed = false;
  for (const auto& e : progress_.events)
    closed |= e.value("event", "") == "close" && e.value("reason", "").find("failed 2 times") != std::string::npos;
  EXPECT_TRUE(closed);
}

TEST(PipelineDepth, GrowsByOneWhileTheQueueIsIdleAndStopsAtFour) {
  EXPECT_EQ(NextPipelineDepth(3, 0.5, 1.0), 4);
  EXPECT_EQ(NextPipelineDepth(3, 0.79, 1.0), 4);
  EXPECT_EQ(NextPipelineDepth(4, 0.1, 1.0), 4) << "kMaxAutoPipelineDepth";
  EXPECT_EQ(NextPipelineDepth(3, 0.8, 1.0), 3) << "busy 80% is the goal";
  EXPECT_EQ(NextPipelineDepth(4, 1.0, 1.0), 4) << "never shallower once deeper";
  EXPECT_EQ(NextPipelineDepth(3, 0, 0), 3) << "no time passed: nothing measured";
  EXPECT_EQ(NextPipelineDepth(1, 1.0, 1.0), 3) << "kMinAutoPipelineDepth";
  EXPECT_EQ(NextPipelineDepth(2, 1.0, 1.0), 3) << "kMinAutoPipelineDepth";
}

TEST(PipelineDepth, EachMoreGpuStartsOneDeeperAndMayGrowTwoMore) {
  EXPECT_EQ(MinPipelineDepth(1), 3);
  EXPECT_EQ(MaxPipelineDepth(1), 4);
  EXPECT_EQ(MinPipelineDepth(2), 4);
  EXPECT_EQ(MaxPipelineDepth(2), 6);
  EXPECT_EQ(NextPipelineDepth(3, 2.0, 1.0, 2), 4) << "never below the two-GPU minimum";
  EXPECT_EQ(NextPipelineDepth(4, 1.5, 1.0, 2), 5) << "busy 1.5 of 2 GPU-seconds is 75%, under the goal";
  EXPECT_EQ(NextPipelineDepth(4, 1.7, 1.0, 2), 4) << "85% of both";
  EXPECT_EQ(NextPipelineDepth(6, 0.1, 1.0, 2), 6) << "the two-GPU cap";
}

TEST_F(GeneratorLoopTest, AnIdleQueueDeepensTheAdaptivePipeline) {
  generator_.cost = 0;
  o_.pipeline_depth = 0;  // adaptive
  executor_.busy_per_job = 0.5;
  Optimizer optimizer(task_, generator_, executor_, *store_, progress_);
  auto res = optimizer.Run(o_);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_EQ(res->pipeline_depth, 4);
  EXPECT_EQ(progress_.Count("pipeline"), 1) << "3 → 4, then no further";
}

TEST_F(GeneratorLoopTest, AReplayKeepsItsOwnDepthHoweverIdleItsClockLooks) {
  generator_.cost = 0;
  o_.pipeline_depth = 0;
  o_.space_file = "space.json";  // the executor double serves it; only the depth rule differs
  executor_.busy_per_job = 0.1;
  Optimizer optimizer(task_, generator_, executor_, *store_, progress_);
  auto res = optimizer.Run(o_);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_EQ(res->pipeline_depth, kSpacePipelineDepth);
  EXPECT_EQ(progress_.Count("pipeline"), 0);
}

TEST_F(GeneratorLoopTest, ABusyQueueOrAFixedDepthKeepsThePipeline) {
  generator_.cost = 0;
  o_.pipeline_depth = 0;
  executor_.busy_per_job = 0.9;
  Optimizer busy(task_, generator_, executor_, *store_, progress_);
  auto res = busy.Run(o_);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_EQ(res->pipeline_depth, kMinAutoPipelineDepth);
  o_.pipeline_depth = 1;
  executor_.busy_per_job = 0.1;
  Optimizer fixed(task_, generator_, executor_, *store_, progress_);
  res = fixed.Run(o_);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_EQ(res->pipeline_depth, 1);
  EXPECT_EQ(progress_.Count("pipeline"), 0);
}

// Usage rows kept in memory.
class MemoryUsageLog : public UsageLog {
 public:
  Status Append(const std::vector<SkillUsageRecord>& added) override {
    rows.insert(rows.end(), added.begin(), added.end());
    return Status::Ok();
  }
  Result<std::vector<SkillUsageRecord>> List() override { return rows; }
  std::vector<SkillUsageRecord> rows;
};

class SkillsLoopTest : public GeneratorLoopTest {
 protected:
  void SetUp() override {
    GeneratorLoopTest::SetUp();
    generator_.cost = 0;
    o_.budget = 4;
    auto lib =
        LoadLibrary({{testing::SourceDir() / "tests" / "fixtures" / "skills" / "host", SkillOrigin::kCommandLine}},
                    ValidationOptions{});
    ASSERT_TRUE(lib.ok()) << lib.status().ToString();
    library_ = *lib;
  }
  SkillLibrary library_;
  MemoryUsageLog usage_;
};

TEST_F(SkillsLoopTest, CardsReachTheGeneratorAndTheirUsageIsRecorded) {
  Optimizer optimizer(task_, generator_, executor_, *store_, progress_);
  optimizer.UseSkills(&library_, &usage_);
  auto res = optimizer.Run(o_);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  ASSERT_FALSE(generator_.contexts.empty());
  const ProposalContext& c = generator_.contexts.front();
  EXPECT_TRUE(c.skills_enabled);
  ASSERT_EQ(c.skills.size(), 1u);
  EXPECT_EQ(c.skills[0].id, "omp-chunk-size");
  EXPECT_NE(c.skills[0].card_text.find("## Recipe"), std::string::npos);
  EXPECT_EQ(c.skills[0].folder.filename(), "omp-chunk-size");
  // One card row per evaluated child: offered and (the fake generator says so) applied, with the
  // child's speedup over its parent (the executor double makes each draft faster).
  int applied = 0;
  for (const auto& r : usage_.rows)
    if (r.kind == "card") {
      EXPECT_EQ(r.name, "omp-chunk-size");
      EXPECT_TRUE(r.fired);
      applied += r.applied;
      EXPECT_GT(r.speedup, 1.0);
    }
  EXPECT_EQ(applied, res->evaluations - 1) << "every child but the root";
  bool recorded = false;
  for (const auto& e : progress_.events)
    recorded |= e.value("event", "") == "evaluated" && e.value("skills_applied", nlohmann::json::array()).size() == 1;
  EXPECT_TRUE(recorded);
}

TEST_F(SkillsLoopTest, SkillsOffOffersNoCardAndRecordsNoUsage) {
  o_.skills = false;
  Optimizer optimizer(task_, generator_, executor_, *store_, progress_);
  optimizer.UseSkills(&library_, &usage_);
  auto res = optimizer.Run(o_);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  ASSERT_FALSE(generator_.contexts.empty());
  EXPECT_FALSE(generator_.contexts.front().skills_enabled);
  EXPECT_TRUE(generator_.contexts.front().skills.empty());
  EXPECT_TRUE(usage_.rows.empty());
}

}  // namespace
}  // namespace kpilot
