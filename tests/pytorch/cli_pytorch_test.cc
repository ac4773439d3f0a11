// kpilot eval on a KernelBench-style problem end to end on the CPU: the real kpilot binary, the
// real torch worker (python/kpilot_torch) under the project's CPU-torch venv, g++ for the native
// candidate, and the store's baseline cache. The torch device is chosen by KPILOT_TORCH_DEVICE=cpu.
#include <gtest/gtest.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "../cli/run_kpilot.h"
#include "core/fs.h"
#include "test_paths.h"

namespace kpilot {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kFixtures = testing::SourceDir() / "tests" / "python" / "fixtures";

class CliPytorchCpu : public ::testing::Test {
 protected:
  void SetUp() override {
    python_ = testing::SourceDir() / ".venv-torch" / "bin" / "python";
    ASSERT_TRUE(fs::exists(python_)) << python_ << " is missing: run scripts/setup-torch-venv.sh";
    setenv("KPILOT_TORCH_DEVICE", "cpu", 1);
    auto dir = TempDir::Create("kpilot-cli-pytorch-");
    ASSERT_TRUE(dir.ok());
    dir_ = std::make_unique<TempDir>(std::move(dir).value());
  }
  void TearDown() override { unsetenv("KPILOT_TORCH_DEVICE"); }

  // kpilot eval PROBLEM CANDIDATE --python <venv> --json ARGS…; the JSON it printed (null if none).
  json Eval(const fs::path& problem, const fs::path& candidate, std::vector<std::string> args, int* exit_code) {
    std::vector<std::string> argv = {"eval",     problem.string(), candidate.string(),
                                     "--python", python_.string(), "--json"};
    argv.insert(argv.end(), args.begin(), args.end());
    ProcessResult r = testing::RunKpilot(dir_->path(), argv, 600);
    *exit_code = r.exit_code;
    json j = json::parse(r.out, nullptr, false);
    if (j.is_discarded()) ADD_FAILURE() << "no JSON; stderr:\n" << r.err << "\nstdout:\n" << r.out;
    return j.is_discarded() ? json() : j;
  }

  // The fixture's ReLU with a declared space (UNROLL changes the binary, not the result): the
  // problem has no [params], so optimize and sweep use these.
  fs::path TunedCandidate() {
    auto source = ReadFile(kFixtures / "native_kernels.cpp");
    EXPECT_TRUE(source.ok());
    fs::path cand = dir_->path() / "relu_tuned.cpp";
    EXPECT_TRUE(WriteFileAtomic(cand,
                                "/* kpilot-params\nUNROLL = [1, 2, 4]\nconstraints = [\"UNROLL < 4\"]\n*/\n"
                                "#ifndef UNROLL\n#define UNROLL 1\n#endif\n"
                                "extern \"C\" int relu_unroll() { return UNROLL; }\n" +
                                    (source.ok() ? *source : std::string()))
                    .ok());
    return cand;
  }

