// `kpilot eval --executor slurm` on a real Slurm cluster started on this machine
// (tests/slurm/local_cluster.sh: munge, slurmctld and two slurmd nodes on localhost): the same
// verdicts as the local executor, the node recorded, a rejected allocation an error before any
// evaluation, an allocation that ends itself after its kpilot is killed with -9, and a node that
// goes down mid-evaluation giving no verdict. Skipped, with the reason, where the daemons cannot
// start (not root, packages missing).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <signal.h>

#include <sstream>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "../cli/run_kpilot.h"
#include "core/fs.h"
#include "scoped_env.h"
#include "store/store.h"

namespace kpilot {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class SlurmCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = TempDir::Create("kpilot-slurm-cluster-");
    ASSERT_TRUE(d.ok());
    dir_.emplace(std::move(d).value());
    ProcessSpec spec;
    spec.argv = {"bash", (testing::SourceDir() / "tests" / "slurm" / "local_cluster.sh").string(), "start",
                 (root() / "cluster").string(), "2"};
    spec.timeout_s = 60;
    auto r = SystemProcessRunner().Run(spec);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    if (r->exit_code == 77) GTEST_SKIP() << r->err;
    ASSERT_EQ(r->exit_code, 0) << r->out << r->err;
    started_ = true;
    conf_.emplace("SLURM_CONF", (root() / "cluster" / "slurm.conf").string());
    Config("[slurm]\nheartbeat_s = 1\nstart_timeout_s = 60\n");
  }
  void TearDown() override {
    if (!started_) return;
    ProcessSpec spec;
    spec.argv = {"bash", (testing::SourceDir() / "tests" / "slurm" / "local_cluster.sh").string(), "stop",
                 (root() / "cluster").string()};
    spec.timeout_s = 30;
    (void)SystemProcessRunner().Run(spec);
  }
  fs::path root() const { return dir_->path(); }
  fs::path config() const { return root() / "slurm.toml"; }
  void Config(const std::string& text) { ASSERT_TRUE(WriteFileAtomic(config(), text).ok()); }
  // squeue's lines for this cluster (empty once every job has ended).
  std::string Queue() {
    ProcessSpec spec;
    spec.argv = {"squeue", "--noheader", "--format=%i %T %N"};
    spec.timeout_s = 20;
    auto r = SystemProcessRunner().Run(spec);
    return r.ok() ? r->out : "squeue failed: " + r.status().message();
  }
  // Waits (up to `limit_s`) until squeue's output satisfies `done`; the output last seen.
  std::string WaitForQueue(const std::function<bool(const std::string&)>& done, double limit_s) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
    std::string q = Queue();
    while (!done(q) && std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // a poll, not an ordering
      q = Queue();
    }
    return q;
  }
  std::vector<std::string> Eval(const std::string& candidate, bool slurm) {
    const fs::path task = testing::SourceDir() / "examples" / "host" / "saxpy";
    std::vector<std::string> args = {"eval", task.string(), candidate, "--workload", "12M-odd", "--no-store", "--json"};
    if (slurm) args.insert(args.end(), {"--executor", "slurm", "--slurm-config", config().string()});
    return args;
  }
  // kpilot eval of the candidate through Slurm on both workloads (seconds long), to interrupt.
  ProcessSpec LongSlurmEval() {
    ProcessSpec spec;
    spec.argv = {(testing::BinaryDir() / "bin" / "kpilot").string()};
    for (const auto& a : Eval(Candidate(), true)) spec.argv.push_back(a);
    spec.argv.erase(std::find(spec.argv.begin(), spec.argv.end(), "--workload"),
                    std::find(spec.argv.begin(), spec.argv.end(), "--no-store"));
    spec.cwd = root();
    return spec;
  }
  // `scontrol update state=down` of the node of the first job in `queue` (Queue()'s lines).
  Result<ProcessResult> SetFirstNodeDown(const std::string& queue) {
    std::istringstream line(queue);
    std::string id, state, node;
    line >> id >> state >> node;
    ProcessSpec down;
    down.argv = {"scontrol", "update", "nodename=" + node, "state=down", "reason=kpilot-test"};
    down.timeout_s = 20;
    return SystemProcessRunner().Run(down);
  }
  // Runs `spec` (a kpilot command through Slurm), sets the node of its allocation down once it
  // runs, and expects no verdict: the allocation's end is named, down before kpilot's poll saw it
  // run or during the evaluation.
  void ExpectNoVerdictWhenItsNodeGoesDown(const ProcessSpec& spec) {
    std::optional<Result<ProcessResult>> result;
    std::thread eval([&] { result = SystemProcessRunner().Run(spec); });
    const std::string running =
        WaitForQueue([](const std::string& q) { return q.find("RUNNING") != std::string::npos; }, 60);
    auto d = SetFirstNodeDown(running);
    eval.join();
    ASSERT_NE(running.find("RUNNING"), std::string::npos) << running;
    ASSERT_TRUE(d.ok() && d->exit_code == 0) << (d.ok() ? d->err : d.status().message());
    ASSERT_TRUE(result && result->ok());
    const ProcessResult& r = **result;
    EXPECT_NE(r.exit_code, 0);
    EXPECT_TRUE(json::parse(r.out, nullptr, false).is_discarded() || r.out.empty()) << "no verdict: " << r.out;
    EXPECT_TRUE(r.err.find("ended during the evaluation") != std::string::npos ||
                r.err.find("ended before it ran") != std::string::npos)
        << r.err;
  }
  std::string Candidate() const {
    return (testing::SourceDir() / "examples" / "host" / "saxpy" / "candidates" / "omp_simd.cpp").string();
  }

  std::optional<TempDir> dir_;
  std::optional<testing::ScopedEnv> conf_;
  bool started_ = false;
};

