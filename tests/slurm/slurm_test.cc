// The Slurm module's pure pieces on real sbatch/squeue output (Slurm 22.05, Debian 12), its config
// errors, and the allocation's life through a scripted ProcessRunner and a fake clock: running,
// rejected, pending for a reason that never clears, pending past the timeout, and cancelled on
// every error and at destruction.
#include <gtest/gtest.h>

#include <algorithm>

#include <deque>

#include "core/fs.h"
#include "support/fake_clock.h"
#include "slurm/slurm.h"

namespace kpilot::slurm {
namespace {

TEST(SlurmConfig, ReadsEveryKeyAndResolvesTheSharedFolder) {
  auto c = ParseSlurmConfig(R"([slurm]
partition = "gpu"
account = "kernels"
gres = "gpu:h100:1"
time_limit = "02:00:00"
sbatch_extra = ["--qos=short", "--constraint=h100"]
shared_dir = "scratch"
workers = 4
start_timeout_s = 120
heartbeat_s = 5
srun = "/opt/slurm/bin/srun"
compile_partition = "cpu"
compile_cpus = 32
)",
                            "/etc/kpilot/slurm.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->partition, "gpu");
  EXPECT_EQ(c->gres, "gpu:h100:1");
  EXPECT_EQ(c->sbatch_extra.size(), 2u);
  EXPECT_EQ(c->shared_dir, "/etc/kpilot/scratch") << "relative to the config's folder";
  EXPECT_EQ(c->workers, 4);
  EXPECT_EQ(c->heartbeat_s, 5);
  EXPECT_EQ(c->srun, "/opt/slurm/bin/srun");
  EXPECT_EQ(c->sbatch, "sbatch") << "the default";
  EXPECT_EQ(c->compile_partition, "cpu");
  EXPECT_EQ(c->compile_cpus, 32);
}

TEST(SlurmConfig, EveryProblemNamesTheFileLineKeyAndFix) {
  auto c =
      ParseSlurmConfig("[slurm]\nworkers = 0\npartiton = \"x\"\nheartbeat_s = \"fast\"\ncompile_cpus = 0\n", "s.toml");
  ASSERT_FALSE(c.ok());
  const std::string m = c.status().message();
  EXPECT_NE(m.find("s.toml:2: workers: expected a whole number"), std::string::npos) << m;
  EXPECT_NE(m.find("s.toml:3: partiton: unknown key; the [slurm] keys are partition"), std::string::npos) << m;
  EXPECT_NE(m.find("s.toml:4: heartbeat_s: expected a number"), std::string::npos) << m;
  EXPECT_NE(m.find("s.toml:5: compile_cpus: expected a whole number"), std::string::npos) << m;
  auto none = ParseSlurmConfig("partition = \"x\"\n", "t.toml");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no [slurm] table"), std::string::npos);
  auto syntax = ParseSlurmConfig("[slurm\n", "u.toml");
  ASSERT_FALSE(syntax.ok());
  EXPECT_NE(syntax.status().message().find("u.toml:1:"), std::string::npos) << syntax.status().message();
  auto missing = LoadSlurmConfig("/no/such/slurm.toml");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("--slurm-config"), std::string::npos);
}

TEST(SlurmCommands, SbatchAndTheStepCarryTheConfig) {
  SlurmConfig c;
  c.partition = "gpu";
  c.gres = "gpu:1";
  c.sbatch_extra = {"--qos=short"};
  auto argv = SbatchArgv(c, "kpilot-eval", "/shared/keeper.sh", "/shared/keeper.log");
  EXPECT_EQ(argv.front(), "sbatch");
  EXPECT_EQ(argv.back(), "/shared/keeper.sh");
  for (const char* want : {"--parsable", "--partition=gpu", "--gres=gpu:1", "--qos=short", "--time=01:00:00",
                           "--output=/shared/keeper.log", "--job-name=kpilot-eval"})
    EXPECT_NE(std::find(argv.begin(), argv.end(), want), argv.end()) << want;
  EXPECT_EQ(std::find(argv.begin(), argv.end(), std::string("--account=")), argv.end()) << "no empty options";
  auto step = StepWrapper(c, 42);
  EXPECT_EQ(step.front(), "srun");
  EXPECT_NE(std::find(step.begin(), step.end(), "--jobid=42"), step.end());
  EXPECT_NE(std::find(step.begin(), step.end(), "--overlap"), step.end()) << "beside the keeper's batch step";
}

TEST(SlurmCommands, TheKeeperEndsAfterTheMissedBeats) {
  const std::string s = KeeperScript("/shared/it's here/heartbeat", 10);
  EXPECT_EQ(s.rfind("#!/bin/sh\n", 0), 0u);
  EXPECT_NE(s.find("hb='/shared/it'\\''s here/heartbeat'"), std::string::npos) << "quoted for sh: " << s;
  EXPECT_NE(s.find("-gt 60 ]"), std::string::npos) << "6 beats of 10 s: " << s;
  EXPECT_NE(s.find("sleep 10"), std::string::npos);
}

TEST(SlurmParsers, SbatchJobIds) {
  EXPECT_EQ(*ParseSbatchJobId("12345\n"), 12345);
  EXPECT_EQ(*ParseSbatchJobId("77;cluster-a\n"), 77);
  EXPECT_FALSE(ParseSbatchJobId("sbatch: error: Batch job submission failed\n").ok());
  EXPECT_FALSE(ParseSbatchJobId("").ok());
}

TEST(SlurmParsers, SqueueLinesAsSlurmPrintsThem) {
  // squeue --noheader --format='%T|%r|%N' of Slurm 22.05: a running, a pending and a limited job.
  auto running = ParseSqueueLine("RUNNING|None|n1\n");
  ASSERT_TRUE(running);
  EXPECT_EQ(running->state, JobState::kRunning);
  EXPECT_EQ(running->nodes, "n1");
  auto pending = ParseSqueueLine("PENDING|Resources|");
  ASSERT_TRUE(pending);
  EXPECT_EQ(pending->state, JobState::kPending);
  EXPECT_EQ(pending->reason, "Resources");
  EXPECT_FALSE(PendsForever(pending->reason));
  auto limited = ParseSqueueLine("PENDING|PartitionNodeLimit|");
  ASSERT_TRUE(limited);
  EXPECT_TRUE(PendsForever(limited->reason));
  auto completing = ParseSqueueLine("COMPLETING|None|n2");
  ASSERT_TRUE(completing);
  EXPECT_TRUE(IsFinished(completing->state));
  EXPECT_FALSE(ParseSqueueLine("slurm_load_jobs error: Invalid job id specified"));
  EXPECT_STREQ(JobStateName(JobState::kNodeFail), "NODE_FAIL");
  EXPECT_EQ(ParseJobState("OUT_OF_MEMORY"), JobState::kOutOfMemory);
}

// Answers sbatch, squeue and scancel from a script; records every command.
class FakeSlurm : public ProcessRunner {
 public:
  std::string sbatch_out = "101\n", sbatch_err;
  int sbatch_exit = 0;
  std::deque<std::string> squeue;  // one answer per call; the last repeats
  std::vector<std::vector<std::string>> calls;
  bool missing = false;
  int srun_exit = 0;  // what a job step's program exits with
  std::vector<ProcessSpec> steps;
  Result<ProcessResult> Run(const ProcessSpec& spec) override {
    calls.push_back(spec.argv);
    if (missing) return Status::NotFound(spec.argv.front() + ": program not found on PATH");
    ProcessResult r;
    r.exit_code = 0;
    const std::string& cmd = spec.argv.front();
    if (cmd == "sbatch") {
      r.out = sbatch_out;
      r.err = sbatch_err;
      r.exit_code = sbatch_exit;
    } else if (cmd == "squeue") {
      r.out = squeue.front();
      if (squeue.size() > 1) squeue.pop_front();
    } else if (cmd == "srun") {
      steps.push_back(spec);
      r.exit_code = srun_exit;
    }
    return r;
  }
  int Count(const std::string& cmd) const {
    int n = 0;
    for (const auto& c : calls) n += c.front() == cmd;
    return n;
  }
};

class AllocationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = TempDir::Create("kpilot-slurm-");
    ASSERT_TRUE(d.ok());
    dir_.emplace(std::move(d).value());
    config_.start_timeout_s = 30;
    config_.file = "slurm.toml";
  }
  std::optional<TempDir> dir_;
  SlurmConfig config_;
  FakeSlurm slurm_;
  testing::FakeClock clock_;
};

