#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "harness/harness.h"

namespace kpilot {
namespace {

TEST(Verdict, MapsRunnerStatuses) {
  for (auto [status, kind] :
       std::vector<std::pair<std::string, VerdictKind>>{{"passed", VerdictKind::kPassed},
                                                        {"incorrect", VerdictKind::kIncorrect},
                                                        {"timeout", VerdictKind::kTimeout},
                                                        {"suspicious", VerdictKind::kSuspicious},
                                                        {"runtime_error", VerdictKind::kRuntimeError}}) {
    RunResult r;
    r.status = status;
    r.message = "m";
    EXPECT_EQ(VerdictFromRun(r).kind, kind) << status;
  }
}

TEST(Verdict, IncorrectCarriesTheFirstBadElement) {
  RunResult r;
  r.status = "incorrect";
  r.message = "output \"y\" differs";
  CheckRecord good;
  good.output = "z";
  CheckRecord bad;
  bad.workload = "1M";
  bad.seed = 2;
  bad.output = "y";
  bad.ok = false;
  bad.mismatches = 5;
  bad.numel = 10;
  bad.first_bad_index = 7;
  bad.first_bad_value = 1.5;
  bad.first_bad_expected = 2.5;
  bad.max_abs_error = 1;
  r.checks = {good, bad};
  Verdict v = VerdictFromRun(r);
  EXPECT_EQ(v.kind, VerdictKind::kIncorrect);
  EXPECT_EQ(v.evidence["output"], "y");
  EXPECT_EQ(v.evidence["first_bad_index"], 7);
  EXPECT_EQ(v.evidence["seed"], 2);
  EXPECT_NE(v.summary.find("first bad element 7"), std::string::npos);
}

TEST(Verdict, TimingsAreSummarizedPerWorkloadAndGeomean) {
  RunResult r;
  r.status = "passed";
  std::vector<double> base(40), cand(40);
  for (int i = 0; i < 40; ++i) {
    base[i] = 4.0 + 0.01 * (i % 3);
    cand[i] = 1.0 + 0.0025 * (i % 3);
  }
  r.timings = {{"a", cand, base, "m"}, {"b", base, base, "m"}};
  Evaluation e;
  SummarizeTimings(r, &e);
  ASSERT_EQ(e.timings.size(), 2u);
  EXPECT_NEAR(e.timings[0].speedup.ratio, 4.0, 1e-9);
  EXPECT_NEAR(e.timings[1].speedup.ratio, 1.0, 1e-9);
  EXPECT_NEAR(e.speedup_geomean, 2.0, 1e-9);
  EXPECT_EQ(e.timings[0].candidate_ms.size(), 40u);  // every sample is kept
  nlohmann::json j = ToJson(e);
  EXPECT_EQ(j["timings"][0]["candidate_samples_ms"].size(), 40u);
}

}  // namespace
}  // namespace kpilot

#include "task/loader.h"
#include "test_paths.h"

namespace kpilot {
namespace {

TEST(BuildRunRequest, CarriesTheRooflineAndTheGuards) {
  auto task = LoadTask(testing::SourceDir() / "tests" / "adversarial" / "tasks" / "vadd");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  EvalOptions opt;
  auto req = BuildRunRequest(*task, opt);
  ASSERT_TRUE(req.ok());
  ASSERT_FALSE(req->workloads.empty());
  for (const auto& w : req->workloads) {
    if (!w.timed) continue;  // the drawn workload: checked, never timed against a floor
    EXPECT_GT(w.min_bytes, 0) << w.name;
    EXPECT_GT(w.flops, 0) << w.name;
  }
  EXPECT_FALSE(req->libraries);
  ASSERT_TRUE(req->compute_precision.has_value());
  EXPECT_EQ(*req->compute_precision, DType::kF32);
  auto back = RunRequestFromJson(ToJson(*req));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->workloads[0].min_bytes, req->workloads[0].min_bytes);
}

// Tensor cores on 16-bit operands in an f32 task are lowered precision, found in the SASS before
// anything runs; TF32 (which an error-compensated f32 GEMM may use) and f16 tasks are left alone.
TEST(NarrowTensorCoreVerdict, FlagsSixteenBitTensorCoresInAnF32Task) {
  auto task = LoadTask(testing::SourceDir() / "tests" / "adversarial" / "tasks" / "sgemm");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  auto sass = ReadFile(testing::SourceDir() / "tests" / "fixtures" / "toolchain" / "sass_tensor_cores_sm90a.txt");
  ASSERT_TRUE(sass.ok());
  CompileOutput compiled;
  compiled.ok = true;
  compiled.sass = *sass;
  auto v = NarrowTensorCoreVerdict(*task, compiled);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->kind, VerdictKind::kIncorrect);
  EXPECT_NE(v->summary.find("lowered precision"), std::string::npos) << v->summary;
  EXPECT_NE(v->summary.find("IMMA.16816.S8.S8"), std::string::npos) << v->summary;
  EXPECT_EQ(v->evidence["narrow_tensor_core_ops"].size(), 2u);

