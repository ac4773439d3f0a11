// kpilot on a real GPU (label gpu): the kernel profile through CUPTI's in-process counters and
// through ncu, and kpilot calibrate. Skipped without a GPU.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "core/subprocess.h"
#include "device/device.h"
#include "run_kpilot.h"
#include "test_paths.h"

namespace kpilot {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = testing::SourceDir();

class CliGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (SystemGpuProbe().List(&why).empty()) GTEST_SKIP() << "no GPU: " << why;
    auto d = TempDir::Create("kpilot-cli-gpu-test-");
    ASSERT_TRUE(d.ok());
    dir_ = std::make_unique<TempDir>(std::move(d).value());
  }
  ProcessResult Kpilot(std::vector<std::string> args) { return testing::RunKpilot(dir_->path(), args); }
  nlohmann::json Profile(const std::string& task, const std::string& candidate, const std::string& profiler) {
    auto r = Kpilot({"profile", (kSource / task).string(), (kSource / task / candidate).string(), "--json", "--store",
                     (dir_->path() / "store").string(), "--profiler", profiler, "--fresh", "--raw"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out;
    return j.is_discarded() ? nlohmann::json::object() : j;
  }
  std::unique_ptr<TempDir> dir_;
};

// The naive transpose (8192², uncoalesced writes): CUPTI's counters must say what ncu's say.
TEST_F(CliGpu, CuptiCountersAgreeWithNcu) {
  auto cupti = Profile("examples/cuda/transpose", "reference.cu", "cupti");
  ASSERT_EQ(cupti.value("profiler", ""), "cupti") << cupti.dump(1);
  ASSERT_FALSE(cupti["kernels"].empty());
  const auto& k = cupti["kernels"][0];
  std::string cls = k["roofline"].value("class", "");
  EXPECT_TRUE(cls == "memory-bound" || cls == "latency-bound") << k.dump(1);
  // The reference neither copies nor synchronizes: the runner's own sync after the call is not
  // the candidate's.
  for (const auto& f : k["findings"]) EXPECT_NE(f.value("id", ""), "copies-or-syncs-in-call") << f.dump(1);
  ASSERT_TRUE(k.contains("metrics")) << k.dump(1);
  double dram = k["metrics"].value("dram__throughput.avg.pct_of_peak_sustained_elapsed", -1.0);
  EXPECT_GT(dram, 10.0) << k["metrics"].dump(1);
  EXPECT_LE(dram, 100.5);
  EXPECT_GT(k["metrics"].value("launch__grid_size", 0.0), 0.0);

  if (FindOnPath("ncu").empty()) GTEST_SKIP() << "ncu not on PATH";
  auto ncu = Profile("examples/cuda/transpose", "reference.cu", "ncu");
  ASSERT_EQ(ncu.value("profiler", ""), "ncu") << ncu.dump(1);
  const auto& n = ncu["kernels"][0];
  EXPECT_EQ(n["roofline"].value("class", ""), k["roofline"].value("class", ""));
  double ncu_dram = n["metrics"].value("dram__throughput.avg.pct_of_peak_sustained_elapsed", -1.0);
  EXPECT_NEAR(dram, ncu_dram, 10.0) << "cupti " << dram << "% vs ncu " << ncu_dram << "%";
}

// kpilot optimize profiles each new best with counters on the evaluation queue, and the drafts
// from it see those findings (docs/search.md, "Counter profiles of new bests").
TEST_F(CliGpu, OptimizeProfilesEachNewBestWithCounters) {
  const fs::path task = kSource / "examples/cuda/transpose";
  auto r = Kpilot({"optimize", task.string(), "--from", (task / "candidates/smem_tiled.cu").string(), "--budget", "6",
                   "--workload", "8192x8192", "--json", "--store", (dir_->path() / "store").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_GE(j.value("counter_profiles", 0), 1) << r.out;
  EXPECT_GT(j.value("counters_s", 0.0), 0.0);
  std::vector<nlohmann::json> profiles;
  std::istringstream lines(r.err);
  for (std::string line; std::getline(lines, line);) {
    auto e = nlohmann::json::parse(line, nullptr, false);
    if (!e.is_discarded() && e.is_object() && e.value("event", "") == "counters") profiles.push_back(e);
  }
  ASSERT_FALSE(profiles.empty()) << r.err;
  const auto& first = profiles.front();
  EXPECT_EQ(first.value("node", -1), 0) << first.dump(1);  // the start is the first best
  EXPECT_FALSE(first.contains("error")) << first.dump(1);
  EXPECT_TRUE(first.value("profiler", "") == "cupti" || first.value("profiler", "") == "ncu") << first.dump(1);
  ASSERT_FALSE(first["kernels"].empty());
  const auto& k = first["kernels"][0];
  double dram = k["metrics"].value("dram__throughput.avg.pct_of_peak_sustained_elapsed", -1.0);
  EXPECT_GT(dram, 1.0) << k.dump(1);
  EXPECT_LE(dram, 100.5);
  std::cout << "counter profiles: " << profiles.size() << ", first: " << first.value("profiler", "") << " "
            << first.value("wall_s", 0.0) << " s, " << first.value("bottleneck", "") << ", " << first["findings"].size()
            << " findings; busy share " << j.value("busy_share", 0.0) << "\n";
}

// One evaluation queue per GPU (--devices all): with two or more GPUs of one model, a run's
// evaluations are spread over them; with one, every evaluation is on it.
TEST_F(CliGpu, OptimizeEvaluatesOnEveryListedGpu) {
  std::string why;
  const auto gpus = SystemGpuProbe().List(&why);
  size_t same_model = 0;
  for (const auto& g : gpus) same_model += g.name == gpus.front().name;
  const fs::path task = kSource / "examples/cuda/vector_add";
  auto r = Kpilot({"optimize", task.string(), "--budget", "10", "--devices", "all", "--counters", "off", "--json",
                   "--store", (dir_->path() / "store").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["devices"].size(), same_model) << r.out;
  std::map<int, int> evaluations;
  std::istringstream lines(r.err);
  for (std::string line; std::getline(lines, line);) {
    auto e = nlohmann::json::parse(line, nullptr, false);
    if (!e.is_discarded() && e.is_object() && e.value("event", "") == "evaluated") ++evaluations[e.value("device", -1)];
  }
  for (const auto& [device, n] : evaluations) std::cout << "GPU " << device << ": " << n << " evaluations\n";
  EXPECT_EQ(evaluations.size(), std::min<size_t>(same_model, 10)) << r.err;
  EXPECT_FALSE(evaluations.count(-1));
  EXPECT_LE(j.value("busy_share", 0.0), 1.0);
}

TEST_F(CliGpu, CalibrateMeasuresCeilings) {
  auto r = Kpilot({"calibrate", "--json", "--store", (dir_->path() / "store").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_GT(j.dump().size(), 10u);
  std::cout << j.dump(1) << "\n";
}

}  // namespace
}  // namespace kpilot
