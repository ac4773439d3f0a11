// The promotion gate with controlled timings: a test double of the executor returns evaluations
// whose speedups and CIs the test chooses, so the rule is checked exactly (two shared CI cores
// cannot time honestly to 1%).
#include <gtest/gtest.h>

#include <map>

#include "core/fs.h"
#include "optimize/optimizer.h"
#include "scripted_proposer.h"
#include "task/loader.h"
#include "test_paths.h"

namespace kpilot {
namespace {

// Drafts named by a "V" param; each value has a scripted speedup over the task baseline and a
// scripted paired result against the incumbent.
struct Script {
  double speedup;            // over the baseline
  double paired_lo, paired;  // paired vs the incumbent: CI lower bound and ratio
};

class ScriptedExecutor : public Executor {
 public:
  explicit ScriptedExecutor(std::map<std::string, Script> s) : script_(std::move(s)) {}
  std::future<EvalJobResult> Submit(EvalJob job) override {
    EvalJobResult r;
    std::string v = job.params.count("V") ? job.params.at("V") : "root";
    const Script& s = script_.at(v);
    r.object_sha = "sha-" + v;
    if (job.admit && !job.admit(r.object_sha)) r.skipped = true;
    Evaluation& e = r.evaluation;
    e.verdict.kind = VerdictKind::kPassed;
    bool paired = job.options.baseline_source.has_value();
    e.speedup_geomean = paired ? s.paired : s.speedup;
    e.speedup_geomean_ci = paired ? Interval{s.paired_lo, s.paired * 1.01} : Interval{s.speedup * 0.99, s.speedup * 1.01};
    if (paired) ++paired_calls;
    std::promise<EvalJobResult> p;
    p.set_value(std::move(r));
    return p.get_future();
  }
  double BusySeconds() const override { return 0; }
  double ElapsedSeconds() const override { return 1; }
  int paired_calls = 0;

 private:
  std::map<std::string, Script> script_;
};

using testing::ScriptedProposer;

class Collect : public ProgressSink {
 public:
  void Event(const nlohmann::json& e) override { events.push_back(e); }
  std::vector<nlohmann::json> events;
};

TEST(Promotion, OnlyAPairedCiAboveOnePromotes) {
  auto dir = TempDir::Create("kpilot-promotion-");
  ASSERT_TRUE(dir.ok());
  auto store = Store::Open(dir->path());
  ASSERT_TRUE(store.ok());
  auto task = LoadTask(testing::SourceDir() / "examples" / "host" / "saxpy");
  ASSERT_TRUE(task.ok());
  ScriptedExecutor exec({{"root", {1.0, 0, 0}},
                         {"a", {1.5, 1.2, 1.5}},      // faster, paired CI above 1: promoted
                         {"b", {1.6, 0.98, 1.02}},    // looks faster, paired CI touches 1: rejected
                         {"c", {1.4, 0, 0}}});        // slower than the incumbent: no paired run
  ScriptedProposer proposer({"a", "b", "c"});
  Collect progress;
  Optimizer optimizer(*task, proposer, exec, **store, progress);
  OptimizeOptions o;
  o.task_dir = task->dir.string();
  o.from = (task->dir / "candidates" / "omp_simd.cpp").string();
  o.budget = 10;
  o.search.policy = Policy::kGreedy;
  auto res = optimizer.Run(o);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  std::vector<std::string> decisions;
  for (const auto& e : progress.events) {
    std::string kind = e.value("event", "");
    if (kind == "promote" || kind == "reject") decisions.push_back(kind + " " + std::to_string(e.value("node", -1)));
  }
  EXPECT_EQ(decisions, (std::vector<std::string>{"promote 0", "promote 1", "reject 2"}));
  EXPECT_EQ(exec.paired_calls, 2);
  EXPECT_EQ(res->best_node, 1);
  EXPECT_EQ(res->best_params.at("V"), "a");
  EXPECT_EQ(res->evaluations, 4);
  EXPECT_EQ(res->stop_reason, "exhausted");
}

}  // namespace
}  // namespace kpilot