TEST_F(AllocationTest, WaitsUntilRunningThenCancelsAtTheEnd) {
  slurm_.squeue = {"PENDING|Priority|\n", "PENDING|Resources|\n", "RUNNING|None|gpu-07\n"};
  {
    auto a = Allocation::Start(slurm_, clock_, config_, "kpilot-test", dir_->path() / "a");
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    EXPECT_EQ((*a)->job_id(), 101);
    EXPECT_EQ((*a)->nodes(), "gpu-07");
    EXPECT_EQ(clock_.Sleeps().size(), 2u) << "two polls pended, on the clock";
    EXPECT_TRUE(std::filesystem::exists(dir_->path() / "a" / "heartbeat"));
    EXPECT_TRUE(std::filesystem::exists(dir_->path() / "a" / "keeper.sh"));
    EXPECT_EQ(slurm_.Count("scancel"), 0);
  }
  EXPECT_EQ(slurm_.Count("scancel"), 1) << "the handle's end cancels the allocation";
  EXPECT_EQ(slurm_.calls.back(), (std::vector<std::string>{"scancel", "101"}));
}

TEST_F(AllocationTest, ARejectedJobIsAnErrorWithTheSchedulersWords) {
  slurm_.sbatch_exit = 1;
  slurm_.sbatch_out = "";
  slurm_.sbatch_err = "sbatch: error: Batch job submission failed: Invalid partition name specified\n";
  auto a = Allocation::Start(slurm_, clock_, config_, "kpilot-test", dir_->path() / "a");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(a.status().message().find("Invalid partition name"), std::string::npos) << a.status().message();
  EXPECT_NE(a.status().message().find("slurm.toml"), std::string::npos);
  EXPECT_EQ(slurm_.Count("scancel"), 0) << "nothing was submitted";
}

