// kpilot sweep as a user runs it: the space file (every configuration, every sample, speedups),
// resuming, crash recovery, and the input errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

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
const fs::path kTask = kSource / "tests" / "fixtures" / "tasks" / "sweep_host";
const fs::path kCandidate = kTask / "candidates" / "scale.cpp";

class Sweep : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = TempDir::Create("kpilot-sweep-test-");
    ASSERT_TRUE(d.ok());
    dir_ = std::make_unique<TempDir>(std::move(d).value());
  }
  ProcessResult Kpilot(std::vector<std::string> args) {
    args.insert(args.begin(), "sweep");
    return testing::RunKpilot(dir_->path(), args, 600);
  }
  std::string Path(const std::string& rel) { return (dir_->path() / rel).string(); }
  json ReadJson(const std::string& path) {
    auto text = ReadFile(path);
    EXPECT_TRUE(text.ok()) << path;
    return text.ok() ? json::parse(*text, nullptr, false) : json();
  }
  std::unique_ptr<TempDir> dir_;
};

TEST_F(Sweep, DryRunCountsTheValidConfigurations) {
  ProcessResult r = Kpilot({kTask.string(), kCandidate.string(), "--dry-run"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("10 valid configurations of 12"), std::string::npos) << r.out;
  // The H200 figure's GEMM space has at least 500.
  fs::path gemm = kSource / "bench" / "spaces" / "sgemm_space";
  ProcessResult g = Kpilot({gemm.string(), (gemm / "candidates" / "tiled.cu").string(), "--dry-run", "--json"});
  ASSERT_EQ(g.exit_code, 0) << g.err;
  json j = json::parse(g.out);
  EXPECT_EQ(j["valid"].get<int>(), 576);
  EXPECT_EQ(j["combinations"].get<int>(), 864);
  // The spaces the search is tuned on instead (bench/spaces/real/README.md) still enumerate to
  // what was swept on the H200.
  for (const auto& [name, valid] : {std::pair{"conv2d", 777}, std::pair{"gauss_sum", 768}}) {
    fs::path tuning = kSource / "bench" / "spaces" / "tuning" / name;
    ProcessResult t = Kpilot({tuning.string(), (tuning / "candidates" / "tiled.cu").string(), "--dry-run", "--json"});
    ASSERT_EQ(t.exit_code, 0) << name << ": " << t.err;
    EXPECT_EQ(json::parse(t.out)["valid"].get<int>(), valid) << name;
  }
}

TEST_F(Sweep, EvaluatesEveryConfigurationWithItsSamplesAndResumes) {
  std::vector<std::string> args = {kTask.string(), kCandidate.string(), "--out", Path("space.json"), "--store",
                                   Path("store"),  "--max-seconds",     "0.05",  "--jobs",           "2"};
  ProcessResult first = Kpilot(args);
  ASSERT_EQ(first.exit_code, 0) << first.err << first.out;
  json space = ReadJson(Path("space.json"));
  EXPECT_EQ(space["version"], 1);
  EXPECT_EQ(space["task"], "sweep_host");
  EXPECT_EQ(space["workload"], "4K");  // the task's first
  EXPECT_EQ(space["baseline"], "reference");
  EXPECT_TRUE(space["gpu"].contains("host"));
  EXPECT_FALSE(space.value("created", "").empty());
  EXPECT_NE(space["candidate"].get<std::string>().find("scale.cpp"), std::string::npos);
  ASSERT_EQ(space["configs"].size(), 10u);

  std::map<std::string, int> by_status;
  std::map<std::string, json> by_params;  // "STEP BUG PAD" → entry
  for (const auto& c : space["configs"]) {
    std::string status = c["status"];
    ++by_status[status];
    const json& p = c["params"];
    by_params[p["STEP"].get<std::string>() + p["BUG"].get<std::string>() + p["PAD"].get<std::string>()] = c;
    EXPECT_TRUE(c.contains("object_sha")) << c.dump();
    EXPECT_TRUE(c.contains("compile_s")) << c.dump();
    if (status == "passed") {
      std::vector<double> cand = c["candidate_ms"], base = c["baseline_ms"];
      EXPECT_GE(cand.size(), 3u);
      EXPECT_EQ(cand.size(), base.size());  // paired samples
      double median = c["median_ms"], base_median = c["baseline_median_ms"];
      EXPECT_GT(median, 0);
      EXPECT_NEAR(c["speedup"].get<double>(), base_median / median, 1e-9);
      EXPECT_EQ(c["paired_speedup"]["n"].get<size_t>(), cand.size());
    }
  }
  EXPECT_EQ(by_status["passed"], 4);         // BUG=0
  EXPECT_EQ(by_status["incorrect"], 4);      // BUG=1
  EXPECT_EQ(by_status["runtime_error"], 2);  // BUG=2 crashes its process; retried alone
  EXPECT_NE(by_params["100"]["message"].get<std::string>().find("matched the reference"), std::string::npos);
  EXPECT_NE(by_params["110"]["message"].get<std::string>().find("differs from the reference"), std::string::npos);
  EXPECT_NE(by_params["120"]["message"].get<std::string>().find("signal"), std::string::npos)
      << by_params["120"].dump();
  // PAD is never read: both values compile to one object, evaluated once and copied.
  EXPECT_EQ(by_params["100"]["object_sha"], by_params["101"]["object_sha"]);
  EXPECT_EQ(by_params["100"]["candidate_ms"], by_params["101"]["candidate_ms"]);
  EXPECT_NE(by_params["100"]["object_sha"], by_params["200"]["object_sha"]);

  // Again with the same --out: nothing is evaluated again.
  ProcessResult second = Kpilot(args);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.err.find("10 already evaluated there"), std::string::npos) << second.err;
  EXPECT_EQ(second.err.find("evaluated 1"), std::string::npos) << second.err;
  json again = ReadJson(Path("space.json"));
  EXPECT_EQ(again["configs"], space["configs"]);
  EXPECT_EQ(again["created"], space["created"]);
}