TEST_F(SlurmCluster, VerdictsMatchTheLocalExecutorsAndNameTheNode) {
  // A right candidate and a wrong one (y = a*x + y_in, with the sign of a flipped).
  auto text = ReadFile(Candidate());
  ASSERT_TRUE(text.ok());
  std::string wrong = *text;
  const size_t at = wrong.find("y[i] = a * x[i]");
  ASSERT_NE(at, std::string::npos);
  wrong.replace(at, 15, "y[i] = -a * x[i]");
  const fs::path wrong_path = root() / "wrong.cpp";
  ASSERT_TRUE(WriteFileAtomic(wrong_path, wrong).ok());
  for (const std::string& c : {Candidate(), wrong_path.string()}) {
    auto local = testing::RunKpilot(root(), Eval(c, false), 300);
    auto cluster = testing::RunKpilot(root(), Eval(c, true), 300);
    json l = json::parse(local.out, nullptr, false), s = json::parse(cluster.out, nullptr, false);
    ASSERT_FALSE(s.is_discarded()) << cluster.out << cluster.err;
    ASSERT_FALSE(l.is_discarded()) << local.out << local.err;
    EXPECT_EQ(s["verdict"]["kind"], l["verdict"]["kind"]) << c << "\n" << cluster.err;
    EXPECT_EQ(cluster.exit_code, local.exit_code);
    EXPECT_GT(s["slurm"]["job"].get<int64_t>(), 0);
    EXPECT_EQ(s["slurm"]["nodes"].get<std::string>().rfind("n", 0), 0u) << s["slurm"];
  }
  EXPECT_EQ(WaitForQueue([](const std::string& q) { return q.empty(); }, 30), "")
      << "each allocation is cancelled when its evaluation ends";
}

TEST_F(SlurmCluster, ARejectedAllocationIsAnErrorBeforeAnyEvaluation) {
  Config("[slurm]\npartition = \"nonexistent\"\n");
  auto r = testing::RunKpilot(root(), Eval(Candidate(), true), 120);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("Invalid partition name"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "") << "no evaluation";
  Config("[slurm]\ngres = \"gpu:1\"\n");  // the test cluster has no GPUs
  auto g = testing::RunKpilot(root(), Eval(Candidate(), true), 120);
  EXPECT_EQ(g.exit_code, 2) << g.err;
  EXPECT_NE(g.err.find("gres"), std::string::npos) << g.err;
}

TEST_F(SlurmCluster, AnAllocationEndsItselfAfterItsKpilotIsKilled) {
  ProcessSpec spec = LongSlurmEval();
  auto p = LiveProcess::Start(spec);
  ASSERT_TRUE(p.ok());
  const std::string running =
      WaitForQueue([](const std::string& q) { return q.find("RUNNING") != std::string::npos; }, 60);
  ASSERT_NE(running.find("RUNNING"), std::string::npos) << running;
  ASSERT_EQ(kill((*p)->pid(), SIGKILL), 0);
  (void)(*p)->Stop();
  // Six missed beats of 1 s, then the keeper exits and the job step goes with the allocation.
  EXPECT_EQ(WaitForQueue([](const std::string& q) { return q.empty(); }, 40), "")
      << "the allocation outlived its kpilot";
}

