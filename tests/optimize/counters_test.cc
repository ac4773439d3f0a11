// Counter profiles of new bests in the optimize loop, with test doubles: an executor that
// answers counter jobs with a scripted profile (or a scripted failure) and a generator that records
// what each expansion saw. The real collection (CUPTI / ncu through kpilot-runner) is checked on
// the GPU by cli_gpu_test and optimize_gpu_test.
#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <map>

#include "collect_events.h"
#include "core/fs.h"
#include "core/subprocess.h"
#include "optimize/optimizer.h"
#include "scripted_generator.h"
#include "task/loader.h"
#include "test_paths.h"

namespace kpilot {
namespace {

class CountersExecutor : public Executor {
 public:
  // Speedup over the baseline by the draft's "V" param ("root" without one); every paired check
  // promotes.
  explicit CountersExecutor(std::map<std::string, double> speedups) : speedups_(std::move(speedups)) {}
  std::future<EvalJobResult> Submit(EvalJob job) override {
    EvalJobResult r;
    std::string v = job.params.count("V") ? job.params.at("V") : "root";
    r.object_sha = "sha-" + v;
    if (job.admit && !job.admit(r.object_sha)) r.skipped = true;
    Evaluation& e = r.evaluation;
    e.verdict.kind = VerdictKind::kPassed;
    const bool paired = job.options.baseline_source.has_value();
    e.speedup_geomean = paired ? 1.2 : speedups_.at(v);
    e.speedup_geomean_ci = paired ? Interval{1.1, 1.3} : Interval{e.speedup_geomean * 0.99, e.speedup_geomean * 1.01};
    e.candidate = (paired ? "gate " : "own ") + v;  // which evaluation a counter job is handed
    if (job.counter_tools) {
      counter_jobs.push_back(v);
      tool_ids.clear();
      for (const auto& t : *job.counter_tools) tool_ids.push_back(t->id());
      workloads.push_back(job.options.workloads);
      handed.push_back(job.counters_of ? job.counters_of->candidate : "none");
      if (!failure.ok()) {
        r.counters_status = failure;
      } else {
        CounterProfile cp;
        cp.profiler = "cupti";
        KernelReport k;
        k.kernel = "Kernel" + v;
        k.roofline.result = Bottleneck::kMemory;
        Finding f;
        f.id = "uncoalesced-" + v;
        f.severity = 0.9;
        f.guidance = "make the loads of " + v + " coalesced";
        k.findings.push_back(f);
        k.context.metrics["dram__throughput.avg.pct_of_peak_sustained_elapsed"] = 42;
        cp.reports.push_back(k);
        cp.info = {{"passes_run", 3}};
        r.counters = cp;
        r.counters_s = 0.5;
      }
    }
    // A counter profile is not ready until someone waits for it (a deferred future), as a real
    // one still on the GPU would not be.
    if (job.counter_tools)
      return std::async(std::launch::deferred, [r = std::move(r)]() mutable { return std::move(r); });
    std::promise<EvalJobResult> p;
    p.set_value(std::move(r));
    return p.get_future();
  }
  double BusySeconds() const override { return 0; }
  double ElapsedSeconds() const override { return 1; }

  std::vector<std::string> counter_jobs;
  std::vector<std::vector<std::string>> workloads;
  std::vector<std::string> handed;    // per counter job: the evaluation it was handed (EvalJob::counters_of)
  std::vector<std::string> tool_ids;  // the last counter job's tools
  Status failure = Status::Ok();

 private:
  std::map<std::string, double> speedups_;
};

// Drafts V=values in order, one per expansion; records each expansion's parent and its findings.
class RecordingGenerator : public testing::ScriptedGenerator {
 public:
  explicit RecordingGenerator(std::vector<std::string> values, size_t fail_after = 1000)
      : ScriptedGenerator(std::move(values)), fail_after_(fail_after) {}
  std::string name() const override { return "recording"; }
  std::future<Result<std::vector<Draft>>> Propose(const ProposalContext& ctx) override {
    std::vector<std::string> ids;
    for (const auto& f : ctx.findings) ids.push_back(f.id);
    seen.push_back({ctx.parent_node, ids, ctx.bottleneck, ctx.parent_metrics});
    if (seen.size() <= fail_after_) return ScriptedGenerator::Propose(ctx);
    std::promise<Result<std::vector<Draft>>> p;
    p.set_value(Status::Internal("the generator broke"));
    return p.get_future();
  }
  struct Seen {
    int64_t parent;
    std::vector<std::string> findings;
    std::string bottleneck, metrics;
  };
  std::vector<Seen> seen;

