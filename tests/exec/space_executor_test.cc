// The space executor on hand-written space files: status mapping, duplicate binaries, the
// promotion gate from stored samples, errors; and kpilot optimize --space end to end.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "core/subprocess.h"
#include "exec/space_executor.h"
#include "task/loader.h"
#include "test_paths.h"

namespace kpilot {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Samples around `ms` (± `spread`, a fixed zigzag so tests need no RNG), paired with a baseline
// around `base_ms`.
json Passed(const std::string& v, double ms, double base_ms, double spread, int n, const std::string& sha) {
  std::vector<double> c, b;
  for (int i = 0; i < n; ++i) {
    double z = (i % 5 - 2) / 2.0;  // -1, -0.5, 0, 0.5, 1
    c.push_back(ms * (1 + spread * z));
    b.push_back(base_ms * (1 - 0.005 * z));
  }
  return {{"params", {{"V", v}}}, {"status", "passed"}, {"object_sha", sha}, {"compile_s", 2.0},
          {"candidate_ms", c},    {"baseline_ms", b},   {"message", ""}};
}

json Failed(const std::string& v, const std::string& status, const std::string& message) {
  json j = {{"params", {{"V", v}}}, {"status", status}, {"message", message}, {"compile_s", 1.5}};
  if (status != "compile_error") j["object_sha"] = "sha-" + v;
  return j;
}

Task TinyTask() {
  Task t;
  t.name = "tiny";
  t.params.push_back({"V", {"1", "2", "3", "4", "5", "6", "7", "8"}});
  return t;
}

class WithTempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = TempDir::Create("kpilot-replay-test-");
    ASSERT_TRUE(d.ok());
    dir_ = std::make_unique<TempDir>(std::move(d).value());
  }
  std::unique_ptr<TempDir> dir_;
};

class SpaceExecutorTest : public WithTempDir {
 protected:
  void SetUp() override {
    WithTempDir::SetUp();
    json space = {{"version", 1},
                  {"task", "tiny"},
                  {"workload", "w"},
                  {"baseline", "reference"},
                  {"configs",
                   {[] {
                      json j = Passed("1", 10.0, 10.0, 0.01, 20, "sha-1");
                      j["resources"] = {{{"kernel", "tiled"},
                                         {"registers", 96},
                                         {"shared_bytes", 8192},
                                         {"spill_store_bytes", 16},
                                         {"mix", {{"total", 120}, {"ldg32", 8}}}}};
                      return j;
                    }(),
                    Passed("2", 5.0, 10.0, 0.01, 20, "sha-2"),   // 2x, clearly faster than 1
                    Passed("3", 4.95, 10.0, 0.05, 20, "sha-3"),  // 2.02x, within the noise of 2
                    Passed("4", 5.0, 10.0, 0.01, 20, "sha-2"),   // the same binary as 2
                    Failed("5", "incorrect", "output c differs at 3 elements"),
                    Failed("6", "compile_error", "tiled.cu:12: error: oops"),
                    Failed("7", "runtime_error", "cudaErrorIllegalAddress"), Failed("8", "not_run", "")}}};
    file_ = dir_->path() / "space.json";
    ASSERT_TRUE(WriteFileAtomic(file_, space.dump()).ok());
  }
  EvalJob Job(const std::string& v) {
    EvalJob j;
    j.task = &task_;
    j.source = "candidate.cu";
    j.params = {{"V", v}};
    return j;
  }
  fs::path file_;
  Task task_ = TinyTask();
};

