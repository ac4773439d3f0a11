// The closed loop end to end on the host backend: the params generator, the tree, the paired
// promotion gate, persistence, kill -9 and --resume, export.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "collect_events.h"
#include "core/fs.h"
#include "optimize/optimizer.h"
#include "support/sync.h"
#include "task/loader.h"
#include "test_paths.h"

namespace kpilot {
namespace {

namespace fs = std::filesystem;

using Collect = testing::CollectEvents;

fs::path Example(const std::string& rel) { return testing::SourceDir() / "examples" / rel; }

OptimizeOptions Quick(const std::string& task, const std::string& from, int budget) {
  OptimizeOptions o;
  o.task_dir = Example(task).string();
  o.from = Example(from).string();
  o.budget = budget;
  o.timing_max_seconds = 0.3;
  o.eval_timeout_s = 60;
  return o;
}

TEST(Optimize, ParamsSearchOnAHostTaskRecordsEveryNodeAndExports) {
  auto dir = TempDir::Create("kpilot-optimize-test-");
  ASSERT_TRUE(dir.ok());
  auto store = Store::Open(dir->path() / "store");
  ASSERT_TRUE(store.ok());
  auto task = LoadTask(Example("host/saxpy"));
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  auto generator = MakeGenerator("params", *task);
  ASSERT_TRUE(generator.ok()) << generator.status().ToString();
  auto toolchain = MakeSystemToolchain((*store)->dir() / "cache", testing::SourceDir() / "include");
  LocalExecutor executor(*toolchain, SystemProcessRunner(), testing::RunnerPath(), 2);
  Collect progress;
  Optimizer optimizer(*task, **generator, executor, **store, progress);
  OptimizeOptions o = Quick("host/saxpy", "host/saxpy/candidates/omp_simd.cpp", 5);
  o.workloads = {task->workloads.front().name};
  auto res = optimizer.Run(o);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_EQ(res->evaluations, 5);
  EXPECT_EQ(res->stop_reason, StopReason::kBudget);
  EXPECT_EQ(res->final.verdict.kind, VerdictKind::kPassed) << res->final.verdict.summary;
  // The runners' checks and timing proper (docs/results.md, "GPU busy share"): a part of the
  // busy share.
  EXPECT_GT(res->checks_timing_share, 0.0);
  EXPECT_LE(res->checks_timing_share, res->busy_share);
  EXPECT_LE(res->busy_share, 1.0);
  auto nodes = (*store)->ListRunNodes(res->run_id);
  ASSERT_TRUE(nodes.ok());
  EXPECT_EQ(nodes->size(), 5u);
  std::set<std::string> params;
  for (const auto& n : *nodes) params.insert(n.params_json);
  EXPECT_EQ(params.size(), nodes->size()) << "no configuration is evaluated twice";
  auto run = (*store)->GetRun(res->run_id);
  ASSERT_TRUE(run.ok() && run->has_value());
  EXPECT_EQ((*run)->status, "finished");
  int promotions = 0, timed = 0;
  for (const auto& e : progress.events) {
    promotions += e.value("event", "") == "promote";
    // Every evaluation says when it was submitted, compiled and run, on the executor's clock.
    if (e.value("event", "") != "evaluated" && e.value("event", "") != "final") continue;
    ASSERT_TRUE(e.contains("times")) << e.dump();
    const auto& t = e["times"];
    EXPECT_LE(t.value("submitted_s", -1.0), t.value("compile_start_s", 0.0)) << t.dump();
    EXPECT_LE(t.value("compile_end_s", 1e9), t.value("eval_start_s", 0.0)) << t.dump();
    EXPECT_LT(t.value("eval_start_s", 1e9), t.value("eval_end_s", 0.0)) << t.dump();
    EXPECT_LE(t.value("eval_end_s", 1e9), t.value("now_s", 0.0)) << t.dump();
    ++timed;
  }
  EXPECT_GE(promotions, 1);
  EXPECT_EQ(timed, 6) << "five evaluations and the final one";
  fs::path out = dir->path() / "best";
  ASSERT_TRUE(ExportRun(**store, res->run_id, out).ok());
  EXPECT_TRUE(fs::exists(out / "omp_simd.cpp"));
  EXPECT_TRUE(fs::exists(out / "params.json"));
  // The exported source carries the best params as #defines: evaluated alone, it is that node.
  auto exported = ReadFile(out / "omp_simd.cpp");
  ASSERT_TRUE(exported.ok());
  for (const auto& [name, value] : res->best_params)
    EXPECT_NE(exported->find("#define " + name + " " + value + "\n"), std::string::npos) << name << "\n" << *exported;
  auto report = ReadFile(out / "report.json");
  ASSERT_TRUE(report.ok());
  auto j = nlohmann::json::parse(*report);
  EXPECT_EQ(j["task"], "saxpy");
  ASSERT_TRUE(j["verified_on"].is_object());
  const auto& v = j["verified_on"];
  EXPECT_EQ(v["backend"], "host");
  EXPECT_EQ(v["dtypes"]["inputs"]["x"], "f32") << v.dump();
  EXPECT_EQ(v["dtypes"]["outputs"]["y"], "f32") << v.dump();
  EXPECT_EQ(v["toolkit"].get<std::string>().rfind("g++ ", 0), 0u)
      << "the compiler that built the object: " << v["toolkit"];
  EXPECT_FALSE(v["workloads"].empty());
  EXPECT_FALSE(v["workloads"][0].contains("candidate_samples_ms")) << "samples are left to the store";
}

TEST(Optimize, FolderGeneratorEvaluatesAFolderInOrder) {
  auto dir = TempDir::Create("kpilot-optimize-replay-");
  ASSERT_TRUE(dir.ok());
  fs::create_directories(dir->path() / "drafts");
  fs::copy_file(Example("host/saxpy/reference.cpp"), dir->path() / "drafts" / "a_reference.cpp");
  fs::copy_file(Example("host/saxpy/broken/wrong_result.cpp"), dir->path() / "drafts" / "b_wrong.cpp");
  auto store = Store::Open(dir->path() / "store");
  ASSERT_TRUE(store.ok());
  auto task = LoadTask(Example("host/saxpy"));
  ASSERT_TRUE(task.ok());
  auto generator = MakeGenerator("folder:" + (dir->path() / "drafts").string(), *task);
  ASSERT_TRUE(generator.ok()) << generator.status().ToString();
  auto toolchain = MakeSystemToolchain((*store)->dir() / "cache", testing::SourceDir() / "include");
  LocalExecutor executor(*toolchain, SystemProcessRunner(), testing::RunnerPath(), 2);
  Collect progress;
  Optimizer optimizer(*task, **generator, executor, **store, progress);
  OptimizeOptions o = Quick("host/saxpy", "host/saxpy/candidates/omp_simd.cpp", 10);
  o.workloads = {task->workloads.front().name};
  o.drafts_per_expansion = 1;
  auto res = optimizer.Run(o);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_EQ(res->stop_reason, StopReason::kExhausted);
  auto nodes = (*store)->ListRunNodes(res->run_id);
  ASSERT_TRUE(nodes.ok());
  ASSERT_EQ(nodes->size(), 3u);
  EXPECT_EQ((*nodes)[1].source_name, "a_reference.cpp");
  EXPECT_EQ((*nodes)[1].verdict, "passed");
  EXPECT_EQ((*nodes)[2].source_name, "b_wrong.cpp");
  EXPECT_EQ((*nodes)[2].verdict, "incorrect");
}

// A real `kpilot optimize` process, killed with SIGKILL mid-run, then resumed.
TEST(Optimize, KillNineThenResumeLosesAndRepeatsNothing) {
  auto dir = TempDir::Create("kpilot-optimize-kill-");
  ASSERT_TRUE(dir.ok());
  std::string store_dir = (dir->path() / "store").string();
  std::string kpilot = (testing::BinaryDir() / "bin" / "kpilot").string();
  const int budget = 6;
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setpgid(0, 0);
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    execl(kpilot.c_str(), kpilot.c_str(), "optimize", Example("host/saxpy").c_str(), "--budget",
          std::to_string(budget).c_str(), "--workload", "12M-odd", "--store", store_dir.c_str(), "--json",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait until a few nodes are recorded (another process writes them: poll the store), then kill
  // it without warning.
  int recorded = 0;
  testing::WaitUntil(
      [&] {
        auto s = Store::Open(store_dir);
        if (!s.ok()) return false;
        auto n = (*s)->CountRows("run_nodes");
        recorded = n.ok() ? static_cast<int>(*n) : 0;
        return recorded >= 3;
      },
      std::chrono::seconds(120));
  ASSERT_GE(recorded, 3) << "the run did not get going";
  kill(-pid, SIGKILL);
  int st;
  waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFSIGNALED(st));

  std::vector<RunNodeRecord> before;
  {
    auto s = Store::Open(store_dir);
    ASSERT_TRUE(s.ok());
    before = *(*s)->ListRunNodes(1);
    ASSERT_LT(static_cast<int>(before.size()), budget) << "killed too late to test anything";
  }
  {
    auto s = Store::Open(store_dir);
    ASSERT_TRUE(s.ok());
    auto run = (*s)->GetRun(1);
    ASSERT_TRUE(run.ok() && run->has_value());
    EXPECT_EQ((*run)->status, "running") << "as stored: nothing ran after the kill";
    EXPECT_EQ(ShownRunStatus(**s, **run), "interrupted") << "no process holds the run's lock";
  }
  // A resumed run keeps the options it was started with: changing one is refused, by name.
  ProcessSpec conflicting;
  conflicting.argv = {kpilot, "optimize", "--resume", "1", "--store", store_dir, "--budget", "9", "--policy", "greedy"};
  conflicting.timeout_s = 60;
  auto refused = SystemProcessRunner().Run(conflicting);
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->exit_code, 2);
  EXPECT_NE(refused->err.find("--policy, --budget cannot be given with it"), std::string::npos) << refused->err;