TEST_F(SlurmCluster, CtrlCCancelsTheAllocationAtOnce) {
  Config("[slurm]\nheartbeat_s = 30\nstart_timeout_s = 60\n");  // the keeper alone would wait 180 s
  ProcessSpec spec = LongSlurmEval();
  auto p = LiveProcess::Start(spec);
  ASSERT_TRUE(p.ok());
  const std::string running =
      WaitForQueue([](const std::string& q) { return q.find("RUNNING") != std::string::npos; }, 60);
  ASSERT_NE(running.find("RUNNING"), std::string::npos) << running;
  ASSERT_EQ(kill((*p)->pid(), SIGINT), 0);
  // 60 s: far under the heartbeat's 180 s, with room for a two-core machine running the whole
  // test suite at once.
  EXPECT_EQ(WaitForQueue([](const std::string& q) { return q.empty(); }, 60), "")
      << "scancel on SIGINT, not the heartbeat's 180 s";
  const ProcessResult r = (*p)->Stop();
  EXPECT_EQ(r.term_signal, SIGINT) << "the signal still ends kpilot: " << r.Describe(0);
}

TEST_F(SlurmCluster, ANodeThatGoesDownMidEvaluationGivesNoVerdict) {
  ProcessSpec spec = LongSlurmEval();
  spec.timeout_s = 300;
  ExpectNoVerdictWhenItsNodeGoesDown(spec);
}

TEST_F(SlurmCluster, AnOptimizeRunSpreadsOverAllocationsAndOutlivesALostNode) {
  Config("[slurm]\nworkers = 2\nheartbeat_s = 1\nstart_timeout_s = 60\n");
  ProcessSpec spec;
  spec.argv = {(testing::BinaryDir() / "bin" / "kpilot").string(),
               "optimize",
               (testing::SourceDir() / "examples" / "host" / "sgemm").string(),
               "--budget",
               "10",
               "--workload",
               "256x384x320",
               "--store",
               (root() / "store").string(),
               "--executor",
               "slurm",
               "--slurm-config",
               config().string(),
               "--json"};
  spec.cwd = root();
  spec.timeout_s = 600;
  std::optional<Result<ProcessResult>> result;
  std::thread run([&] { result = SystemProcessRunner().Run(spec); });
  // Once both queues hold an allocation, the first one's node goes down: its evaluation (if one
  // was running) and its queue move to a new allocation.
  const std::string running = WaitForQueue(
      [](const std::string& q) {
        return std::count(q.begin(), q.end(), '\n') >= 2 && q.find("PENDING") == std::string::npos;
      },
      60);
  auto d = SetFirstNodeDown(running);
  ASSERT_TRUE(d.ok() && d->exit_code == 0) << (d.ok() ? d->err : d.status().message());
  run.join();
  ASSERT_TRUE(result && result->ok());
  const ProcessResult& r = **result;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["evaluations"], 10) << "every evaluation has a verdict: " << r.err;
  EXPECT_EQ(j["final"]["verdict"]["kind"], "passed");
  size_t allocations = 0;
  for (size_t at = r.err.find("runs in allocation"); at != std::string::npos;
       at = r.err.find("runs in allocation", at + 1))
    ++allocations;
  EXPECT_GE(allocations, 2u) << r.err;
  // Each evaluation records where it ran.
  auto store = Store::Open(root() / "store");
  ASSERT_TRUE(store.ok());
  auto events = (*store)->ListRunEvents(j["run"].get<int64_t>());
  ASSERT_TRUE(events.ok());
  int placed = 0;
  for (const auto& e : *events)
    if (e.kind == "evaluated")
      placed += json::parse(e.payload_json)["times"].value("where", "").rfind("slurm job ", 0) == 0;
  EXPECT_EQ(placed, 10);
  // The exported best says which node verified it.
  auto report = ReadFile(fs::path(j["exported_to"].get<std::string>()) / "report.json");
  ASSERT_TRUE(report.ok()) << j["exported_to"];
  EXPECT_EQ(json::parse(*report)["verified_on"].value("where", "").rfind("slurm job ", 0), 0u) << *report;
  EXPECT_EQ(WaitForQueue([](const std::string& q) { return q.empty(); }, 30), "") << "every allocation cancelled";
}