TEST_F(SpaceExecutorTest, StatusesMapToVerdictsAndPassedTimingsUseTheHarnessStatistics) {
  auto exec = SpaceExecutor::Open(file_, task_, 1);
  ASSERT_TRUE(exec.ok()) << exec.status().ToString();
  EvalJobResult r = (*exec)->Submit(Job("2")).get();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.evaluation.verdict.kind, VerdictKind::kPassed);
  EXPECT_EQ(r.object_sha, "sha-2");
  EXPECT_DOUBLE_EQ(r.compile_s, 2.0);
  const SpaceConfig& c = (*exec)->space().configs[1];
  PairedRatio want = PairedSpeedup(c.baseline_ms, c.candidate_ms);
  ASSERT_EQ(r.evaluation.timings.size(), 1u);
  EXPECT_EQ(r.evaluation.timings[0].workload, "w");
  EXPECT_DOUBLE_EQ(r.evaluation.speedup_geomean, want.ratio);
  EXPECT_DOUBLE_EQ(r.evaluation.speedup_geomean_ci.lo, want.ci.lo);
  EXPECT_NEAR(r.evaluation.speedup_geomean, 2.0, 0.05);
  EXPECT_EQ(r.evaluation.timings[0].candidate_ms, c.candidate_ms);
  EXPECT_EQ(r.evaluation.baseline, "reference");

  std::map<std::string, VerdictKind> want_kind = {{"5", VerdictKind::kIncorrect},
                                                  {"6", VerdictKind::kCompileError},
                                                  {"7", VerdictKind::kRuntimeError},
                                                  {"8", VerdictKind::kRuntimeError}};
  for (const auto& [v, kind] : want_kind) {
    EvalJobResult f = (*exec)->Submit(Job(v)).get();
    ASSERT_TRUE(f.status.ok()) << v;
    EXPECT_EQ(f.evaluation.verdict.kind, kind) << v;
    EXPECT_TRUE(f.evaluation.timings.empty()) << v;
    EXPECT_EQ(f.evaluation.speedup_geomean, 0) << v;
  }
  EXPECT_EQ((*exec)->Submit(Job("5")).get().evaluation.verdict.summary, "output c differs at 3 elements");
  EvalJobResult with_resources = (*exec)->Submit(Job("1")).get();
  ASSERT_EQ(with_resources.evaluation.compile.resources.size(), 1u) << "the ptxas report, for static findings";
  EXPECT_EQ(with_resources.evaluation.compile.resources[0].registers, 96);
  EXPECT_EQ(with_resources.evaluation.compile.resources[0].spill_stores, 16);
  EXPECT_EQ(with_resources.evaluation.run.details["static_mix"],
            json::parse(R"([{"kernel": "tiled", "mix": {"total": 120, "ldg32": 8}}])"))
      << "the SASS mix, for the optimizer's static findings";
  EXPECT_FALSE(r.evaluation.run.details.contains("static_mix")) << "none stored for V=2";
  EXPECT_EQ((*exec)->Submit(Job("6")).get().object_sha, "") << "a compile error has no object";
  EXPECT_NE((*exec)->Submit(Job("8")).get().evaluation.verdict.summary.find("not run"), std::string::npos);
}

TEST_F(SpaceExecutorTest, AStoredShaSeenBeforeIsSkippedAsADuplicate) {
  auto exec = SpaceExecutor::Open(file_, task_, 1);
  ASSERT_TRUE(exec.ok());
  std::set<std::string> seen;
  auto admit = [&](const std::string& sha) { return seen.insert(sha).second; };
  EvalJob a = Job("2"), b = Job("4"), c = Job("6");
  a.admit = b.admit = admit;
  int compile_error_admits = 0;
  c.admit = [&](const std::string&) { return ++compile_error_admits, true; };
  EXPECT_FALSE((*exec)->Submit(std::move(a)).get().skipped);
  EvalJobResult dup = (*exec)->Submit(std::move(b)).get();
  EXPECT_TRUE(dup.skipped);
  EXPECT_EQ(dup.object_sha, "sha-2");
  EXPECT_FALSE((*exec)->Submit(std::move(c)).get().skipped);
  EXPECT_EQ(compile_error_admits, 0) << "as the local executor: no object, no admission check";
}

