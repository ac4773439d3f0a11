// The local executor's runner channels (a Slurm allocation's served runner stands behind them in
// kpilot): every evaluation of a queue through its channel, a lost channel replaced, a factory
// that keeps failing, and a counter profile's runner run where the channel places it.
#include <gtest/gtest.h>

#include <mutex>

#include "exec/executor.h"
#include "local_executor_helpers.h"

namespace kpilot {
namespace {

// With a channel factory, each queue's evaluations go through the channel made for it; a channel
// whose runner is lost (Unavailable) is replaced and the evaluation runs again on the new one; a
// factory that keeps failing for the moment is asked three times, and a final error is the job's.
class ScriptedChannel : public RunnerChannel {
 public:
  ScriptedChannel(int id, std::vector<int>* calls, bool lose_first) : id_(id), calls_(calls), lose_(lose_first) {}
  Result<RunnerOutcome> Run(const RunRequest& request) override {
    calls_->push_back(id_);
    if (lose_) {
      lose_ = false;
      return Status::Unavailable("allocation 7 ended during the evaluation");
    }
    return RunRunnerProcess(SystemProcessRunner(), testing::RunnerPath(), request);
  }

 private:
  int id_;
  std::vector<int>* calls_;
  bool lose_;
};

// A channel whose one-shot runners run through a wrapper, their requests under a folder of its own.
class PlacedChannel : public RunnerChannel {
 public:
  explicit PlacedChannel(std::filesystem::path root) : root_(std::move(root)) {}
  Result<RunnerOutcome> Run(const RunRequest& request) override {
    return RunRunnerProcess(SystemProcessRunner(), testing::RunnerPath(), request);
  }
  RunnerLaunch Place() const override {
    RunnerLaunch launch;
    launch.wrapper = {"env", "KPILOT_PLACED=1"};
    launch.requests_root = root_;
    return launch;
  }

 private:
  std::filesystem::path root_;
};

// Every process the executor itself starts, run on this machine.
class RecordingProcesses : public ProcessRunner {
 public:
  Result<ProcessResult> Run(const ProcessSpec& spec) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      argvs_.push_back(spec.argv);
    }
    return SystemProcessRunner().Run(spec);
  }
  std::vector<std::vector<std::string>> Argvs() {
    std::lock_guard<std::mutex> lock(mu_);
    return argvs_;
  }

 private:
  std::mutex mu_;
  std::vector<std::vector<std::string>> argvs_;
};

// A counter profile's runner runs where the channel's runner runs (a cluster node): its wrapper,
// its request folder under the channel's root.
TEST(LocalExecutor, ACounterProfileRunsWhereItsChannelPlacesIt) {
  Saxpy saxpy;
  ASSERT_NO_FATAL_FAILURE(saxpy.Load());
  auto root = TempDir::Create("kpilot-placed-");
  ASSERT_TRUE(root.ok());
  RecordingProcesses processes;
  RunnerChannelFactory factory = [&](size_t) -> Result<std::unique_ptr<RunnerChannel>> {
    return std::unique_ptr<RunnerChannel>(std::make_unique<PlacedChannel>(root->path()));
  };
  const std::vector<std::unique_ptr<Tool>> no_tools;
  {
    LocalExecutor executor(*saxpy.toolchain, processes, testing::RunnerPath(), 1, nullptr, {0}, RunnerReuse::kNone,
                           factory);
    EvalJob job = SaxpyJob(saxpy.task, 0.05);
    job.counter_tools = &no_tools;
    EvalJobResult r = executor.Submit(std::move(job)).get();
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  }
  int placed = 0;
  for (const auto& argv : processes.Argvs())
    placed += argv.size() >= 5 && argv[0] == "env" && argv[1] == "KPILOT_PLACED=1" &&
              argv[2] == testing::RunnerPath().string() && argv[4].rfind(root->path().string(), 0) == 0;
  EXPECT_EQ(placed, 1) << "the counter profile's one runner, placed by the channel";
}

TEST(LocalExecutor, ChannelsTakeEveryEvaluationAndALostOneIsReplaced) {
  Saxpy saxpy;
  ASSERT_NO_FATAL_FAILURE(saxpy.Load());
  // One job through an executor whose channels come from `channels`; the executor is gone on return.
  auto submit_through = [&](RunnerChannelFactory channels) {
    LocalExecutor executor(*saxpy.toolchain, SystemProcessRunner(), testing::RunnerPath(), 1, nullptr, {0},
                           RunnerReuse::kNone, std::move(channels));
    return executor.Submit(SaxpyJob(saxpy.task, 0.05)).get();
  };
  std::vector<int> calls;
  std::vector<size_t> queues;
  int made = 0;
  RunnerChannelFactory factory = [&](size_t queue) -> Result<std::unique_ptr<RunnerChannel>> {
    queues.push_back(queue);
    ++made;
    return std::unique_ptr<RunnerChannel>(std::make_unique<ScriptedChannel>(made, &calls, /*lose_first=*/made == 1));
  };
  {
    EvalJobResult r = submit_through(factory);
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    EXPECT_TRUE(r.evaluation.verdict.passed()) << r.evaluation.verdict.summary;
  }
  EXPECT_EQ(calls, (std::vector<int>{1, 2})) << "the host task went to the channels, the lost one replaced";
  EXPECT_EQ(queues, (std::vector<size_t>{0, 0}));

  // A factory that cannot make a channel for the moment is asked three times, then the job fails.
  int asked = 0;
  RunnerChannelFactory failing = [&](size_t) -> Result<std::unique_ptr<RunnerChannel>> {
    ++asked;
    return Status::Unavailable("allocation 9 ended before it ran (NODE_FAIL)");
  };
  {
    EvalJobResult r = submit_through(failing);
    EXPECT_FALSE(r.status.ok());
    EXPECT_NE(r.status.message().find("NODE_FAIL"), std::string::npos) << r.status.ToString();
  }
  EXPECT_EQ(asked, 3);
  // A rejection is not asked again.
  asked = 0;
  RunnerChannelFactory rejecting = [&](size_t) -> Result<std::unique_ptr<RunnerChannel>> {
    ++asked;
    return Status::InvalidInput("the scheduler rejected the allocation: Invalid partition name specified");
  };
  {
    EvalJobResult r = submit_through(rejecting);
    EXPECT_EQ(r.status.code(), StatusCode::kInvalidInput);
  }
  EXPECT_EQ(asked, 1);
}

}  // namespace
}  // namespace kpilot