TEST_F(AllocationTest, APendingReasonThatNeverClearsIsRefusedAndCancelled) {
  slurm_.squeue = {"PENDING|PartitionNodeLimit|\n"};
  auto a = Allocation::Start(slurm_, clock_, config_, "kpilot-test", dir_->path() / "a");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("can never start"), std::string::npos) << a.status().message();
  EXPECT_NE(a.status().message().find("PartitionNodeLimit"), std::string::npos);
  EXPECT_EQ(slurm_.Count("scancel"), 1);
}

TEST_F(AllocationTest, StillPendingAtTheTimeoutIsUnavailableAndCancelled) {
  slurm_.squeue = {"PENDING|Resources|\n"};
  auto a = Allocation::Start(slurm_, clock_, config_, "kpilot-test", dir_->path() / "a");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(a.status().message().find("still pending after 30 s (Resources)"), std::string::npos)
      << a.status().message();
  EXPECT_EQ(slurm_.Count("scancel"), 1);
  EXPECT_NEAR(clock_.SleepSeconds().size() * 0.5, 30, 1) << "polled on the clock, not in real time";
}

TEST_F(AllocationTest, AJobThatEndsBeforeRunningIsAnError) {
  slurm_.squeue = {"PENDING|None|\n", ""};  // squeue no longer lists it
  auto a = Allocation::Start(slurm_, clock_, config_, "kpilot-test", dir_->path() / "a");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("ended before it ran"), std::string::npos) << a.status().message();
}