TEST_F(SlurmCluster, ASweepSpreadsItsBatchesOverAllocationsWithTheLocalVerdicts) {
  Config("[slurm]\nworkers = 2\nheartbeat_s = 1\nstart_timeout_s = 60\n");
  const fs::path task = testing::SourceDir() / "tests" / "fixtures" / "tasks" / "sweep_host";
  auto sweep = [&](const std::string& out, bool slurm) {
    std::vector<std::string> args = {"sweep",
                                     task.string(),
                                     (task / "candidates" / "scale.cpp").string(),
                                     "--out",
                                     (root() / out).string(),
                                     "--batch",
                                     "2",
                                     "--store",
                                     (root() / "store").string(),
                                     "--json"};
    if (slurm) args.insert(args.end(), {"--executor", "slurm", "--slurm-config", config().string()});
    return testing::RunKpilot(root(), args, 300);
  };
  auto local = sweep("local.json", false);
  auto cluster = sweep("slurm.json", true);
  ASSERT_EQ(cluster.exit_code, 0) << cluster.err;
  ASSERT_EQ(local.exit_code, 0) << local.err;
  json l = json::parse(local.out, nullptr, false), s = json::parse(cluster.out, nullptr, false);
  ASSERT_FALSE(s.is_discarded()) << cluster.out;
  // The space's twelve configurations (passed, incorrect, crashing) get the verdicts they get here.
  EXPECT_EQ(s["by_status"], l["by_status"]);
  EXPECT_TRUE(s["complete"]);
  std::set<std::string> best_local, best_cluster;
  for (const auto& b : l["best"]) best_local.insert(b["params"].dump());
  for (const auto& b : s["best"]) best_cluster.insert(b["params"].dump());
  EXPECT_EQ(best_cluster, best_local);
  EXPECT_NE(cluster.err.find("evaluation queue 1 runs in allocation"), std::string::npos) << cluster.err;
  EXPECT_EQ(
      WaitForQueue([](const std::string& q) { return q.find("RUNNING") == std::string::npos; }, 30).find("RUNNING"),
      std::string::npos);
}

