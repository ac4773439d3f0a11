// Anticipated compiles in the optimize loop (Optimizer::Loop::AnticipateAfter): the configs the
// generator anticipates for the root, and for each draft that passes within a few percent of the
// best so far, go to the executor as compile-only jobs no one waits for, the moment the evaluation
// ends; a regression's are not guessed. Test doubles: an executor that evaluates at once and
// logs every job, and a generator that anticipates one config per node.
#include <gtest/gtest.h>

#include <future>
#include <map>
#include <mutex>

#include "core/fs.h"
#include "optimize/optimizer.h"
#include "scripted_generator.h"
#include "task/loader.h"
#include "test_paths.h"

namespace kpilot {
namespace {

std::string ValueOf(const ParamValues& p) { return p.count("V") ? p.at("V") : "root"; }

// Speedup by the draft's V param; every paired check promotes. Logs "eval V" for evaluations and
// "guess V" for compiles no one waits for (which finish at once).
class LoggingExecutor : public Executor {
 public:
  explicit LoggingExecutor(std::map<std::string, double> speedups) : speedups_(std::move(speedups)) {}
  std::future<EvalJobResult> Submit(EvalJob job) override {
    EvalJobResult r;
    const std::string v = ValueOf(job.params);
    std::promise<EvalJobResult> p;
    if (job.compile_only) {
      Log((job.waited_for && !job.waited_for->load() ? "guess " : "probe ") + v);
      r.compiled = true;
      r.skipped = true;
      p.set_value(std::move(r));
      return p.get_future();
    }
    const bool paired = job.options.baseline_source.has_value();
    Log((paired ? "gate " : "eval ") + v);
    r.object_sha = "sha-" + v;
    if (job.admit && !job.admit(r.object_sha)) r.skipped = true;
    r.compiled = true;
    r.evaluation.verdict.kind = VerdictKind::kPassed;
    r.evaluation.speedup_geomean = paired ? 1.2 : speedups_.at(v);
    r.evaluation.speedup_geomean_ci = paired ? Interval{1.1, 1.3} : Interval{0.99, 1.01};
    if (!r.skipped && job.on_done) job.on_done(r);  // as the local executor does, before the future is ready
    p.set_value(std::move(r));
    return p.get_future();
  }
  double BusySeconds() const override { return 0; }
  double ElapsedSeconds() const override { return 1; }
  std::vector<std::string> Jobs() {
    std::lock_guard<std::mutex> lock(mu_);
    return log_;
  }

 private:
  void Log(std::string s) {
    std::lock_guard<std::mutex> lock(mu_);
    log_.push_back(std::move(s));
  }
  std::mutex mu_;
  std::vector<std::string> log_;
  std::map<std::string, double> speedups_;
};

// Drafts V = values in order, one per expansion; anticipates "after-<parent's V>" for any node.
class GuessingGenerator : public testing::ScriptedGenerator {
 public:
  using ScriptedGenerator::ScriptedGenerator;
  std::vector<ParamValues> Anticipate(const Task&, const ParamValues& parent) const override {
    return {{{"V", "after-" + ValueOf(parent)}}};
  }
};

class Quiet : public ProgressSink {
 public:
  void Event(const nlohmann::json&) override {}
};

struct Outcome {
  std::vector<std::string> jobs;
  int anticipated = -1;
};

Outcome RunWith(bool anticipate) {
  auto dir = TempDir::Create("kpilot-anticipate-");
  EXPECT_TRUE(dir.ok());
  auto store = Store::Open(dir->path());
  EXPECT_TRUE(store.ok());
  auto task = LoadTask(testing::SourceDir() / "examples" / "cuda" / "vector_add");
  EXPECT_TRUE(task.ok());
  OptimizeOptions o;
  o.task_dir = task->dir.string();
  o.from = (task->dir / "candidates" / "vector_grid_stride.cu").string();
  o.budget = 4;
  o.search.policy = Policy::kGreedy;
  o.pipeline_depth = 1;  // one expansion at a time: the order below is exact
  o.counters = false;
  o.footprints = true;
  o.anticipate = anticipate;
  // a improves on the root, b regresses, c is within 3% of a.
  LoggingExecutor exec({{"root", 1.0}, {"a", 1.5}, {"b", 0.5}, {"c", 1.48}});
  GuessingGenerator generator({"a", "b", "c"});
  Quiet quiet;
  Optimizer optimizer(*task, generator, exec, **store, quiet);
  auto res = optimizer.Run(o);
  EXPECT_TRUE(res.ok()) << res.status().ToString();
  return {exec.Jobs(), res.ok() ? res->anticipated : -1};
}

TEST(Anticipate, GuessesTheChildrenOfTheRootAndOfEachDraftNearTheBestAsItEnds) {
  Outcome run = RunWith(true);
  EXPECT_EQ(run.jobs, (std::vector<std::string>{"eval root", "guess after-root", "eval a", "guess after-a", "gate a",
                                                "eval b", "eval c", "guess after-c", "eval a"}));
  EXPECT_EQ(run.anticipated, 3);
}

TEST(Anticipate, NothingIsGuessedWithAnticipateOff) {
  Outcome run = RunWith(false);
  EXPECT_EQ(run.jobs, (std::vector<std::string>{"eval root", "eval a", "gate a", "eval b", "eval c", "eval a"}));
  EXPECT_EQ(run.anticipated, 0);
}

}  // namespace
}  // namespace kpilot