// Compile-only jobs (the params generator's footprints): the stored ptxas report, nothing
// evaluated, the clock untouched; a config that failed to compile in the sweep did not compile.
TEST_F(SpaceExecutorTest, ACompileOnlyJobGetsTheStoredReportAndRunsNothing) {
  auto exec = SpaceExecutor::Open(file_, task_, 1);
  ASSERT_TRUE(exec.ok());
  EvalJob j = Job("1");
  j.compile_only = true;
  int admits = 0;
  j.admit = [&](const std::string&) { return ++admits, true; };
  EvalJobResult r = (*exec)->Submit(std::move(j)).get();
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_TRUE(r.skipped);
  EXPECT_TRUE(r.compiled);
  ASSERT_EQ(r.resources.size(), 1u);
  EXPECT_EQ(r.resources[0].registers, 96);
  EXPECT_EQ(r.resources[0].shared_bytes, 8192);
  EXPECT_EQ(r.resources[0].spill_stores, 16);
  EXPECT_EQ(admits, 0);
  EXPECT_EQ((*exec)->ElapsedSeconds(), 0);
  EXPECT_EQ((*exec)->BusySeconds(), 0);
  EvalJob broken = Job("6");
  broken.compile_only = true;
  EvalJobResult b = (*exec)->Submit(std::move(broken)).get();
  EXPECT_TRUE(b.status.ok());
  EXPECT_FALSE(b.compiled);
  EXPECT_TRUE(b.resources.empty());
  // The evaluation that follows is charged its compile as before.
  (*exec)->Submit(Job("1")).get();
  EXPECT_GT((*exec)->ElapsedSeconds(), 2.0);
}

TEST_F(SpaceExecutorTest, ThePromotionGateIsServedFromBothConfigsSamples) {
  auto exec = SpaceExecutor::Open(file_, task_, 7);
  ASSERT_TRUE(exec.ok());
  auto gate = [&](const std::string& challenger, const std::string& incumbent) {
    EvalJob j = Job(challenger);
    j.options.baseline_source = fs::path("incumbent.cu");
    j.options.baseline_params = {{"V", incumbent}};
    return (*exec)->Submit(std::move(j)).get();
  };
  EvalJobResult clear = gate("2", "1");
  ASSERT_TRUE(clear.status.ok()) << clear.status.ToString();
  ASSERT_EQ(clear.evaluation.verdict.kind, VerdictKind::kPassed);
  EXPECT_EQ(clear.evaluation.baseline, "incumbent");
  EXPECT_NEAR(clear.evaluation.speedup_geomean, 2.0, 0.05);
  EXPECT_GT(clear.evaluation.speedup_geomean_ci.lo, 1.0) << "2x with 1% noise: promoted";
  ASSERT_EQ(clear.evaluation.timings.size(), 1u);
  EXPECT_EQ(clear.evaluation.timings[0].baseline_ms, (*exec)->space().configs[0].candidate_ms);

  EvalJobResult close = gate("3", "2");
  ASSERT_EQ(close.evaluation.verdict.kind, VerdictKind::kPassed);
  EXPECT_GT(close.evaluation.speedup_geomean, 1.0) << "the ratio of the two stored speedups";
  EXPECT_LE(close.evaluation.speedup_geomean_ci.lo, 1.0) << "1% apart with 5% noise: not promoted";
  EXPECT_GE(close.evaluation.speedup_geomean_ci.hi, 1.0);

  // Deterministic for a seed: the same gate again, and in a fresh executor.
  auto again = SpaceExecutor::Open(file_, task_, 7);
  ASSERT_TRUE(again.ok());
  EvalJob j = Job("3");
  j.options.baseline_source = fs::path("incumbent.cu");
  j.options.baseline_params = {{"V", "2"}};
  EvalJobResult twin = (*again)->Submit(std::move(j)).get();
  EXPECT_DOUBLE_EQ(twin.evaluation.speedup_geomean_ci.lo, close.evaluation.speedup_geomean_ci.lo);
  EXPECT_DOUBLE_EQ(gate("3", "2").evaluation.speedup_geomean_ci.hi, close.evaluation.speedup_geomean_ci.hi);

  EvalJobResult bad_incumbent = gate("2", "5");
  ASSERT_TRUE(bad_incumbent.status.ok());
  EXPECT_FALSE(bad_incumbent.evaluation.verdict.passed()) << "a gate against a failed incumbent cannot pass";
}

TEST_F(SpaceExecutorTest, AConfigMissingFromTheFileIsAnErrorNamingItsParams) {
  Task wide = task_;
  wide.params.push_back({"W", {"a", "b"}});
  auto exec = SpaceExecutor::Open(file_, wide, 1);
  ASSERT_TRUE(exec.ok());
  EvalJob j = Job("2");
  j.task = &wide;
  EvalJobResult r = (*exec)->Submit(std::move(j)).get();
  ASSERT_FALSE(r.status.ok());
  EXPECT_EQ(r.status.code(), StatusCode::kInvalidInput);
  EXPECT_NE(r.status.message().find("V=2 W=a"), std::string::npos) << r.status.message();
  EXPECT_NE(r.status.message().find("space.json"), std::string::npos) << r.status.message();
}