 private:
  size_t fail_after_;
};

using Collect = testing::CollectEvents;

struct Fixture {
  TempDir dir;
  std::unique_ptr<Store> store;
  Task task;
  OptimizeOptions options;
};

Fixture Make(const std::string& example, const std::string& from) {
  auto dir = TempDir::Create("kpilot-counters-");
  EXPECT_TRUE(dir.ok());
  auto store = Store::Open(dir->path());
  EXPECT_TRUE(store.ok());
  auto task = LoadTask(testing::SourceDir() / "examples" / example);
  EXPECT_TRUE(task.ok());
  Fixture f{std::move(*dir), std::move(*store), std::move(*task), {}};
  f.options.task_dir = f.task.dir.string();
  f.options.from = (f.task.dir / "candidates" / from).string();
  f.options.budget = 4;
  f.options.search.policy = Policy::kGreedy;
  f.options.footprints = false;
  f.options.pipeline_depth = 1;  // one expansion at a time: the order below is exact
  return f;
}

TEST(Counters, EachNewBestIsProfiledAndItsDraftsSeeTheFindings) {
  Fixture f = Make("cuda/vector_add", "vector_grid_stride.cu");
  CountersExecutor exec({{"root", 1.0}, {"a", 1.5}, {"b", 2.0}});
  RecordingGenerator generator({"a", "b"});
  Collect progress;
  Optimizer optimizer(f.task, generator, exec, *f.store, progress);
  auto res = optimizer.Run(f.options);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  // The root (first passing), then a and b, each promoted once.
  EXPECT_EQ(exec.counter_jobs, (std::vector<std::string>{"root", "a", "b"}));
  EXPECT_EQ(res->counter_profiles, 3);
  EXPECT_DOUBLE_EQ(res->counters_s, 1.5);
  // One workload per profile: the task's last.
  for (const auto& w : exec.workloads) EXPECT_EQ(w, (std::vector<std::string>{f.task.workloads.back().name}));
  // Each is handed the evaluation the loop has: the root's own, then each promotion gate's.
  EXPECT_EQ(exec.handed, (std::vector<std::string>{"own root", "gate a", "gate b"}));
  // Each expansion was proposed from the newest best, after its counters arrived.
  ASSERT_GE(generator.seen.size(), 2u);
  EXPECT_EQ(generator.seen[0].parent, 0);
  EXPECT_EQ(generator.seen[0].findings, (std::vector<std::string>{"uncoalesced-root"}));
  EXPECT_EQ(generator.seen[0].bottleneck, "memory-bound");
  EXPECT_NE(generator.seen[0].metrics.find("dram__throughput"), std::string::npos) << generator.seen[0].metrics;
  EXPECT_EQ(generator.seen[1].parent, 1);
  EXPECT_EQ(generator.seen[1].findings, (std::vector<std::string>{"uncoalesced-a"}));
  auto recorded = progress.Of("counters");
  ASSERT_EQ(recorded.size(), 3u);
  EXPECT_EQ(recorded[0].value("node", -1), 0);
  EXPECT_EQ(recorded[0].value("profiler", ""), "cupti");
  EXPECT_EQ(recorded[0]["findings"][0].value("id", ""), "uncoalesced-root");
  EXPECT_EQ(recorded[0]["kernels"][0].value("kernel", ""), "Kernelroot");
  EXPECT_EQ(recorded[0]["profiler_info"].value("passes_run", 0), 3) << "where the profile's time went";
  // The exported report's profile summary is the best's counter profile.
  ASSERT_TRUE(ExportRun(*f.store, res->run_id, f.dir.path() / "out").ok());
  auto report = ReadFile(f.dir.path() / "out" / "report.json");
  ASSERT_TRUE(report.ok());
  auto j = nlohmann::json::parse(*report);
  EXPECT_EQ(j["profile"].value("source", ""), "counters (cupti)") << j["profile"].dump(1);
  EXPECT_EQ(j["profile"].value("class", ""), "memory-bound");
  ASSERT_EQ(j["profile"]["findings"].size(), 1u);
  EXPECT_EQ(j["profile"]["findings"][0].value("id", ""), "uncoalesced-b");
  // kpilot show gives each profile's gist in the history.
  ProcessSpec show;
  show.argv = {(testing::BinaryDir() / "bin" / "kpilot").string(), "show", std::to_string(res->run_id), "--store",
               f.dir.path().string()};
  auto shown = SystemProcessRunner().Run(show);
  ASSERT_TRUE(shown.ok());
  EXPECT_EQ(shown->exit_code, 0) << shown->err;
  EXPECT_NE(shown->out.find("counters   node 0: cupti 0.50 s, memory-bound; uncoalesced-root"), std::string::npos)
      << shown->out;
}

// Profiles go to the bests the search acts on: with two expansions in flight, a and b are both
// drafted from the root, a is promoted and then superseded by b before the tree could select it,
// and the budget ends there. The root was profiled when it was selected, b (the final best) at the
// end for the report; a never.
// Rule files of --tools folders run in the search's profiles beside the built-in tools (so skill
// cards may name their ids as triggers); a rule file with an error stops the run before anything
// is recorded, naming the file.
TEST(Counters, RuleToolsOfToolsFoldersRunInTheProfiles) {
  Fixture f = Make("cuda/vector_add", "vector_grid_stride.cu");
  const std::filesystem::path tools = f.dir.path() / "tools";
  ASSERT_TRUE(WriteFileAtomic(tools / "mine.toml", R"([[rule]]
id = "my-dram-rule"
description = "DRAM busier than half of its peak"
classes = ["memory-bound"]
metrics = ["dram__throughput.avg.pct_of_peak_sustained_elapsed"]
condition = "dram__throughput_avg_pct_of_peak_sustained_elapsed > 50"
severity = 0.5
guidance = "DRAM at {dram__throughput.avg.pct_of_peak_sustained_elapsed}%"
)")
                  .ok());
  f.options.tool_dirs = {tools.string()};
  f.options.budget = 1;
  CountersExecutor exec({{"root", 1.0}});
  RecordingGenerator generator({});
  Collect progress;
  Optimizer optimizer(f.task, generator, exec, *f.store, progress);
  auto res = optimizer.Run(f.options);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_NE(std::find(exec.tool_ids.begin(), exec.tool_ids.end(), "my-dram-rule"), exec.tool_ids.end());
  EXPECT_GT(exec.tool_ids.size(), 1u) << "the built-in tools run too";

  ASSERT_TRUE(WriteFileAtomic(tools / "broken.toml", "[[rule]]\nid = \"half\"\n").ok());
  auto runs = f.store->ListRuns();
  ASSERT_TRUE(runs.ok());
  const size_t before = runs->size();
  auto bad = optimizer.Run(f.options);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(bad.status().message().find("broken.toml"), std::string::npos) << bad.status().message();
  runs = f.store->ListRuns();
  ASSERT_TRUE(runs.ok());
  EXPECT_EQ(runs->size(), before) << "nothing recorded";
}

TEST(Counters, ABestSupersededBeforeItIsExpandedIsNotProfiled) {
  Fixture f = Make("cuda/vector_add", "vector_grid_stride.cu");
  f.options.budget = 3;
  f.options.pipeline_depth = 2;
  CountersExecutor exec({{"root", 1.0}, {"a", 1.5}, {"b", 2.0}});
  RecordingGenerator generator({"a", "b"});
  Collect progress;
  Optimizer optimizer(f.task, generator, exec, *f.store, progress);
  auto res = optimizer.Run(f.options);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  ASSERT_EQ(generator.seen.size(), 2u);
  EXPECT_EQ(generator.seen[1].parent, 0) << "b was drafted before a's result came back";
  EXPECT_EQ(progress.Of("promote").size(), 3u) << "root, a, then b";
  EXPECT_EQ(exec.counter_jobs, (std::vector<std::string>{"root", "b"}));
  EXPECT_EQ(exec.handed, (std::vector<std::string>{"own root", "gate b"}));
  EXPECT_EQ(res->counter_profiles, 2);
  EXPECT_EQ(res->best_params.at("V"), "b");
  ASSERT_TRUE(ExportRun(*f.store, res->run_id, f.dir.path() / "out").ok());
  auto report = ReadFile(f.dir.path() / "out" / "report.json");
  ASSERT_TRUE(report.ok());
  auto j = nlohmann::json::parse(*report);
  ASSERT_EQ(j["profile"]["findings"].size(), 1u) << j["profile"].dump(1);
  EXPECT_EQ(j["profile"]["findings"][0].value("id", ""), "uncoalesced-b") << "the final best's own profile";
}

// The counter jobs a two-node run with `f`'s options submits.
std::vector<std::string> CounterJobsOf(Fixture& f) {
  CountersExecutor exec({{"root", 1.0}, {"a", 1.5}});
  RecordingGenerator generator({"a"});
  Collect progress;
  Optimizer optimizer(f.task, generator, exec, *f.store, progress);
  EXPECT_TRUE(optimizer.Run(f.options).ok());
  EXPECT_EQ(progress.Of("counters").size(), exec.counter_jobs.size());
  return exec.counter_jobs;
}

TEST(Counters, OffHostTasksAndReplaysAskForNone) {
  Fixture on = Make("cuda/vector_add", "vector_grid_stride.cu");
  EXPECT_EQ(CounterJobsOf(on), (std::vector<std::string>{"root", "a"}));
  Fixture off = Make("cuda/vector_add", "vector_grid_stride.cu");
  off.options.counters = false;
  EXPECT_TRUE(CounterJobsOf(off).empty());
  Fixture host = Make("host/saxpy", "omp_simd.cpp");
  EXPECT_TRUE(CounterJobsOf(host).empty());
  Fixture blind = Make("cuda/vector_add", "vector_grid_stride.cu");
  blind.options.feedback = FeedbackMode::kNone;  // the generator would see none of it
  EXPECT_TRUE(CounterJobsOf(blind).empty());
  Fixture replay = Make("cuda/vector_add", "vector_grid_stride.cu");
  replay.options.space_file = "space.json";  // the executor double serves it; a space stores no counters
  EXPECT_TRUE(CounterJobsOf(replay).empty());
}

TEST(Counters, AProfilerThatCannotRunHereIsAskedOnceAndTheRunGoesOn) {
  Fixture f = Make("cuda/vector_add", "vector_grid_stride.cu");
  CountersExecutor exec({{"root", 1.0}, {"a", 1.5}, {"b", 2.0}});
  exec.failure = Status::Unavailable("CUPTI counters unavailable and no ncu on PATH");
  RecordingGenerator generator({"a", "b"});
  Collect progress;
  Optimizer optimizer(f.task, generator, exec, *f.store, progress);
  auto res = optimizer.Run(f.options);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_EQ(exec.counter_jobs, (std::vector<std::string>{"root"}));
  EXPECT_EQ(res->counter_profiles, 0);
  EXPECT_EQ(res->best_params.at("V"), "b");
  auto recorded = progress.Of("counters");
  ASSERT_EQ(recorded.size(), 1u);
  EXPECT_NE(recorded[0].value("error", "").find("no ncu"), std::string::npos);
  EXPECT_TRUE(recorded[0].value("counters_off", false));
  EXPECT_TRUE(generator.seen[0].findings.empty());  // static findings only (none for a scripted eval)
}

TEST(Counters, AResumedRunKeepsRecordedProfilesAndProfilesNothingTwice) {
  Fixture f = Make("cuda/vector_add", "vector_grid_stride.cu");
  f.options.budget = 5;
  int64_t run = 0;
  {
    CountersExecutor exec({{"root", 1.0}, {"a", 1.5}, {"b", 2.0}});
    RecordingGenerator generator({"a", "b"}, /*fail_after=*/1);  // the second expansion fails the run
    Collect progress;
    Optimizer optimizer(f.task, generator, exec, *f.store, progress);
    auto res = optimizer.Run(f.options);
    ASSERT_FALSE(res.ok());
    EXPECT_EQ(exec.counter_jobs, (std::vector<std::string>{"root", "a"}));
    auto runs = f.store->ListRuns();
    ASSERT_TRUE(runs.ok());
    ASSERT_EQ(runs->size(), 1u);
    run = runs->front().id;
  }
  CountersExecutor exec({{"root", 1.0}, {"a", 1.5}, {"b", 2.0}});
  RecordingGenerator generator({"b"});
  Collect progress;
  Optimizer optimizer(f.task, generator, exec, *f.store, progress);
  auto res = optimizer.Resume(run);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  // Node 1 (a) is the incumbent; its recorded profile steers the first expansion after the resume.
  ASSERT_FALSE(generator.seen.empty());
  EXPECT_EQ(generator.seen[0].parent, 1);
  EXPECT_EQ(generator.seen[0].findings, (std::vector<std::string>{"uncoalesced-a"}));
  EXPECT_EQ(exec.counter_jobs, (std::vector<std::string>{"b"}));
}

}  // namespace
}  // namespace kpilot
