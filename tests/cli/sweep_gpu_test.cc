// kpilot sweep on a GPU: many objects per runner process, every sample stored, and a
// configuration that poisons the CUDA context costs only itself.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "core/subprocess.h"
#include "device/device.h"
#include "run_kpilot.h"
#include "test_paths.h"

namespace kpilot {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kSource = testing::SourceDir();

class SweepGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (SystemGpuProbe().List(&why).empty()) GTEST_SKIP() << "no GPU: " << why;
    auto d = TempDir::Create("kpilot-sweep-gpu-test-");
    ASSERT_TRUE(d.ok());
    dir_ = std::make_unique<TempDir>(std::move(d).value());
  }
  ProcessResult Sweep(const fs::path& task, const fs::path& candidate, std::vector<std::string> more) {
    std::vector<std::string> args = {
        "sweep", task.string(), candidate.string(), "--out", Out(), "--store", (dir_->path() / "store").string()};
    args.insert(args.end(), more.begin(), more.end());
    return testing::RunKpilot(dir_->path(), args, 500);
  }
  std::string Out() { return (dir_->path() / "space.json").string(); }
  json Space() {
    auto text = ReadFile(Out());
    EXPECT_TRUE(text.ok());
    return text.ok() ? json::parse(*text, nullptr, false) : json();
  }
  std::unique_ptr<TempDir> dir_;
};

TEST_F(SweepGpu, GemmConfigurationsPassWithEverySample) {
  fs::path task = kSource / "bench" / "spaces" / "sgemm_space";
  ProcessResult r =
      Sweep(task, task / "candidates" / "tiled.cu", {"--cap", "6", "--batch", "3", "--max-seconds", "0.2"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  json space = Space();
  EXPECT_FALSE(space["gpu"].value("name", "").empty()) << space["gpu"].dump();
  // The GPU's ceilings, so replays classify against the roofline (SpaceCli tests the space runs).
  ASSERT_TRUE(space.contains("calibration")) << "no calibration in the space header";
  EXPECT_GT(space["calibration"].value("dram_bytes_per_s", 0.0), 1e11) << space["calibration"].dump();
  EXPECT_GT(space["calibration"].value("fp32_flops_per_s", 0.0), 1e12) << space["calibration"].dump();
  EXPECT_EQ(space["baseline"], "smem_tiled_16");
  ASSERT_EQ(space["configs"].size(), 6u);
  for (const auto& c : space["configs"]) {
    EXPECT_EQ(c["status"], "passed") << c.dump();
    std::vector<double> cand = c.value("candidate_ms", std::vector<double>{});
    EXPECT_GE(cand.size(), 3u) << c.dump();
    EXPECT_EQ(cand.size(), c.value("baseline_ms", std::vector<double>{}).size());
    EXPECT_GT(c.value("speedup", 0.0), 0) << c.dump();
    EXPECT_GT(c["resources"][0]["registers"].get<int>(), 0) << c.dump();
  }
}

TEST_F(SweepGpu, AStickyErrorCostsOnlyItsOwnConfiguration) {
  fs::path task = kSource / "tests" / "fixtures" / "tasks" / "sweep_cuda";
  // One compile thread: the batch holds the objects in enumeration order, the poisoning ones
  // (BUG = 1) in the middle, so objects after them are left not_run and must be run again.
  ProcessResult r = Sweep(task, task / "candidates" / "scale.cu", {"--jobs", "1", "--max-seconds", "0.1"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  std::map<std::string, json> by_bug;
  json space = Space();
  ASSERT_EQ(space["configs"].size(), 6u);
  for (const auto& c : space["configs"]) {
    std::string bug = c["params"]["BUG"];
    if (bug == "1") {
      EXPECT_EQ(c["status"], "runtime_error") << c.dump();
      EXPECT_NE(c.value("message", "").find("cudaErrorIllegalAddress"), std::string::npos) << c.dump();
    } else {
      EXPECT_EQ(c["status"], "passed") << c.dump();
      EXPECT_FALSE(c.value("candidate_ms", std::vector<double>{}).empty()) << c.dump();
    }
  }
}

}  // namespace
}  // namespace kpilot