TEST_F(SpaceExecutorTest, ASpaceOfAnotherTaskIsRefusedNamingBoth) {
  Task other = task_;
  other.name = "sgemm";
  auto exec = SpaceExecutor::Open(file_, other, 1);
  ASSERT_FALSE(exec.ok());
  EXPECT_NE(exec.status().message().find("\"tiny\""), std::string::npos) << exec.status().message();
  EXPECT_NE(exec.status().message().find("\"sgemm\""), std::string::npos) << exec.status().message();
}

TEST_F(SpaceExecutorTest, MalformedFilesAreRefusedNamingTheConfig) {
  ASSERT_TRUE(
      WriteFileAtomic(file_,
                      json{{"task", "tiny"}, {"configs", {{{"params", {{"V", "1"}}}, {"status", "exploded"}}}}}.dump())
          .ok());
  auto s = LoadSpace(file_);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("config 0"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("exploded"), std::string::npos) << s.status().message();
  ASSERT_TRUE(WriteFileAtomic(file_, "[1, 2]").ok());
  EXPECT_FALSE(LoadSpace(file_).ok());
}

TEST_F(SpaceExecutorTest, TheCalibrationIsServedWithEveryEvaluation) {
  auto text = ReadFile(file_);
  ASSERT_TRUE(text.ok());
  json j = json::parse(*text);
  j["gpu"] = {{"name", "NVIDIA H200"}, {"driver", "13.0"}};
  j["calibration"] = {
      {"gpu", "NVIDIA H200 / driver 13.0 / 132 SMs"}, {"dram_bytes_per_s", 4.2e12}, {"fp32_flops_per_s", 6.4e13}};
  ASSERT_TRUE(WriteFileAtomic(file_, j.dump()).ok());
  auto exec = SpaceExecutor::Open(file_, task_, 1);
  ASSERT_TRUE(exec.ok()) << exec.status().ToString();
  EvalJobResult r = (*exec)->Submit(Job("2")).get();
  EXPECT_DOUBLE_EQ(r.evaluation.run.calibration.dram_bytes_per_s, 4.2e12);
  EXPECT_DOUBLE_EQ(r.evaluation.run.calibration.fp32_flops_per_s, 6.4e13);
  EXPECT_DOUBLE_EQ((*exec)->Submit(Job("5")).get().evaluation.run.calibration.dram_bytes_per_s, 4.2e12);

  // A calibration given later replaces it; one of another GPU is taken with a warning.
  Calibration other{"NVIDIA A100-SXM4-80GB / driver 12.4", 1.9e12, 1.9e13};
  std::string warning = (*exec)->SetCalibration(other);
  EXPECT_NE(warning.find("A100"), std::string::npos) << warning;
  EXPECT_NE(warning.find("NVIDIA H200"), std::string::npos) << warning;
  EXPECT_DOUBLE_EQ((*exec)->Submit(Job("2")).get().evaluation.run.calibration.dram_bytes_per_s, 1.9e12);
  EXPECT_EQ((*exec)->SetCalibration({"NVIDIA H200 / driver 13.0", 4e12, 6e13}), "");

  // A recorded calibration must be usable.
  j["calibration"] = {{"gpu", "x"}, {"dram_bytes_per_s", 0}};
  ASSERT_TRUE(WriteFileAtomic(file_, j.dump()).ok());
  auto bad = LoadSpace(file_);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("calibration"), std::string::npos) << bad.status().message();
}