  // Only the TF32 and f64 functions: nothing narrow.
  std::string kept;
  std::istringstream lines(*sass);
  bool keep = true;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("Function : ") != std::string::npos)
      keep = line.find("tf32_tile") != std::string::npos || line.find("f64_tile") != std::string::npos;
    if (keep) kept += line + "\n";
  }
  compiled.sass = kept;
  EXPECT_FALSE(NarrowTensorCoreVerdict(*task, compiled).has_value());

  compiled.sass = *sass;
  task->compute_precision = DType::kF16;  // a task computing in f16 may use them
  EXPECT_FALSE(NarrowTensorCoreVerdict(*task, compiled).has_value());
  compiled.sass.clear();  // no SASS to read: nothing is claimed
  task->compute_precision = DType::kF32;
  EXPECT_FALSE(NarrowTensorCoreVerdict(*task, compiled).has_value());
}

// A task with [draw] gets one more workload per evaluation, its axes drawn in range, checked and
// not timed; --workloads does not remove it, EvalOptions::draw = false does.
TEST(BuildRunRequest, AddsTheDrawnWorkloadUntimed) {
  auto task = LoadTask(testing::SourceDir() / "tests" / "adversarial" / "tasks" / "vadd");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  ASSERT_EQ(task->draw_axes.count("n"), 1u);
  const auto [low, high] = task->draw_axes.at("n");
  EvalOptions opt;
  std::set<int64_t> sizes;
  for (int i = 0; i < 8; ++i) {
    auto req = BuildRunRequest(*task, opt);
    ASSERT_TRUE(req.ok());
    ASSERT_EQ(req->workloads.size(), task->workloads.size() + 1);
    const RunWorkload& drawn = req->workloads.back();
    EXPECT_FALSE(drawn.timed);
    EXPECT_EQ(drawn.name.rfind("drawn n=", 0), 0u) << drawn.name;
    const int64_t n = drawn.outputs[0].shape[0];
    EXPECT_GE(n, low);
    EXPECT_LE(n, high);
    EXPECT_EQ(drawn.inputs[0].shape[0], n);
    sizes.insert(n);
    for (size_t w = 0; w + 1 < req->workloads.size(); ++w) EXPECT_TRUE(req->workloads[w].timed);
    auto back = RunRequestFromJson(ToJson(*req));
    ASSERT_TRUE(back.ok());
    EXPECT_FALSE(back->workloads.back().timed);
  }
  EXPECT_GT(sizes.size(), 1u) << "the size is drawn afresh for each evaluation";
  opt.workloads = {task->workloads.front().name};
  EXPECT_EQ(BuildRunRequest(*task, opt)->workloads.size(), 2u);
  opt.draw = false;
  EXPECT_EQ(BuildRunRequest(*task, opt)->workloads.size(), 1u);
}

// Answers precomputed for seeds known in advance fit no evaluation: each draws its own.
TEST(BuildRunRequest, EachEvaluationDrawsSeedsNoOneKnewInAdvance) {
  auto task = LoadTask(testing::SourceDir() / "tests" / "adversarial" / "tasks" / "vadd");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  EvalOptions opt;
  auto a = BuildRunRequest(*task, opt);
  auto b = BuildRunRequest(*task, opt);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->seeds.size(), static_cast<size_t>(kSeedsPerEvaluation));
  EXPECT_NE(a->seeds, b->seeds);
  EXPECT_NE(a->seeds, (std::vector<uint64_t>{1, 2, 3}));
  for (uint64_t s : a->seeds) EXPECT_LT(s, uint64_t{1} << 48);
  opt.seeds = {4, 5};
  auto given = BuildRunRequest(*task, opt);
  ASSERT_TRUE(given.ok());
  EXPECT_EQ(given->seeds, (std::vector<uint64_t>{4, 5}));  // seeds asked for are kept (reproducing a run)
}

}  // namespace
}  // namespace kpilot