TEST_F(Sweep, AnotherWorkloadAndAnInterruptedFileResume) {
  // A space file in which some configurations were not run yet (as a sweep killed mid-way leaves
  // it): only those are evaluated.
  std::vector<std::string> args = {
      kTask.string(), kCandidate.string(), "--out", Path("s.json"), "--store", Path("store"), "--max-seconds",
      "0.05",         "--workload",        "8K",    "--cap",        "4"};
  ProcessResult first = Kpilot(args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  json space = ReadJson(Path("s.json"));
  EXPECT_EQ(space["workload"], "8K");
  ASSERT_EQ(space["configs"].size(), 4u);
  json cut = space;
  cut["configs"][3] = {{"params", space["configs"][3]["params"]}, {"status", "not_run"}};
  ASSERT_TRUE(WriteFileAtomic(Path("s.json"), cut.dump()).ok());
  ProcessResult second = Kpilot(args);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.err.find("3 already evaluated there"), std::string::npos) << second.err;
  json after = ReadJson(Path("s.json"));
  EXPECT_EQ(after["configs"][0], space["configs"][0]);
  EXPECT_EQ(after["configs"][3]["status"], space["configs"][3]["status"]);
  // A file of another workload is not mixed into this one.
  ProcessResult other = Kpilot(
      {kTask.string(), kCandidate.string(), "--out", Path("s.json"), "--store", Path("store"), "--workload", "4K"});
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.err.find("s.json"), std::string::npos) << other.err;
  EXPECT_NE(other.err.find("workload"), std::string::npos) << other.err;
}

TEST_F(Sweep, AKilledSweepsJournalIsFoldedIn) {
  // Between full rewrites of the space file, results are appended to OUT.journal; a sweep killed
  // then leaves them there (its last line maybe cut short). The rerun takes them over.
  std::vector<std::string> args = {
      kTask.string(), kCandidate.string(), "--out", Path("s.json"), "--store", Path("store"), "--max-seconds",
      "0.05",         "--workload",        "8K",    "--cap",        "4"};
  ProcessResult first = Kpilot(args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_FALSE(fs::exists(Path("s.json.journal"))) << "a finished sweep folds its journal in";
  json space = ReadJson(Path("s.json"));
  ASSERT_EQ(space["configs"].size(), 4u);
  json cut = space;
  for (int i : {2, 3}) cut["configs"][i] = {{"params", space["configs"][i]["params"]}, {"status", "not_run"}};
  ASSERT_TRUE(WriteFileAtomic(Path("s.json"), cut.dump()).ok());
  std::string partial = space["configs"][2].dump();
  ASSERT_TRUE(
      WriteFileAtomic(Path("s.json.journal"), space["configs"][3].dump() + "\n" + partial.substr(0, partial.size() / 2))
          .ok());
  ProcessResult second = Kpilot(args);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.err.find("3 already evaluated there"), std::string::npos) << second.err;
  EXPECT_NE(second.err.find("1 unreadable line"), std::string::npos) << second.err;
  EXPECT_FALSE(fs::exists(Path("s.json.journal")));
  json after = ReadJson(Path("s.json"));
  EXPECT_EQ(after["configs"][3], space["configs"][3]) << "the journaled entry, samples and all";
  EXPECT_EQ(after["configs"][2]["status"], space["configs"][2]["status"]) << "evaluated again";
}