TEST_F(SpaceExecutorTest, CalibrationFilesAreReadOrRefusedNamingTheField) {
  fs::path f = dir_->path() / "cal.json";
  ASSERT_TRUE(WriteFileAtomic(f, R"({"gpu": "NVIDIA H200 / driver 13.0 / 132 SMs", "dram_bytes_per_s": 4.23e12,
                                     "fp32_flops_per_s": 6.37e13, "l2_bytes": 62914560})")
                  .ok());
  auto c = ReadCalibrationFile(f);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->valid());
  EXPECT_EQ(c->gpu, "NVIDIA H200 / driver 13.0 / 132 SMs");
  ASSERT_TRUE(WriteFileAtomic(f, R"({"dram_bytes_per_s": 4.23e12, "fp32_flops_per_s": "fast"})").ok());
  auto bad = ReadCalibrationFile(f);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("fp32_flops_per_s"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find(f.string()), std::string::npos) << bad.status().message();
  ASSERT_TRUE(WriteFileAtomic(f, "[]").ok());
  EXPECT_NE(ReadCalibrationFile(f).status().message().find("kpilot calibrate --json"), std::string::npos);
  EXPECT_FALSE(ReadCalibrationFile(dir_->path() / "missing.json").ok());
}

TEST_F(SpaceExecutorTest, TheClockAdvancesByStoredTimes) {
  auto exec = SpaceExecutor::Open(file_, task_, 1);
  ASSERT_TRUE(exec.ok());
  EXPECT_EQ((*exec)->ElapsedSeconds(), 0);
  EvalJobResult r = (*exec)->Submit(Job("1")).get();
  const SpaceConfig& c = (*exec)->space().configs[0];
  double run_s = 0;
  for (double x : c.candidate_ms) run_s += x / 1000;
  for (double x : c.baseline_ms) run_s += x / 1000;
  EXPECT_NEAR((*exec)->BusySeconds(), run_s, 1e-9);
  EXPECT_NEAR((*exec)->ElapsedSeconds(), 2.0 + run_s, 1e-9);
  EXPECT_NEAR(r.eval_end_s - r.eval_start_s, run_s, 1e-9);
  (*exec)->Submit(Job("1")).get();  // compiled already: only the run is charged
  EXPECT_NEAR((*exec)->ElapsedSeconds(), 2.0 + 2 * run_s, 1e-9);
}

// kpilot optimize --space on a small synthetic space: a 6 x 6 grid whose one optimum (A=4, B=1)
// is 3 moves from the start, with noisy paired samples and a few failures.
class SpaceCli : public WithTempDir {
 protected:
  void SetUp() override {
    WithTempDir::SetUp();
    task_ = dir_->path() / "grid";
    fs::create_directories(task_ / "candidates");
    fs::path ref = testing::SourceDir() / "examples" / "host" / "sgemm" / "reference.cpp";
    auto text = ReadFile(ref);
    ASSERT_TRUE(text.ok()) << text.status().ToString();
    ASSERT_TRUE(WriteFileAtomic(task_ / "reference.cpp", *text).ok());
    ASSERT_TRUE(WriteFileAtomic(task_ / "candidates" / "c.cpp", *text).ok());
    ASSERT_TRUE(WriteFileAtomic(task_ / "task.toml", R"(name = "grid"
backend = "host"
reference = "reference.cpp"
[[inputs]]
name = "a"
dtype = "f32"
shape = ["m", "k"]
[[inputs]]
name = "b"
dtype = "f32"
shape = ["k", "n"]
[[outputs]]
name = "c"
dtype = "f32"
shape = ["m", "n"]
[[workloads]]
name = "small"
axes = { m = 8, n = 8, k = 8 }
[params]
A = [1, 2, 3, 4, 5, 6]
B = [6, 5, 4, 3, 2, 1]
)")
                    .ok());
    std::mt19937_64 rng(5);
    auto noise = [&] { return 1 + 0.02 * (static_cast<double>(rng() >> 11) * 0x1.0p-53 - 0.5); };
    json configs = json::array();
    for (int a = 1; a <= 6; ++a)
      for (int b = 6; b >= 1; --b) {
        json c = {{"params", {{"A", std::to_string(a)}, {"B", std::to_string(b)}}},
                  {"object_sha", "sha-" + std::to_string(a) + std::to_string(b)},
                  {"compile_s", 1.0}};
        if ((a == 2 && b == 4) || (a == 6 && b == 6)) {
          c["status"] = "incorrect";
          configs.push_back(c);
          continue;
        }
        double d2 = (a - 4) * (a - 4) + (b - 1) * (b - 1);
        double ms = 10.0 / (1 + 3 * std::exp(-d2 / 3));  // 4x at the optimum
        std::vector<double> cand, base;
        for (int i = 0; i < 25; ++i) {
          cand.push_back(ms * noise());
          base.push_back(10.0 * noise());
        }
        c["status"] = "passed";
        c["candidate_ms"] = cand;
        c["baseline_ms"] = base;
        configs.push_back(c);
      }
    space_ = dir_->path() / "space.json";
    ASSERT_TRUE(WriteFileAtomic(space_, json{{"version", 1},
                                             {"task", "grid"},
                                             {"workload", "small"},
                                             {"baseline", "reference"},
                                             {"configs", configs}}
                                            .dump())
                    .ok());
  }
  ProcessResult Kpilot(std::vector<std::string> args) {
    ProcessSpec spec;
    spec.argv = {(testing::BinaryDir() / "bin" / "kpilot").string()};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.cwd = dir_->path();
    spec.timeout_s = 120;
    auto r = SystemProcessRunner().Run(spec);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : ProcessResult{};
  }
  // bench/spaces/real/NAME_space.json.gz, measured on the H200, unpacked into the temp folder;
  // empty when that fails.
  fs::path RealSpace(const std::string& name) {
    fs::path out = dir_->path() / (name + "_space.json");
    ProcessSpec gunzip;
    gunzip.argv = {"/bin/sh", "-c",
                   "gzip -dc '" + (testing::SourceDir() / "bench/spaces/real" / (name + "_space.json.gz")).string() +
                       "' > '" + out.string() + "'"};
    auto r = SystemProcessRunner().Run(gunzip);
    return r.ok() && r->exit_code == 0 ? out : fs::path();
  }
  fs::path task_, space_;
};

