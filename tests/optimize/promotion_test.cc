// The promotion gate, the stop rules (plateau, target) and the objectives (time, energy, mix) with
// controlled timings: a test double of the executor returns evaluations whose speedups, CIs and
// joules the test chooses, so each rule is checked exactly (two shared CI cores cannot time
// honestly to 1%, and have no NVML).
#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "collect_events.h"
#include "core/fs.h"
#include "optimize/optimizer.h"
#include "scripted_generator.h"
#include "task/loader.h"
#include "test_paths.h"

namespace kpilot {
namespace {

// Drafts named by a "V" param; each value has a scripted speedup over the task baseline and a
// scripted paired result against the incumbent.
struct Script {
  double speedup;            // over the baseline
  double paired_lo, paired;  // paired vs the incumbent: CI lower bound and ratio
  double joules = 0;         // per call (0: not measured)
  double median_ms = 0;      // > 0: a cuda evaluation of workload 64M with a kernel and a calibration
};

// The task baseline's joules per call in scripted evaluations.
constexpr double kBaselineJoules = 10;

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
    e.speedup_geomean_ci =
        paired ? Interval{s.paired_lo, s.paired * 1.01} : Interval{s.speedup * 0.99, s.speedup * 1.01};
    if (paired) ++paired_calls;
    if (s.joules > 0 || s.median_ms > 0) {
      WorkloadTiming t;
      t.workload = "64M";
      t.candidate.median = s.median_ms;
      t.joules_per_call = s.joules;
      // In a paired check the baseline is the incumbent, named by its V.
      const std::string base =
          paired && job.options.baseline_params.count("V") ? job.options.baseline_params.at("V") : std::string();
      t.baseline_joules_per_call =
          paired ? (script_.count(base) ? script_.at(base).joules : script_.at("root").joules) : kBaselineJoules;
      e.timings.push_back(t);
    }
    if (s.median_ms > 0) {
      KernelResources k;
      k.name = k.mangled = "VectorAdd";
      k.arch = "sm_90a";
      k.registers = 16;
      e.compile.resources.push_back(k);
      e.run.calibration.dram_bytes_per_s = 4e12;  // 64M's 805 MB floor: 0.2013 ms
      e.run.calibration.fp32_flops_per_s = 5e13;
    }
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

using testing::ScriptedGenerator;

using Collect = testing::CollectEvents;

TEST(Promotion, OnlyAPairedCiAboveOnePromotes) {
  auto dir = TempDir::Create("kpilot-promotion-");
  ASSERT_TRUE(dir.ok());
  auto store = Store::Open(dir->path());
  ASSERT_TRUE(store.ok());
  auto task = LoadTask(testing::SourceDir() / "examples" / "host" / "saxpy");
  ASSERT_TRUE(task.ok());
  ScriptedExecutor exec({{"root", {1.0, 0, 0}},
                         {"a", {1.5, 1.2, 1.5}},    // faster, paired CI above 1: promoted
                         {"b", {1.6, 0.98, 1.02}},  // looks faster, paired CI touches 1: rejected
                         {"c", {1.4, 0, 0}}});      // slower than the incumbent: no paired run
  ScriptedGenerator generator({"a", "b", "c"});
  Collect progress;
  Optimizer optimizer(*task, generator, exec, **store, progress);
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
  EXPECT_EQ(res->stop_reason, StopReason::kExhausted);
}

// A run over `script` from drafts `values` (greedy, one draft an expansion) on `task_name`.
struct ScriptedRun {
  Result<OptimizeResult> res = Status::Internal("not run");
  std::vector<nlohmann::json> events;
  int paired_calls = 0;
  std::vector<std::string> Decisions() const {
    std::vector<std::string> out;
    for (const auto& e : events) {
      std::string kind = e.value("event", "");
      if (kind == "promote" || kind == "reject") out.push_back(kind + " " + std::to_string(e.value("node", -1)));
    }
    return out;
  }
  const nlohmann::json* Find(const std::string& kind) const {
    for (const auto& e : events)
      if (e.value("event", "") == kind) return &e;
    return nullptr;
  }
};

ScriptedRun RunScript(const std::string& task_dir, const std::map<std::string, Script>& script,
                      const std::vector<std::string>& values, const std::function<void(OptimizeOptions*)>& tweak) {
  ScriptedRun out;
  auto dir = TempDir::Create("kpilot-objective-");
  if (!dir.ok()) return out;
  auto store = Store::Open(dir->path());
  auto task = LoadTask(testing::SourceDir() / task_dir);
  if (!store.ok() || !task.ok()) {
    out.res = !store.ok() ? store.status() : task.status();
    return out;
  }
  ScriptedExecutor exec(script);
  ScriptedGenerator generator(values);
  Collect progress;
  Optimizer optimizer(*task, generator, exec, **store, progress);
  OptimizeOptions o;
  o.task_dir = task->dir.string();
  for (const auto& f : std::filesystem::directory_iterator(task->dir / "candidates")) o.from = f.path().string();
  o.budget = 20;
  o.search.policy = Policy::kGreedy;
  o.pipeline_depth = 1;                              // each expansion sees every result before it
  o.footprints = o.anticipate = o.counters = false;  // nothing here compiles or profiles
  o.arch = "sm_90a";
  tweak(&o);
  out.res = optimizer.Run(o);
  out.events = progress.events;
  out.paired_calls = exec.paired_calls;
  return out;
}

TEST(StopRules, APlateauStopsAfterThatManyEvaluationsWithoutAPromotion) {
  ScriptedRun r = RunScript(
      "examples/host/saxpy",
      {{"root", {1.0, 0, 0}}, {"a", {1.5, 1.2, 1.5}}, {"b", {1.4, 0, 0}}, {"c", {1.3, 0, 0}}, {"d", {1.6, 1.1, 1.1}}},
      {"a", "b", "c", "d"}, [](OptimizeOptions* o) { o->plateau = 2; });
  ASSERT_TRUE(r.res.ok()) << r.res.status().ToString();
  EXPECT_EQ(r.res->stop_reason, StopReason::kPlateau);
  EXPECT_EQ(r.res->evaluations, 4) << "root, a (promoted), then b and c without a promotion";
  EXPECT_EQ(r.res->best_params.at("V"), "a");
}

TEST(StopRules, TheTargetStopsOnceTheBestReachesThatShareOfTheRoofline) {
  // 64M moves 805 MB: at 4 TB/s its floor is 0.2013 ms. root takes 0.8 ms (25%), a 0.21 ms (96%).
  std::map<std::string, Script> script = {
      {"root", {1.0, 0, 0, 0, 0.8}}, {"a", {3.8, 3.5, 3.8, 0, 0.21}}, {"b", {3.9, 1.01, 1.02, 0, 0.205}}};
  ScriptedRun r =
      RunScript("examples/cuda/vector_add", script, {"a", "b"}, [](OptimizeOptions* o) { o->target_fraction = 0.9; });
  ASSERT_TRUE(r.res.ok()) << r.res.status().ToString();
  EXPECT_EQ(r.res->stop_reason, StopReason::kTarget);
  EXPECT_EQ(r.res->evaluations, 2);
  ScriptedRun off = RunScript("examples/cuda/vector_add", script, {"a", "b"}, [](OptimizeOptions*) {});
  ASSERT_TRUE(off.res.ok()) << off.res.status().ToString();
  EXPECT_EQ(off.res->stop_reason, StopReason::kExhausted) << "without --target the run goes on";
  EXPECT_EQ(off.res->evaluations, 3);
}

// b is within a's CI (a's lower end is 1.98) and uses half of a's joules; c uses fewer but lies
// just below that CI (within 2% of a, so a fixed band would take it); d is the fastest by its
// point but its paired check fails.
const std::map<std::string, Script> kEnergyScript = {{"root", {1.0, 0, 0, 10}},
                                                     {"a", {2.0, 1.5, 2.0, 8}},
                                                     {"b", {1.985, 0.9, 0.995, 4}},
                                                     {"c", {1.97, 0, 0, 3}},
                                                     {"d", {2.02, 0.99, 1.01, 9}}};

TEST(Objectives, TimeReportsTheFastestPromoted) {
  ScriptedRun r = RunScript("examples/cuda/vector_add", kEnergyScript, {"a", "b", "c", "d"},
                            [](OptimizeOptions* o) { o->objective = Objective::kTime; });
  ASSERT_TRUE(r.res.ok()) << r.res.status().ToString();
  EXPECT_EQ(r.res->best_params.at("V"), "a");
  EXPECT_EQ(r.Find("energy_choice"), nullptr);
}

TEST(Objectives, EnergyReportsTheFewestJoulesWithinTheFastestsTimeCi) {
  ScriptedRun r = RunScript("examples/cuda/vector_add", kEnergyScript, {"a", "b", "c", "d"},
                            [](OptimizeOptions* o) { o->objective = Objective::kEnergy; });
  ASSERT_TRUE(r.res.ok()) << r.res.status().ToString();
  EXPECT_EQ(r.Decisions(), (std::vector<std::string>{"promote 0", "promote 1", "reject 4"}))
      << "promotion goes by time: b and c are slower than a, d's paired CI touches 1";
  EXPECT_EQ(r.res->best_params.at("V"), "b") << "c has fewer joules but lies outside a's CI";
  const nlohmann::json* choice = r.Find("energy_choice");
  ASSERT_NE(choice, nullptr);
  EXPECT_EQ(choice->value("fastest", -1), 1);
  EXPECT_EQ(choice->value("chosen", -1), 2);
  EXPECT_DOUBLE_EQ(choice->value("chosen_joules", 0.0), 4);
  const nlohmann::json* fin = r.Find("final");
  ASSERT_NE(fin, nullptr);
  EXPECT_EQ(fin->value("node", -1), 2) << "the energy choice is the one re-evaluated and reported";
}

TEST(Objectives, MixPromotesOnTheSpeedupWeighedWithTheJoulesOfThePairedCheck) {
  // e is level with a in time (paired CI from 1.0) and uses a quarter of a's joules.
  std::map<std::string, Script> script = {
      {"root", {1.0, 0, 0, 10}}, {"a", {2.0, 1.5, 2.0, 8}}, {"e", {2.0, 1.0, 1.0, 2}}};
  ScriptedRun time = RunScript("examples/cuda/vector_add", script, {"a", "e"},
                               [](OptimizeOptions* o) { o->objective = Objective::kTime; });
  ASSERT_TRUE(time.res.ok()) << time.res.status().ToString();
  EXPECT_EQ(time.Decisions(), (std::vector<std::string>{"promote 0", "promote 1"}))
      << "by time e is no faster than a: no paired check";
  ScriptedRun mix = RunScript("examples/cuda/vector_add", script, {"a", "e"}, [](OptimizeOptions* o) {
    o->objective = Objective::kMix;
    o->energy_weight = 0.5;
  });
  ASSERT_TRUE(mix.res.ok()) << mix.res.status().ToString();
  EXPECT_EQ(mix.Decisions(), (std::vector<std::string>{"promote 0", "promote 1", "promote 2"}));
  EXPECT_EQ(mix.res->best_params.at("V"), "e");
  const nlohmann::json* promoted = nullptr;
  for (const auto& e : mix.events)
    if (e.value("event", "") == "promote" && e.value("node", -1) == 2) promoted = &e;
  ASSERT_NE(promoted, nullptr);
  EXPECT_DOUBLE_EQ(promoted->value("joules_ratio", 0.0), 4.0);
  EXPECT_NEAR(promoted->value("score_lo", 0.0), 2.0, 1e-9) << "1.0 · 4^0.5";
}

TEST(Objectives, AreRefusedWhereNothingMeasuresThem) {
  auto host = LoadTask(testing::SourceDir() / "examples" / "host" / "saxpy");
  auto cuda = LoadTask(testing::SourceDir() / "examples" / "cuda" / "vector_add");
  ASSERT_TRUE(host.ok() && cuda.ok());
  OptimizeOptions o;
  EXPECT_TRUE(CheckOptions(*host, o).ok());
  o.objective = Objective::kEnergy;
  Status s = CheckOptions(*host, o);
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_NE(s.message().find("runs on the host"), std::string::npos) << s.message();
  EXPECT_TRUE(CheckOptions(*cuda, o).ok());
  o.space_file = "space.json";
  EXPECT_NE(CheckOptions(*cuda, o).message().find("cannot be replayed"), std::string::npos);
  o.space_file.clear();
  o.objective = Objective::kMix;
  o.energy_weight = 0;
  EXPECT_NE(CheckOptions(*cuda, o).message().find("--energy-weight"), std::string::npos);
  EXPECT_FALSE(ParseObjective("joules").has_value());
  o.objective = Objective::kTime;
  o.target_fraction = 0.85;
  EXPECT_TRUE(CheckOptions(*cuda, o).ok());
  EXPECT_NE(CheckOptions(*host, o).message().find("--target needs the roofline ceiling"), std::string::npos);
  o.target_fraction = 85;
  EXPECT_NE(CheckOptions(*cuda, o).message().find("fraction"), std::string::npos);
}

TEST(Objectives, JoulesRatioAndMixScore) {
  Evaluation e;
  EXPECT_EQ(JoulesRatio(e), 0) << "nothing measured";
  WorkloadTiming a, b, c;
  a.joules_per_call = 2, a.baseline_joules_per_call = 8;  // 4×
  b.joules_per_call = 4, b.baseline_joules_per_call = 4;  // 1×
  c.joules_per_call = 0, c.baseline_joules_per_call = 4;  // not measured: left out
  e.timings = {a, b, c};
  EXPECT_NEAR(JoulesRatio(e), 2.0, 1e-12) << "geomean of 4 and 1";
  EXPECT_NEAR(MixScore(1.5, 4.0, 0.5), 3.0, 1e-12);
  EXPECT_DOUBLE_EQ(MixScore(1.5, 0, 0.5), 1.5) << "no joules: the speedup alone";
}

// The stop rules in their order, each off at 0; the paired gate under each objective.
TEST(Policy, StopRulesInOrderAndThePairedGate) {
  OptimizeOptions o;
  o.budget = 10;
  RunProgress p;
  p.budget_left = 3;
  EXPECT_FALSE(StopRule(o, p).has_value()) << "no limit set but the budget";
  p.budget_left = 0;
  EXPECT_EQ(StopRule(o, p), StopReason::kBudget);
  p.budget_left = 3;
  o.time_limit_s = 60;
  p.elapsed_s = 61;
  o.plateau = 2;
  p.since_promotion = 2;
  EXPECT_EQ(StopRule(o, p), StopReason::kTime) << "time is decided before the plateau";
  p.elapsed_s = 10;
  EXPECT_EQ(StopRule(o, p), StopReason::kPlateau);
  p.since_promotion = 0;
  o.max_tokens = 100;
  p.spend.input_tokens = 60;
  p.spend.output_tokens = 40;
  EXPECT_EQ(StopRule(o, p), StopReason::kTokens);
  p.spend = {};
  p.duplicates_in_a_row = kMinDuplicatesToStop - 1;
  EXPECT_FALSE(StopRule(o, p).has_value());
  p.duplicates_in_a_row = kMinDuplicatesToStop;
  EXPECT_EQ(StopRule(o, p), StopReason::kDuplicates);
  p.duplicates_in_a_row = 0;
  o.target_fraction = 0.8;
  EXPECT_FALSE(StopRule(o, p).has_value()) << "no incumbent: no target reached";
  p.best_achieved_fraction = 0.85;
  EXPECT_EQ(StopRule(o, p), StopReason::kTarget);
  EXPECT_STREQ(StopReasonName(StopReason::kTarget), "target");

  Evaluation e;
  e.speedup_geomean = 1.1;
  e.speedup_geomean_ci = {0.98, 1.2};
  EXPECT_FALSE(PairedGate(o, e).accept) << "a CI reaching below 1 is no evidence";
  e.speedup_geomean_ci = {1.02, 1.2};
  EXPECT_TRUE(PairedGate(o, e).accept);
  // Under mix, the same time CI with twice the joules fails the gate at weight 1.
  o.objective = Objective::kMix;
  o.energy_weight = 1;
  WorkloadTiming t;
  t.joules_per_call = 2;
  t.baseline_joules_per_call = 1;
  e.timings = {t};
  GateDecision d = PairedGate(o, e);
  EXPECT_NEAR(d.joules_ratio, 0.5, 1e-12);
  EXPECT_NEAR(d.score_lo, 0.51, 1e-12);
  EXPECT_FALSE(d.accept);
}

TEST(Policy, EnergyBestIsTheFewestJoulesWithinTheFastestsCi) {
  EnergyCandidate fastest{2, true, 2.0, 1.9, 10};
  std::vector<EnergyCandidate> nodes = {{0, true, 1.0, 0.9, 1},  // too slow
                                        {1, true, 1.95, 1.9, 8},
                                        fastest,
                                        {3, false, 0, 0, 1},       // failed
                                        {4, true, 1.92, 1.8, 0}};  // no joules measured
  EXPECT_EQ(EnergyBest(fastest, nodes), 1);
  nodes[1].joules = 0;
  EXPECT_EQ(EnergyBest(fastest, nodes), 2) << "none cheaper measured: the fastest";
}

}  // namespace
}  // namespace kpilot