TEST_F(Sweep, BadInputsExitTwoNamingTheFieldAndTheFix) {
  ProcessResult workload = Kpilot({kTask.string(), kCandidate.string(), "--workload", "nope", "--dry-run"});
  EXPECT_EQ(workload.exit_code, 2);
  EXPECT_NE(workload.err.find("--workload nope"), std::string::npos) << workload.err;
  EXPECT_NE(workload.err.find("4K, 8K"), std::string::npos) << workload.err;

  fs::path plain = dir_->path() / "plain";
  fs::create_directories(plain);
  fs::copy_file(kTask / "reference.cpp", plain / "reference.cpp");
  auto toml = ReadFile(kTask / "task.toml");
  ASSERT_TRUE(toml.ok());
  std::string no_params = toml->substr(0, toml->find("[params]"));
  no_params.replace(no_params.find("constraints"),
                    no_params.find('\n', no_params.find("constraints")) - no_params.find("constraints"), "");
  ASSERT_TRUE(WriteFileAtomic(plain / "task.toml", no_params).ok());
  ProcessResult params = Kpilot({plain.string(), kCandidate.string(), "--dry-run"});
  EXPECT_EQ(params.exit_code, 2);
  EXPECT_NE(params.err.find("[params]"), std::string::npos) << params.err;
  EXPECT_NE(params.err.find("task.toml"), std::string::npos) << params.err;

  ASSERT_TRUE(WriteFileAtomic(Path("file"), "x").ok());
  std::string unwritable = Path("file") + "/space.json";
  ProcessResult out = Kpilot({kTask.string(), kCandidate.string(), "--out", unwritable, "--store", Path("store")});
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_NE(out.err.find(unwritable), std::string::npos) << out.err;
  EXPECT_NE(out.err.find("--out"), std::string::npos) << out.err;

  ProcessResult foreign =
      Kpilot({kTask.string(), kCandidate.string(), "--out", Path("file"), "--store", Path("store")});
  EXPECT_EQ(foreign.exit_code, 2);
  EXPECT_NE(foreign.err.find("not a kpilot space file"), std::string::npos) << foreign.err;

  ProcessResult missing = Kpilot({kTask.string(), Path("nope.cpp"), "--dry-run"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("nope.cpp"), std::string::npos) << missing.err;
}

TEST_F(Sweep, CudaSpaceNeedsAGpuButCompilesWithCompileOnly) {
  std::string why;
  if (!SystemGpuProbe().List(&why).empty()) GTEST_SKIP() << "a GPU is present";
  if (FindOnPath("nvcc").empty() && !fs::exists("/usr/local/cuda/bin/nvcc")) GTEST_SKIP() << "no nvcc";
  fs::path gemm = kSource / "bench" / "spaces" / "sgemm_space";
  std::string cand = (gemm / "candidates" / "tiled.cu").string();
  ProcessResult r = Kpilot({gemm.string(), cand, "--out", Path("g.json"), "--store", Path("store")});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("--compile-only"), std::string::npos) << r.err;
  ProcessResult c = Kpilot({gemm.string(), cand, "--out", Path("g.json"), "--store", Path("store"), "--compile-only",
                            "--cap", "2", "--jobs", "2"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  json space = ReadJson(Path("g.json"));
  ASSERT_EQ(space["configs"].size(), 2u);
  for (const auto& e : space["configs"]) {
    EXPECT_EQ(e["status"], "not_run") << e.dump();  // compiled, not evaluated
    EXPECT_TRUE(e.contains("object_sha")) << e.dump();
    EXPECT_GT(e["resources"][0]["registers"].get<int>(), 0) << e.dump();
    // The SASS instruction mix, so replays get the static findings live runs get.
    EXPECT_GT(e["resources"][0]["mix"].value("ffma", 0), 0) << e.dump();
    EXPECT_GT(e["resources"][0]["mix"].value("total", 0), 0) << e.dump();
  }
}

}  // namespace
}  // namespace kpilot