  ProcessSpec spec;
  spec.argv = {kpilot, "optimize", "--resume", "1", "--store", store_dir, "--json"};
  spec.timeout_s = 600;
  auto r = SystemProcessRunner().Run(spec);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 0) << r->err.substr(r->err.size() > 3000 ? r->err.size() - 3000 : 0);

  auto s = Store::Open(store_dir);
  ASSERT_TRUE(s.ok());
  auto after = *(*s)->ListRunNodes(1);
  EXPECT_EQ(static_cast<int>(after.size()), budget) << "the budget counts every evaluation once";
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(after[i].params_json, before[i].params_json) << "node " << i << " kept as recorded";
    EXPECT_EQ(after[i].result_blob, before[i].result_blob);
  }
  std::map<int64_t, int> per_proposal;
  std::set<std::string> configs;
  for (const auto& n : after) {
    ++per_proposal[n.proposal];
    configs.insert(n.params_json);
  }
  for (const auto& [proposal, count] : per_proposal) EXPECT_EQ(count, 1) << "proposal " << proposal;
  // Each evaluation ran once over both processes: the journal has one result per proposal (one
  // that had ended before the kill was served from it, not run again).
  std::map<int64_t, int> journaled;
  const std::vector<RunEventRecord> events = *(*s)->ListRunEvents(1);
  for (const auto& e : events)
    if (e.kind == "result") {
      auto p = nlohmann::json::parse(e.payload_json);
      if (p.contains("proposal")) ++journaled[p["proposal"].get<int64_t>()];
    }
  for (const auto& [proposal, count] : journaled) EXPECT_EQ(count, 1) << "proposal " << proposal << " evaluated twice";
  for (const auto& [proposal, count] : per_proposal) EXPECT_TRUE(journaled.count(proposal)) << proposal;
  EXPECT_EQ(configs.size(), after.size()) << "no configuration evaluated twice";
  auto run = (*s)->GetRun(1);
  ASSERT_TRUE(run.ok() && run->has_value());
  EXPECT_EQ((*run)->status, "finished");
}

}  // namespace
}  // namespace kpilot