TEST_F(AllocationTest, AStepRunsInTheProcesssFolderWithItsEnvironmentAndALimit) {
  StepProcessRunner steps(slurm_, StepWrapper(config_, 7));
  ProcessSpec spec;
  spec.argv = {"/usr/bin/g++", "-c", "a.cpp"};
  spec.cwd = "/shared/task";
  spec.env = std::vector<std::string>{"A=1"};
  spec.timeout_s = 90;
  ASSERT_TRUE(steps.Run(spec).ok());
  ASSERT_EQ(slurm_.steps.size(), 1u);
  const auto& argv = slurm_.steps[0].argv;
  EXPECT_EQ(argv.front(), "srun");
  EXPECT_NE(std::find(argv.begin(), argv.end(), "--jobid=7"), argv.end());
  EXPECT_NE(std::find(argv.begin(), argv.end(), "--chdir=/shared/task"), argv.end());
  EXPECT_NE(std::find(argv.begin(), argv.end(), "--time=3"), argv.end()) << "90 s rounds up to 2 minutes, plus one";
  EXPECT_EQ(std::vector<std::string>(argv.end() - 3, argv.end()), spec.argv);
  EXPECT_EQ(slurm_.steps[0].env, spec.env) << "srun passes the environment on";
}

TEST_F(AllocationTest, TheCompileAllocationAsksForCpusAndNoGresAndKnowsALostJob) {
  config_.partition = "gpu";
  config_.gres = "gpu:1";
  config_.compile_partition = "cpu";
  config_.compile_cpus = 12;
  slurm_.squeue = {"RUNNING|None|cpu-3\n"};
  {
    auto c = CompileAllocation::Start(slurm_, clock_, config_, "kpilot-compile");
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ((*c)->Where(), "slurm job 101 on cpu-3");
    EXPECT_EQ((*c)->cpus(), 12);
    const auto& sbatch = slurm_.calls.front();
    EXPECT_NE(std::find(sbatch.begin(), sbatch.end(), "--partition=cpu"), sbatch.end());
    EXPECT_NE(std::find(sbatch.begin(), sbatch.end(), "--cpus-per-task=12"), sbatch.end());
    for (const auto& a : sbatch) EXPECT_EQ(a.find("--gres"), std::string::npos) << a;
    ProcessSpec nvcc;
    nvcc.argv = {"nvcc", "x.cu"};
    // A compiler that fails while the allocation runs is the compiler's answer.
    slurm_.srun_exit = 1;
    auto failed = (*c)->Run(nvcc);
    ASSERT_TRUE(failed.ok());
    EXPECT_EQ(failed->exit_code, 1);
    // One that ends with the allocation is no compile error.
    slurm_.squeue = {"NODE_FAIL|None|cpu-3\n"};
    auto lost = (*c)->Run(nvcc);
    ASSERT_FALSE(lost.ok());
    EXPECT_EQ(lost.status().code(), StatusCode::kUnavailable);
    EXPECT_NE(lost.status().message().find("allocation 101 on cpu-3 ended during a compile (NODE_FAIL)"),
              std::string::npos)
        << lost.status().message();
  }
  EXPECT_EQ(slurm_.Count("scancel"), 1);
}

TEST_F(AllocationTest, MissingCommandsSayHowToGetThem) {
  slurm_.missing = true;
  auto a = Allocation::Start(slurm_, clock_, config_, "kpilot-test", dir_->path() / "a");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(a.status().message().find("slurm-client"), std::string::npos) << a.status().message();
  EXPECT_NE(a.status().message().find("sbatch = "), std::string::npos);
}

}  // namespace
}  // namespace kpilot::slurm
