// TorchBaselines: the baseline a run measured is cached per (problem, GPU, torch, procedure,
// workload) in a real SQLite store, and the other one is read back to give the second speedup.
#include <gtest/gtest.h>

#include "core/fs.h"
#include "pytorch/pytorch.h"

namespace kpilot {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class TorchBaselinesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::Create("kpilot-torch-baselines-");
    ASSERT_TRUE(dir.ok());
    dir_ = std::make_unique<TempDir>(std::move(dir).value());
    problem_ = dir_->path() / "19_ReLU.py";
    ASSERT_TRUE(WriteFileAtomic(problem_, "class Model: pass\n").ok());
    task_.name = "19_ReLU";
    task_.reference = {"reference", problem_, ReferenceKind::kPython, "Model"};
    auto store = Store::Open(dir_->path() / "store");
    ASSERT_TRUE(store.ok()) << store.status().message();
    store_ = std::move(store).value();
  }
  // A passed evaluation against `baseline` ("eager" | "torch.compile"): candidate 1 ms, baseline `base_ms`.
  static Evaluation Measured(const std::string& baseline, double base_ms) {
    Evaluation e;
    e.baseline = baseline;
    e.verdict.kind = VerdictKind::kPassed;
    e.run.details = {{"gpu", "NVIDIA H200"}, {"torch", "2.11.0"}};
    WorkloadTiming t;
    t.workload = "default";
    t.candidate_reported_ms = 1.0;
    t.baseline_reported_ms = base_ms;
    t.baseline_ms = {base_ms, base_ms};
    e.timings.push_back(t);
    e.speedup_geomean = base_ms;  // stands in for the paired speedup
    return e;
  }
  std::unique_ptr<TempDir> dir_;
  fs::path problem_;
  Task task_;
  std::unique_ptr<Store> store_;
};

TEST_F(TorchBaselinesTest, EachRunCachesItsBaselineAndReadsTheOther) {
  auto first = TorchBaselines(store_.get(), task_, Measured("eager", 3.0), TimingMode::kDefault);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ((*first)["gpu"], "NVIDIA H200");
  EXPECT_EQ((*first)["eager"]["ms"]["default"], 3.0);
  EXPECT_EQ((*first)["eager"]["cached"], false);
  EXPECT_TRUE((*first)["compile"].is_null());

  auto second = TorchBaselines(store_.get(), task_, Measured("torch.compile", 2.0), TimingMode::kDefault);
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_EQ((*second)["compile"]["cached"], false);
  EXPECT_DOUBLE_EQ((*second)["compile"]["speedup"].get<double>(), 2.0);
  EXPECT_EQ((*second)["eager"]["cached"], true);
  EXPECT_DOUBLE_EQ((*second)["eager"]["speedup"].get<double>(), 3.0);  // cached 3 ms over the candidate's 1 ms

  // Another procedure is another key: nothing cached for it yet.
  auto kb = TorchBaselines(store_.get(), task_, Measured("torch.compile", 2.5), TimingMode::kKernelBench);
  ASSERT_TRUE(kb.ok());
  EXPECT_TRUE((*kb)["eager"].is_null());
  EXPECT_EQ(*store_->CountRows("torch_baselines"), 3);
}

TEST_F(TorchBaselinesTest, AnEditedProblemIsAnotherProblem) {
  ASSERT_TRUE(TorchBaselines(store_.get(), task_, Measured("eager", 3.0), TimingMode::kDefault).ok());
  ASSERT_TRUE(WriteFileAtomic(problem_, "class Model: pass  # edited\n").ok());
  auto after = TorchBaselines(store_.get(), task_, Measured("torch.compile", 2.0), TimingMode::kDefault);
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE((*after)["eager"].is_null());
}

TEST_F(TorchBaselinesTest, AnIncumbentBaselineCachesNothingAndTheCpuIsItsOwnGpu) {
  Evaluation e = Measured("incumbent", 1.5);
  e.run.details["gpu"] = "";
  auto b = TorchBaselines(store_.get(), task_, e, TimingMode::kDefault);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*b)["gpu"], "cpu");
  EXPECT_TRUE((*b)["eager"].is_null());
  EXPECT_EQ(*store_->CountRows("torch_baselines"), 0);
  // Without a store it still reports this run's baseline.
  auto none = TorchBaselines(nullptr, task_, Measured("eager", 3.0), TimingMode::kDefault);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ((*none)["eager"]["ms"]["default"], 3.0);
}

}  // namespace
}  // namespace kpilot