  fs::path python_;
  std::unique_ptr<TempDir> dir_;
};

TEST_F(CliPytorchCpu, ANativeCppCandidatePassesAndTheEagerBaselineIsCached) {
  int rc = -1;
  json j = Eval(kFixtures / "relu_problem.py", kFixtures / "native_kernels.cpp", {"--store", ".kpilot"}, &rc);
  ASSERT_FALSE(j.is_null());
  EXPECT_EQ(rc, 0) << j.dump(2);
  EXPECT_EQ(j["verdict"]["kind"], "passed") << j["verdict"].dump();
  EXPECT_EQ(j["baseline"], "eager");
  ASSERT_EQ(j["timings"].size(), 1u);
  EXPECT_EQ(j["timings"][0]["workload"], "default");
  EXPECT_GT(j["speedup_geomean"].get<double>(), 0);
  // This run measured eager and cached it; no torch.compile time is cached for this problem.
  EXPECT_EQ(j["baselines"]["gpu"], "cpu");
  EXPECT_FALSE(j["baselines"]["eager"]["cached"].get<bool>());
  EXPECT_GT(j["baselines"]["eager"]["ms"]["default"].get<double>(), 0);
  EXPECT_TRUE(j["baselines"]["compile"].is_null());
  EXPECT_DOUBLE_EQ(j["speedup_vs_eager"].get<double>(), j["speedup_geomean"].get<double>());
  EXPECT_TRUE(j["speedup_vs_compile"].is_null());
  EXPECT_NE(j.value("stored", ""), "");
}

TEST_F(CliPytorchCpu, AModelNewCandidateAndKernelBenchTiming) {
  int rc = -1;
  json j =
      Eval(kFixtures / "relu_problem.py", kFixtures / "relu_new_ok.py", {"--no-store", "--timing", "kernelbench"}, &rc);
  ASSERT_FALSE(j.is_null());
  EXPECT_EQ(rc, 0) << j.dump(2);
  EXPECT_EQ(j["verdict"]["kind"], "passed") << j["verdict"].dump();
  ASSERT_EQ(j["timings"].size(), 1u);
  EXPECT_EQ(j["timings"][0]["statistic"], "mean");
}

TEST_F(CliPytorchCpu, AFlashInferSolutionOnOneWorkloadRecord) {
  const fs::path fi = testing::SourceDir() / "examples" / "flashinfer";
  int rc = -1;
  json j = Eval(fi / "definitions" / "softmax" / "softmax_temperature_v4096.json",
                fi / "solutions" / "softmax" / "softmax_temperature_v4096" / "softmax_temperature_v4096_torch.json",
                {"--no-store", "--timing", "flashinfer", "--workload", "2c8e5a1d"}, &rc);
  ASSERT_FALSE(j.is_null());
  EXPECT_EQ(rc, 0) << j.dump(2);
  EXPECT_EQ(j["verdict"]["kind"], "passed") << j["verdict"].dump();
  ASSERT_EQ(j["timings"].size(), 1u);
  EXPECT_EQ(j["timings"][0]["workload"], "2c8e5a1d");
}

TEST_F(CliPytorchCpu, AWrongCandidateIsIncorrect) {
  int rc = -1;
  json j = Eval(kFixtures / "relu_problem.py", kFixtures / "relu_new_wrong.py", {"--no-store", "--no-time"}, &rc);
  ASSERT_FALSE(j.is_null());
  EXPECT_EQ(rc, 1);
  EXPECT_EQ(j["verdict"]["kind"], "incorrect") << j["verdict"].dump();
}

TEST_F(CliPytorchCpu, OptimizeTunesTheParamsTheCandidateDeclares) {
  fs::path cand = TunedCandidate();
  ProcessResult r = testing::RunKpilot(dir_->path(),
                                       {"optimize", (kFixtures / "relu_problem.py").string(), "--from", cand.string(),
                                        "--python", python_.string(), "--budget", "3", "--skills", "off", "--json"},
                                       600);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["final"]["verdict"]["kind"], "passed") << j["final"]["verdict"].dump();
  EXPECT_EQ(j["final"]["baseline"], "eager");
  EXPECT_GE(j["evaluations"].get<int>(), 2) << "the declared UNROLL values were tried: " << r.err;
  // Every evaluated node's params come from the candidate's block.
  EXPECT_NE(r.err.find("UNROLL="), std::string::npos) << r.err;
}

TEST_F(CliPytorchCpu, SweepEvaluatesTheDeclaredSpaceThroughTheWorker) {
  fs::path out = dir_->path() / "space.json";
  ProcessResult r =
      testing::RunKpilot(dir_->path(),
                         {"sweep", (kFixtures / "relu_problem.py").string(), TunedCandidate().string(), "--python",
                          python_.string(), "--out", out.string(), "--max-seconds", "0.2", "--json"},
                         600);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  auto text = ReadFile(out);
  ASSERT_TRUE(text.ok());
  json space = json::parse(*text);
  ASSERT_EQ(space["configs"].size(), 2u) << "UNROLL < 4 leaves 1 and 2";
  for (const auto& c : space["configs"]) {
    EXPECT_EQ(c["status"], "passed") << c.dump();
    EXPECT_GT(c["median_ms"].get<double>(), 0);
  }
}

TEST_F(CliPytorchCpu, AnInterpreterWithoutTorchIsNamedWithTheFix) {
  // python3 without its site packages: kpilot_torch imports (PYTHONPATH), torch does not.
  fs::path python = dir_->path() / "python-without-torch";
  ASSERT_TRUE(WriteFileAtomic(python, "#!/bin/sh\nexec /usr/bin/python3 -S \"$@\"\n").ok());
  fs::permissions(python, fs::perms::owner_all);
  ProcessResult r = testing::RunKpilot(
      dir_->path(), {"eval", (kFixtures / "relu_problem.py").string(), (kFixtures / "relu_new_ok.py").string(),
                     "--python", python.string(), "--no-store"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("has no torch — pass --python PATH to an interpreter with torch"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace kpilot