TEST_F(SpaceCli, OptimizeOverASpaceFindsTheOptimumWithinBudget) {
  for (const std::string policy : {"mcts", "greedy"}) {
    ProcessResult r = Kpilot({"optimize", task_.string(), "--space", space_.string(), "--policy", policy, "--seed", "3",
                              "--budget", "20", "--json", "--store", (dir_->path() / ("store-" + policy)).string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    json j = json::parse(r.out);
    EXPECT_EQ(j["best_params"], (json{{"A", "4"}, {"B", "1"}})) << policy << "\n" << r.err;
    EXPECT_LE(j["evaluations"].get<int>(), 20);
    EXPECT_EQ(j["final"]["verdict"]["kind"], "passed");
    EXPECT_NEAR(j["final"]["speedup_geomean"].get<double>(), 4.0, 0.2);
    EXPECT_GE(j["promotion_checks"].get<int>(), 1) << "the gate was exercised";
    EXPECT_NE(r.err.find("\"event\":\"evaluated\""), std::string::npos);
  }
  // Deterministic: the same seed evaluates the same configs in the same order.
  auto order = [&](const std::string& store) {
    ProcessResult r = Kpilot({"optimize", task_.string(), "--space", space_.string(), "--seed", "9", "--budget", "12",
                              "--json", "--store", (dir_->path() / store).string()});
    std::vector<std::string> params;
    std::istringstream in(r.err);
    for (std::string line; std::getline(in, line);) {
      json e = json::parse(line, nullptr, false);
      if (e.is_object() && e.value("event", "") == "evaluated") params.push_back(e.value("params", ""));
    }
    return params;
  };
  auto first = order("s1");
  EXPECT_EQ(first.size(), 12u);
  EXPECT_EQ(first, order("s2"));
}

// When the first value of every param breaks a constraint, the search starts from the first
// combination that meets them (declaration order, last param fastest), not from the source's
// own defaults, which no space holds.
TEST_F(SpaceCli, AStartBreakingAConstraintMovesToTheFirstValidCombination) {
  auto toml = ReadFile(task_ / "task.toml");
  ASSERT_TRUE(toml.ok());
  std::string t = *toml;
  t.insert(t.find("[[inputs]]"), "constraints = [\"A >= 3\"]\n");
  ASSERT_TRUE(WriteFileAtomic(task_ / "task.toml", t).ok());
  ProcessResult r = Kpilot({"optimize", task_.string(), "--space", space_.string(), "--budget", "3", "--json",
                            "--store", (dir_->path() / "store").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream in(r.err);
  for (std::string line; std::getline(in, line);) {
    json e = json::parse(line, nullptr, false);
    if (!e.is_object() || e.value("event", "") != "evaluated") continue;
    EXPECT_EQ(e.value("params", ""), "A=3 B=6") << line;
    EXPECT_NE(e.value("summary", "").find("the first combination of params that meets the constraints"),
              std::string::npos)
        << line;
    return;
  }
  FAIL() << "no evaluated event: " << r.err;
}

// A cuda example replayed from its space measured on the H200: with the GPU's calibration every
// passed node is classified against the roofline (row softmax: memory-bound) as in a live run;
// without one the class stays unknown. The space's stored SASS mixes make the static findings
// fire. --calibration needs --space.
TEST_F(SpaceCli, ACalibrationClassifiesReplayedNodesAgainstTheRoofline) {
  fs::path space = RealSpace("row_softmax");
  ASSERT_FALSE(space.empty());
  fs::path task = testing::SourceDir() / "examples/cuda/row_softmax";
  auto classes = [&](std::vector<std::string> extra, const std::string& store) {
    std::vector<std::string> args = {"optimize",
                                     task.string(),
                                     "--space",
                                     space.string(),
                                     "--workload",
                                     "8192x4096",
                                     "--budget",
                                     "4",
                                     "--seed",
                                     "1",
                                     "--json",
                                     "--store",
                                     (dir_->path() / store).string()};
    args.insert(args.end(), extra.begin(), extra.end());
    ProcessResult r = Kpilot(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::set<std::string> seen;
    std::istringstream in(r.err);
    for (std::string line; std::getline(in, line);) {
      json e = json::parse(line, nullptr, false);
      if (e.is_object() && e.value("event", "") == "evaluated" && e.contains("bottleneck")) {
        seen.insert(e["bottleneck"].get<std::string>());
        if (!e.value("finding", "").empty()) seen.insert("finding " + e["finding"].get<std::string>());
      }
    }
    return seen;
  };
  std::set<std::string> with =
      classes({"--calibration", (testing::SourceDir() / "bench/spaces/real/h200_calibration.json").string()}, "with");
  EXPECT_TRUE(with.count("memory-bound")) << ::testing::PrintToString(with);
  EXPECT_FALSE(with.count("unknown")) << ::testing::PrintToString(with);
  // The space stores each kernel's SASS mix: the static findings a live run gets fire too.
  EXPECT_TRUE(with.count("finding scalar-global-loads")) << ::testing::PrintToString(with);
  std::set<std::string> without = classes({}, "without");
  EXPECT_TRUE(without.count("unknown")) << ::testing::PrintToString(without);
  EXPECT_FALSE(without.count("memory-bound")) << ::testing::PrintToString(without);

  ProcessResult live =
      Kpilot({"optimize", task.string(), "--calibration", "cal.json", "--store", (dir_->path() / "live").string()});
  EXPECT_EQ(live.exit_code, 2) << live.err;
  EXPECT_NE(live.err.find("only goes with --space"), std::string::npos) << live.err;
}

// A search-quality guard on real measurements: the Gaussian kernel sum's space swept on the H200
// (768 configs, 6 within 95% of the best; bench/spaces/real/README.md), which the params
// generator's constants were checked on. With the defaults, mcts reaches 95% of the exhaustive
// best within 5% of the space (38 evaluations) on 99 of 100 seeds (docs/results.md, "Two more
// measured spaces: conv2d and gauss_sum"); seeds 1-3 need 21, 7 and 12. A change to the generator
// or the tree that loses this fails here.
TEST_F(SpaceCli, TheSearchReachesTheBestOfAMeasuredH200SpaceWithinFivePercent) {
  fs::path space = RealSpace("gauss_sum");
  ASSERT_FALSE(space.empty());
  auto text = ReadFile(space);
  ASSERT_TRUE(text.ok());
  double best = 0;
  std::map<std::string, double> speedup;  // "BLOCK=.. ITEMS=.." (the events' rendering) → stored speedup
  const json sweep = json::parse(*text);
  for (const auto& c : sweep["configs"]) {
    if (c["status"] != "passed") continue;
    std::string key;
    for (const auto& [name, value] : c["params"].items())
      key += (key.empty() ? "" : " ") + name + "=" + value.get<std::string>();
    speedup[key] = c["speedup"].get<double>();
    best = std::max(best, speedup[key]);
  }
  ASSERT_EQ(speedup.size(), 768u);
  fs::path task = testing::SourceDir() / "bench/spaces/tuning/gauss_sum";
  for (int seed = 1; seed <= 3; ++seed) {
    ProcessResult r =
        Kpilot({"optimize", task.string(), "--space", space.string(), "--budget", "38", "--seed", std::to_string(seed),
                "--json", "--store", (dir_->path() / std::to_string(seed)).string(), "--calibration",
                (testing::SourceDir() / "bench/spaces/real/h200_calibration.json").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    json j = json::parse(r.out);
    double reached = 0;  // the best stored speedup among the evaluated configs
    std::istringstream in(r.err);
    for (std::string line; std::getline(in, line);) {
      json e = json::parse(line, nullptr, false);
      if (e.is_object() && e.value("event", "") == "evaluated" && speedup.count(e.value("params", "")))
        reached = std::max(reached, speedup[e.value("params", "")]);
    }
    EXPECT_GE(reached, 0.95 * best) << "seed " << seed;
    EXPECT_GE(j["final"]["speedup_geomean"].get<double>(), 0.95 * best) << "seed " << seed << ": the incumbent";
  }
}

// Compile footprints in a replay: the space stores each config's ptxas report, so the params
// generator compiles (here: looks up) its best-ranked configs and some drafts say what their
// footprint was; with --footprints off none does. The run's options record the switch.
TEST_F(SpaceCli, TheParamsGeneratorRanksWithCompileFootprintsUnlessTurnedOff) {
  fs::path space = RealSpace("row_softmax");
  ASSERT_FALSE(space.empty());
  fs::path task = testing::SourceDir() / "examples/cuda/row_softmax";
  auto compiled_first = [&](std::vector<std::string> extra, const std::string& store) {
    std::vector<std::string> args = {"optimize",
                                     task.string(),
                                     "--space",
                                     space.string(),
                                     "--workload",
                                     "8192x4096",
                                     "--budget",
                                     "14",
                                     "--seed",
                                     "2",
                                     "--json",
                                     "--store",
                                     (dir_->path() / store).string()};
    args.insert(args.end(), extra.begin(), extra.end());
    ProcessResult r = Kpilot(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    int n = 0;
    std::istringstream in(r.err);
    for (std::string line; std::getline(in, line);) {
      json e = json::parse(line, nullptr, false);
      if (e.is_object() && e.value("event", "") == "evaluated" &&
          e.value("summary", "").find("compiled first: ") != std::string::npos)
        ++n;
    }
    return n;
  };
  EXPECT_GT(compiled_first({}, "on"), 0);
  EXPECT_EQ(compiled_first({"--footprints", "off"}, "off"), 0);
  ProcessResult shown = Kpilot({"show", "1", "--json", "--store", (dir_->path() / "off").string()});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find("\"footprints\": false"), std::string::npos) << shown.out.substr(0, 2000);
}

TEST_F(SpaceCli, OptimizeRefusesAnotherTasksSpaceAndATimeLimit) {
  fs::path other = dir_->path() / "other.json";
  auto text = ReadFile(space_);
  ASSERT_TRUE(text.ok());
  json j = json::parse(*text);
  j["task"] = "sgemm";
  ASSERT_TRUE(WriteFileAtomic(other, j.dump()).ok());
  ProcessResult r =
      Kpilot({"optimize", task_.string(), "--space", other.string(), "--store", (dir_->path() / "store").string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("\"sgemm\""), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\"grid\""), std::string::npos) << r.err;
  ProcessResult t = Kpilot({"optimize", task_.string(), "--space", space_.string(), "--time", "10m", "--store",
                            (dir_->path() / "store").string()});
  EXPECT_EQ(t.exit_code, 2) << t.err;
  EXPECT_NE(t.err.find("--time"), std::string::npos) << t.err;
}

}  // namespace
}  // namespace kpilot
