// The Evaluator's path for PyTorch-defined tasks, through the real WorkerTaskRunner and
// ProcessRunner with a fake worker (fake_worker/) and the real g++ for native .cpp candidates
// on the cpu device.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "core/fs.h"
#include "pytorch/pytorch.h"
#include "test_paths.h"

namespace kpilot {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kFakeWorker = testing::SourceDir() / "tests" / "pytorch" / "fake_worker";

class EvalPytorch : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::Create("kpilot-eval-pytorch-test-");
    ASSERT_TRUE(dir.ok());
    dir_ = std::make_unique<TempDir>(std::move(dir).value());
    log_ = dir_->path() / "requests.jsonl";
    setenv("KPILOT_FAKE_WORKER_LOG", log_.c_str(), 1);
    unsetenv("KPILOT_FAKE_WORKER");
    unsetenv("KPILOT_TORCH_DEVICE");
    problem_ = dir_->path() / "19_ReLU.py";
    ASSERT_TRUE(WriteFileAtomic(problem_, "# problem\n").ok());
    auto w = FindPythonWorker("", kFakeWorker);
    ASSERT_TRUE(w.ok()) << w.status().message();
    runner_ = std::make_unique<WorkerTaskRunner>(SystemProcessRunner(), *w);
    auto task = LoadKernelBenchProblem(SystemProcessRunner(), *w, problem_);
    ASSERT_TRUE(task.ok()) << task.status().message();
    task_ = *task;
    toolchain_ = MakeSystemToolchain(dir_->path() / "cache", testing::SourceDir() / "include");
  }
  void TearDown() override {
    unsetenv("KPILOT_FAKE_WORKER_LOG");
    unsetenv("KPILOT_FAKE_WORKER");
  }
  // The run requests the fake worker saw, in order.
  std::vector<json> RunRequests() {
    std::vector<json> out;
    std::ifstream in(log_);
    for (std::string line; std::getline(in, line);) {
      json j = json::parse(line);
      if (j["mode"] == "run") out.push_back(j["request"]);
    }
    return out;
  }
  fs::path Write(const std::string& name, const std::string& text) {
    fs::path p = dir_->path() / name;
    EXPECT_TRUE(WriteFileAtomic(p, text).ok());
    return p;
  }
  Result<Evaluation> Eval(const fs::path& candidate, const EvalOptions& opt = {}) {
    Evaluator ev(*toolchain_, SystemProcessRunner(), "/nonexistent/kpilot-runner", runner_.get());
    return ev.Evaluate(task_, candidate, opt);
  }

  std::unique_ptr<TempDir> dir_;
  fs::path log_, problem_;
  std::unique_ptr<WorkerTaskRunner> runner_;
  std::unique_ptr<Toolchain> toolchain_;
  Task task_;
};

TEST_F(EvalPytorch, AModelNewCandidatePassesWithPairedTimings) {
  fs::path cand = Write("new.py", "class ModelNew: pass\n");
  auto e = Eval(cand);
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->verdict.kind, VerdictKind::kPassed) << e->verdict.summary;
  EXPECT_EQ(e->baseline, "eager");
  ASSERT_EQ(e->timings.size(), 1u);
  EXPECT_EQ(e->timings[0].workload, "default");
  EXPECT_NEAR(e->timings[0].speedup.ratio, 2.0, 0.01);
  EXPECT_NEAR(e->speedup_geomean, 2.0, 0.01);
  EXPECT_EQ(e->run.details["torch"], "2.0.0+fake");
  auto reqs = RunRequests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0]["candidate"], json({{"kind", "model_new"}, {"path", cand.string()}}));
  EXPECT_EQ(reqs[0]["baseline"], json({{"kind", "reference"}}));
  EXPECT_EQ(reqs[0]["problem"], problem_.string());
  EXPECT_EQ(reqs[0]["device"], "cuda:0");
}

TEST_F(EvalPytorch, TheCompileBaselineIsAskedFor) {
  EvalOptions opt;
  opt.python_baseline = "compile";
  auto e = Eval(Write("new.py", "class ModelNew: pass\n"), opt);
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->baseline, "torch.compile");
  EXPECT_EQ(RunRequests().at(0)["baseline"], json({{"kind", "compile"}}));
  opt.python_baseline = "inductor";
  EXPECT_EQ(Eval(Write("new2.py", "\n"), opt).status().code(), StatusCode::kInvalidInput);
}