TEST_F(SlurmCluster, AnOptimizeRunKilledMidRunResumesInNewAllocations) {
  const fs::path store_dir = root() / "store";
  auto optimize = [&](std::vector<std::string> what) {
    ProcessSpec spec;
    spec.argv = {(testing::BinaryDir() / "bin" / "kpilot").string(), "optimize"};
    spec.argv.insert(spec.argv.end(), what.begin(), what.end());
    for (const std::string& a :
         {std::string("--store"), store_dir.string(), std::string("--executor"), std::string("slurm"),
          std::string("--slurm-config"), config().string(), std::string("--json")})
      spec.argv.push_back(a);
    spec.cwd = root();
    spec.timeout_s = 600;
    return spec;
  };
  const std::string task = (testing::SourceDir() / "examples" / "host" / "sgemm").string();
  auto p = LiveProcess::Start(optimize({task, "--budget", "8", "--workload", "256x384x320"}));
  ASSERT_TRUE(p.ok());
  // Once two evaluations are recorded, kpilot is killed with -9 (nothing of it runs on).
  auto evaluated = [&]() {
    auto store = Store::Open(store_dir);
    if (!store.ok()) return 0;
    auto events = (*store)->ListRunEvents(1);
    if (!events.ok()) return 0;
    return static_cast<int>(
        std::count_if(events->begin(), events->end(), [](const RunEventRecord& e) { return e.kind == "evaluated"; }));
  };
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (evaluated() < 2 && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // a poll, not an ordering
  ASSERT_GE(evaluated(), 2);
  ASSERT_EQ(kill((*p)->pid(), SIGKILL), 0);
  (void)(*p)->Stop();
  EXPECT_EQ(WaitForQueue([](const std::string& q) { return q.empty(); }, 40), "")
      << "the killed run's allocation outlived it";
  // --resume asks for a new allocation and ends the run with every evaluation it had left.
  auto resumed = SystemProcessRunner().Run(optimize({"--resume", "1"}));
  ASSERT_TRUE(resumed.ok());
  ASSERT_EQ(resumed->exit_code, 0) << resumed->err;
  json j = json::parse(resumed->out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << resumed->out;
  EXPECT_EQ(j["evaluations"], 8) << resumed->err;
  EXPECT_EQ(j["final"]["verdict"]["kind"], "passed");
  EXPECT_NE(resumed->err.find("runs in allocation"), std::string::npos) << resumed->err;
  EXPECT_EQ(WaitForQueue([](const std::string& q) { return q.empty(); }, 30), "") << "every allocation cancelled";
}

TEST_F(SlurmCluster, ACudaEvalNeedsNoGpuWhereKpilotRunsOnlyTheArch) {
  const fs::path task = testing::SourceDir() / "examples" / "cuda" / "vector_add";
  std::vector<std::string> args = {"eval",           task.string(),    (task / "reference.cu").string(),
                                   "--no-store",     "--executor",     "slurm",
                                   "--slurm-config", config().string()};
  auto no_arch = testing::RunKpilot(root(), args, 120);
  EXPECT_EQ(no_arch.exit_code, 2);
  EXPECT_NE(no_arch.err.find("--arch"), std::string::npos) << no_arch.err;
  // With the nodes' arch it compiles here and evaluates there: these nodes have no GPU, and that is
  // the node's answer, not a refusal for this machine's lack of one.
  args.insert(args.end(), {"--arch", "sm_90a"});
  auto there = testing::RunKpilot(root(), args, 300);
  EXPECT_NE(there.err.find("runs on"), std::string::npos) << there.err;
  EXPECT_EQ(there.err.find("but this machine has"), std::string::npos) << there.err;
  EXPECT_NE(there.exit_code, 0);
}

// --compile-on slurm: every compiler run is a job step of one allocation (seen through an srun that
// logs its arguments), the evaluation in another, with the local verdict; a compile partition the
// cluster lacks is an error before any evaluation.
TEST_F(SlurmCluster, CompileOnSlurmRunsTheCompilersAsStepsOfACompileAllocation) {
  const fs::path log = root() / "srun.log";
  const fs::path srun = root() / "srun-logged";
  ASSERT_TRUE(WriteFileAtomic(srun, "#!/bin/sh\necho \"$@\" >> " + log.string() + "\nexec srun \"$@\"\n").ok());
  fs::permissions(srun, fs::perms::owner_all);
  Config("[slurm]\nheartbeat_s = 1\nstart_timeout_s = 60\ncompile_cpus = 1\nsrun = \"" + srun.string() + "\"\n");
  std::vector<std::string> args = Eval(Candidate(), true);
  args.insert(args.end(), {"--compile-on", "slurm"});
  auto r = testing::RunKpilot(root(), args, 300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["verdict"]["kind"], "passed");
  ASSERT_TRUE(j["slurm"].contains("compile")) << j["slurm"];
  const std::string compile_job = std::to_string(j["slurm"]["compile"]["job"].get<int64_t>());
  EXPECT_NE(compile_job, std::to_string(j["slurm"]["job"].get<int64_t>()))
      << "compiles and evaluations: two allocations";
  auto steps = ReadFile(log);
  ASSERT_TRUE(steps.ok());
  int compiles = 0;
  std::istringstream lines(*steps);
  for (std::string line; std::getline(lines, line);)
    compiles +=
        line.find("--jobid=" + compile_job + " ") != std::string::npos && line.find("g++ -O") != std::string::npos;
  EXPECT_EQ(compiles, 2) << "the candidate and the reference, each a step:\n" << *steps;

  Config("[slurm]\nheartbeat_s = 1\nstart_timeout_s = 60\ncompile_partition = \"nosuch\"\n");
  auto rejected = testing::RunKpilot(root(), args, 120);
  EXPECT_NE(rejected.exit_code, 0);
  EXPECT_NE(rejected.err.find("compile allocation"), std::string::npos) << rejected.err;
  EXPECT_EQ(rejected.err.find("evaluating"), std::string::npos) << rejected.err;
  EXPECT_EQ(WaitForQueue([](const std::string& q) { return q.empty(); }, 30), "");
}

// A task with a Python reference: its torch worker runs as a job step of the allocation (on the
// CPU torch device here), with the local executor's verdicts for a right ModelNew, a wrong one and
// a native candidate compiled here.
TEST_F(SlurmCluster, APyTorchProblemRunsItsWorkerOnTheNodeWithTheLocalVerdicts) {
  const fs::path python = testing::SourceDir() / ".venv-torch" / "bin" / "python";
  if (!fs::exists(python)) GTEST_SKIP() << python << " is missing: run scripts/setup-torch-venv.sh";
  testing::ScopedEnv cpu("KPILOT_TORCH_DEVICE", "cpu");
  const fs::path fixtures = testing::SourceDir() / "tests" / "python" / "fixtures";
  for (const char* c : {"relu_new_ok.py", "relu_new_wrong.py", "native_kernels.cpp"}) {
    std::vector<std::string> args = {"eval",
                                     (fixtures / "relu_problem.py").string(),
                                     (fixtures / c).string(),
                                     "--python",
                                     python.string(),
                                     "--no-store",
                                     "--json"};
    auto local = testing::RunKpilot(root(), args, 300);
    args.insert(args.end(), {"--executor", "slurm", "--slurm-config", config().string()});
    auto cluster = testing::RunKpilot(root(), args, 300);
    json l = json::parse(local.out, nullptr, false), s = json::parse(cluster.out, nullptr, false);
    ASSERT_FALSE(l.is_discarded()) << local.out << local.err;
    ASSERT_FALSE(s.is_discarded()) << cluster.out << cluster.err;
    EXPECT_EQ(s["verdict"]["kind"], l["verdict"]["kind"]) << c << "\n" << cluster.err;
    EXPECT_EQ(cluster.exit_code, local.exit_code) << c;
    EXPECT_EQ(s["slurm"]["nodes"].get<std::string>().rfind("n", 0), 0u) << s["slurm"];
  }
  EXPECT_EQ(WaitForQueue([](const std::string& q) { return q.empty(); }, 30), "");
}

// A torch worker whose node goes down mid-evaluation (its candidate sleeps in forward) gives no
// verdict: the allocation's end is named, not a crash of the candidate.
TEST_F(SlurmCluster, APyTorchWorkerWhoseNodeGoesDownGivesNoVerdict) {
  const fs::path python = testing::SourceDir() / ".venv-torch" / "bin" / "python";
  if (!fs::exists(python)) GTEST_SKIP() << python << " is missing: run scripts/setup-torch-venv.sh";
  testing::ScopedEnv cpu("KPILOT_TORCH_DEVICE", "cpu");
  const fs::path fixtures = testing::SourceDir() / "tests" / "python" / "fixtures";
  ProcessSpec spec;
  spec.argv = {(testing::BinaryDir() / "bin" / "kpilot").string(),
               "eval",
               (fixtures / "relu_problem.py").string(),
               (fixtures / "relu_new_slow.py").string(),
               "--python",
               python.string(),
               "--no-store",
               "--json",
               "--executor",
               "slurm",
               "--slurm-config",
               config().string()};
  spec.cwd = root();
  spec.timeout_s = 300;
  ExpectNoVerdictWhenItsNodeGoesDown(spec);
}

// kpilot bench over real KernelBench problems (the checkout beside the project, read in place):
// each problem in an allocation of its own, two at once, every reference passing as its own
// candidate, each evaluation recorded with the job and node it ran on.
TEST_F(SlurmCluster, ABenchOfKernelBenchProblemsSpreadsThemOverAllocations) {
  const fs::path kb = testing::SourceDir().parent_path() / "shared" / "datasets" / "kernelbench" / "KernelBench";
  const fs::path python = testing::SourceDir() / ".venv-torch" / "bin" / "python";
  if (!fs::is_directory(kb / "level1")) GTEST_SKIP() << "no KernelBench checkout at " << kb;
  if (!fs::exists(python)) GTEST_SKIP() << python << " is missing: run scripts/setup-torch-venv.sh";
  testing::ScopedEnv cpu("KPILOT_TORCH_DEVICE", "cpu");
  const fs::path suite = root() / "KernelBench";
  for (const auto& [level, stem] :
       {std::pair<const char*, const char*>{"level1", "12_Matmul_with_diagonal_matrices_"}, {"level3", "4_LeNet5"}}) {
    fs::create_directories(suite / level);
    fs::create_symlink(kb / level / (std::string(stem) + ".py"), suite / level / (std::string(stem) + ".py"));
  }
  Config("[slurm]\nheartbeat_s = 1\nstart_timeout_s = 60\nworkers = 2\n");
  const fs::path store = root() / "store";
  auto r = testing::RunKpilot(
      root(),
      {"bench", suite.string(), "--eval-reference", "--no-compile-baseline", "--python", python.string(), "--store",
       store.string(), "--json", "--executor", "slurm", "--slurm-config", config().string()},
      900);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out << r.err;
  ASSERT_EQ(j["problems"].size(), 2u) << j.dump();
  for (const auto& p : j["problems"]) EXPECT_EQ(p["verdict"], "passed") << p.dump();
  // Each problem names the allocation and node it ran on.
  for (const auto& p : j["problems"]) EXPECT_EQ(p.value("where", "").rfind("slurm job ", 0), 0u) << p.dump();
  EXPECT_EQ(WaitForQueue([](const std::string& q) { return q.empty(); }, 30), "");
}

}  // namespace
}  // namespace kpilot
