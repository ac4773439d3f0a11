// --time bounds a run's wall clock even when its drafts take far longer to compile than the limit
// (a CUTLASS GEMM's take a minute): when the limit passes, the drafts in flight are dropped, not
// waited for, and the run stops for "time" with its best evaluated again.
#include <gtest/gtest.h>

#include <chrono>

#include "collect_events.h"
#include "core/fs.h"
#include "optimize/optimizer.h"
#include "scripted_generator.h"
#include "support/sync.h"
#include "task/loader.h"
#include "test_paths.h"

namespace kpilot {
namespace {

// The start candidate and the final evaluation pass at once; a draft (a job with a V param)
// compiles until its job is cancelled, then ends as the local executor's do. A run that waited
// for its drafts would take a minute per draft.
class SlowCompileExecutor : public Executor {
 public:
  std::future<EvalJobResult> Submit(EvalJob job) override {
    if (!job.params.count("V")) {
      EvalJobResult r;
      r.object_sha = "sha-root";
      r.evaluation.verdict.kind = VerdictKind::kPassed;
      r.evaluation.speedup_geomean = 1;
      r.evaluation.speedup_geomean_ci = {0.99, 1.01};
      std::promise<EvalJobResult> p;
      p.set_value(std::move(r));
      return p.get_future();
    }
    ++drafts;
    return std::async(std::launch::async, [cancelled = job.cancelled] {
      EvalJobResult r;
      if (cancelled && testing::WaitUntil([&] { return cancelled->load(); }, std::chrono::seconds(60)))
        r.skipped = r.cancelled = true;
      else
        r.status = Status::Internal("the draft was never cancelled");
      return r;
    });
  }
  double BusySeconds() const override { return 0; }
  double ElapsedSeconds() const override { return 1; }
  std::atomic<int> drafts{0};
};

TEST(TimeLimit, DraftsStillCompilingWhenTheTimeRunsOutAreDropped) {
  auto dir = TempDir::Create("kpilot-time-limit-");
  ASSERT_TRUE(dir.ok());
  auto store = Store::Open(dir->path());
  ASSERT_TRUE(store.ok());
  auto task = LoadTask(testing::SourceDir() / "examples" / "host" / "saxpy");
  ASSERT_TRUE(task.ok());
  SlowCompileExecutor exec;
  testing::ScriptedGenerator generator({"a", "b", "c", "d"});
  testing::CollectEvents progress;
  Optimizer optimizer(*task, generator, exec, **store, progress);
  OptimizeOptions o;
  o.task_dir = task->dir.string();
  o.from = (task->dir / "candidates" / "omp_simd.cpp").string();
  o.budget = 50;
  o.time_limit_s = 0.2;
  const auto t0 = std::chrono::steady_clock::now();
  auto res = optimizer.Run(o);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_EQ(res->stop_reason, StopReason::kTime);
  EXPECT_LT(wall, 30) << "the run waited for its drafts' compiles";
  EXPECT_EQ(res->evaluations, 1) << "the start candidate's only: a dropped draft is not an evaluation";
  EXPECT_EQ(res->best_node, 0);
  EXPECT_TRUE(res->final.verdict.passed());
  const int cancelled = progress.Count("cancelled");
  for (const auto& e : progress.Of("cancelled")) EXPECT_EQ(e.value("reason", ""), "time");
  EXPECT_GE(exec.drafts.load(), 1);
  EXPECT_EQ(cancelled, exec.drafts.load()) << "each draft in flight is reported dropped";
  EXPECT_EQ(res->cancelled, cancelled);
}

}  // namespace
}  // namespace kpilot