TEST_F(EvalPytorch, AnIncorrectCandidateIsAVerdict) {
  setenv("KPILOT_FAKE_WORKER", "incorrect", 1);
  auto e = Eval(Write("new.py", "class ModelNew: pass\n"));
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->verdict.kind, VerdictKind::kIncorrect);
  EXPECT_TRUE(e->timings.empty());
}

TEST_F(EvalPytorch, AWorkerErrorIsTheTasksFault) {
  setenv("KPILOT_FAKE_WORKER", "error", 1);
  auto e = Eval(Write("new.py", "class ModelNew: pass\n"));
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("get_inputs() is missing"), std::string::npos) << e.status().message();
}

TEST_F(EvalPytorch, NativeCandidatesOnTheCpuAreCppCompiledByGxx) {
  setenv("KPILOT_TORCH_DEVICE", "cpu", 1);
  fs::path cand = Write("relu.cpp", "#include <kpilot/kernel.h>\nextern \"C\" int kpilot_dummy() { return 1; }\n");
  auto e = Eval(cand);
  unsetenv("KPILOT_TORCH_DEVICE");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_TRUE(e->compile.ok) << e->compile.log;
  EXPECT_EQ(e->verdict.kind, VerdictKind::kPassed);
  auto reqs = RunRequests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0]["candidate"]["kind"], "native");
  EXPECT_EQ(reqs[0]["candidate"]["object"], e->compile.object.string());
  EXPECT_TRUE(fs::exists(e->compile.object));
  EXPECT_EQ(reqs[0]["device"], "cpu");
}

TEST_F(EvalPytorch, ACompileErrorIsAVerdictAndTheWorkerIsNotRun) {
  setenv("KPILOT_TORCH_DEVICE", "cpu", 1);
  auto e = Eval(Write("broken.cpp", "this is not C++\n"));
  unsetenv("KPILOT_TORCH_DEVICE");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->verdict.kind, VerdictKind::kCompileError);
  EXPECT_NE(e->verdict.summary.find("broken.cpp:1"), std::string::npos) << e->verdict.summary;
  EXPECT_TRUE(RunRequests().empty());
}

TEST_F(EvalPytorch, RejectsCandidatesOfTheWrongKind) {
  auto cpp = Eval(Write("k.cpp", "\n"));  // device cuda:0 wants .cu
  ASSERT_FALSE(cpp.ok());
  EXPECT_NE(cpp.status().message().find("must be a native .cu (the kpilot ABI) or a KernelBench ModelNew .py"),
            std::string::npos)
      << cpp.status().message();
  EXPECT_FALSE(Eval(Write("sol.json", "{}")).ok());
  setenv("KPILOT_TORCH_DEVICE", "cpu", 1);
  auto cu = Eval(Write("k.cu", "\n"));
  unsetenv("KPILOT_TORCH_DEVICE");
  ASSERT_FALSE(cu.ok());
  EXPECT_NE(cu.status().message().find("the torch device is the cpu"), std::string::npos) << cu.status().message();
  EvalOptions opt;
  opt.workloads = {"large"};
  EXPECT_NE(Eval(Write("new.py", "\n"), opt).status().message().find("no such workload"), std::string::npos);
  EXPECT_TRUE(RunRequests().empty());
}

TEST_F(EvalPytorch, TheProblemFileAsTheCandidateIsTheReference) {
  auto e = Eval(problem_);
  ASSERT_TRUE(e.ok()) << e.status().message();
  auto reqs = RunRequests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0]["candidate"]["kind"], "reference");
}

TEST_F(EvalPytorch, AnIncumbentBaselineIsSentAsItsKind) {
  EvalOptions opt;
  opt.baseline_source = Write("incumbent.py", "class ModelNew: pass\n");
  auto e = Eval(Write("new.py", "class ModelNew: pass\n"), opt);
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->baseline, "incumbent");
  EXPECT_EQ(RunRequests().at(0)["baseline"], json({{"kind", "model_new"}, {"path", opt.baseline_source->string()}}));
}

TEST_F(EvalPytorch, WithoutAWorkerAPythonTaskIsRefused) {
  Evaluator ev(*toolchain_, SystemProcessRunner(), "/nonexistent/kpilot-runner");
  auto e = ev.Evaluate(task_, Write("new.py", "\n"), EvalOptions{});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("has a Python reference"), std::string::npos);
}

}  // namespace
}  // namespace kpilot
