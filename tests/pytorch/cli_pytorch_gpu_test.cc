// kpilot eval and optimize on the team's KernelBench-style problems on a GPU, with the worker run by
// python3 on PATH (torch with CUDA): native and ModelNew candidates, kpilot's and KernelBench's
// procedures, and a short search over a native candidate's declared params.
#include <gtest/gtest.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "../cli/run_kpilot.h"
#include "core/fs.h"
#include "device/device.h"
#include "test_paths.h"

namespace kpilot {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kSuite = testing::SourceDir() / "examples" / "kernelbench";

class CliPytorchGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (SystemGpuProbe().List(&why).empty()) GTEST_SKIP() << "no GPU: " << why;
    unsetenv("KPILOT_TORCH_DEVICE");
    auto dir = TempDir::Create("kpilot-cli-pytorch-gpu-");
    ASSERT_TRUE(dir.ok());
    dir_ = std::make_unique<TempDir>(std::move(dir).value());
  }
  json Run(const std::vector<std::string>& args, int* exit_code) {
    ProcessResult r = testing::RunKpilot(dir_->path(), args, 900);
    *exit_code = r.exit_code;
    json j = json::parse(r.out, nullptr, false);
    if (j.is_discarded()) ADD_FAILURE() << "no JSON; stderr:\n" << r.err << "\nstdout:\n" << r.out;
    return j.is_discarded() ? json() : j;
  }
  std::unique_ptr<TempDir> dir_;
};

TEST_F(CliPytorchGpu, NativeCandidatePassesAgainstEagerAndTheCacheFillsBothBaselines) {
  int rc = -1;
  std::string problem = (kSuite / "level1" / "1_ReLU.py").string();
  std::string native = (kSuite / "candidates" / "1_ReLU" / "native.cu").string();
  json eager = Run({"eval", problem, native, "--json"}, &rc);
  ASSERT_FALSE(eager.is_null());
  EXPECT_EQ(rc, 0) << eager.dump(2);
  EXPECT_EQ(eager["verdict"]["kind"], "passed");
  EXPECT_GT(eager["speedup_geomean"].get<double>(), 0.5);
  json compiled = Run({"eval", problem, native, "--json", "--baseline", "compile"}, &rc);
  ASSERT_FALSE(compiled.is_null());
  EXPECT_EQ(rc, 0) << compiled.dump(2);
  EXPECT_EQ(compiled["baseline"], "torch.compile");
  EXPECT_TRUE(compiled["baselines"]["eager"]["cached"].get<bool>()) << compiled["baselines"].dump();
  EXPECT_GT(compiled["speedup_vs_eager"].get<double>(), 0);
  EXPECT_GT(compiled["speedup_vs_compile"].get<double>(), 0);
}

TEST_F(CliPytorchGpu, ModelNewWithKernelBenchTiming) {
  int rc = -1;
  json j = Run(
      {"eval", (kSuite / "level1" / "1_ReLU.py").string(), (kSuite / "candidates" / "1_ReLU" / "model_new.py").string(),
       "--json", "--no-store", "--timing", "kernelbench"},
      &rc);
  ASSERT_FALSE(j.is_null());
  EXPECT_EQ(rc, 0) << j.dump(2);
  EXPECT_EQ(j["verdict"]["kind"], "passed");
  EXPECT_EQ(j["timings"][0]["statistic"], "mean");
}

TEST_F(CliPytorchGpu, OptimizeStartsFromTheSuitesNativeCandidate) {
  int rc = -1;
  json j =
      Run({"optimize", (kSuite / "level1" / "1_ReLU.py").string(), "--budget", "4", "--skills", "off", "--json"}, &rc);
  ASSERT_FALSE(j.is_null());
  EXPECT_EQ(rc, 0) << j.dump(2);
  EXPECT_EQ(j["final"]["verdict"]["kind"], "passed");
  EXPECT_GE(j["evaluations"].get<int>(), 2);
}

}  // namespace
}  // namespace kpilot
