// Counter collection for one evaluated candidate (src/profile/collect.h) with a test double of
// the process runner standing in for kpilot-runner and ncu: what is asked of the runner, how its
// counters reach the kernel's report, and which failures are the machine's (Unavailable) and
// which the candidate's. The real collection is checked on the GPU by cli_gpu_test.
#include <gtest/gtest.h>

#include "core/fs.h"
#include "profile/collect.h"
#include "runner/protocol.h"
#include "task/loader.h"
#include "test_paths.h"

namespace kpilot {
namespace {

// Answers every kpilot-runner call with a passing result whose details the test sets, and keeps
// each call's argv and request.
class ScriptedRunner : public ProcessRunner {
 public:
  nlohmann::json details = nlohmann::json::object();
  std::vector<std::vector<std::string>> argvs;
  std::vector<nlohmann::json> requests;
  Result<ProcessResult> Run(const ProcessSpec& spec) override {
    argvs.push_back(spec.argv);
    for (size_t i = 0; i + 1 < spec.argv.size(); ++i)
      if (spec.argv[i] == "--request") {
        auto text = ReadFile(spec.argv[i + 1]);
        requests.push_back(text.ok() ? nlohmann::json::parse(*text, nullptr, false) : nlohmann::json());
      }
    ProcessResult p;
    p.exit_code = 0;
    RunResult r;
    r.status = "passed";
    r.details = details;
    p.out = ToJson(r).dump();
    return p;
  }
};

const char* kMangled = "_Z4vaddPKfS0_Pfi";

// A passing evaluation of one kernel, with a launch trace of one call.
Evaluation Passed(const Task& task) {
  Evaluation e;
  e.verdict.kind = VerdictKind::kPassed;
  e.compile.ok = true;
  e.compile.object = "/nonexistent/candidate.so";
  KernelResources k;
  k.name = "vadd(float const*, float const*, float*, int)";
  k.mangled = kMangled;
  k.arch = "sm_90a";
  k.registers = 16;
  e.compile.resources.push_back(k);
  WorkloadTiming t;
  t.workload = task.workloads.back().name;
  t.candidate.median = 1.0;
  e.timings.push_back(t);
  e.run.calibration.dram_bytes_per_s = 4e12;
  e.run.calibration.fp32_flops_per_s = 6e13;
  nlohmann::json launch = {{"name", kMangled},         {"stream_id", 7},      {"correlation_id", 1},
                           {"start_ns", 0},            {"end_ns", 1000000},   {"grid", {4096, 1, 1}},
                           {"block", {256, 1, 1}},     {"dynamic_shared_bytes", 0}, {"static_shared_bytes", 0},
                           {"registers_per_thread", 16}};
  e.run.details["launch_trace"] = nlohmann::json::array(
      {{{"trace", {{"version", 1}, {"kernels", {launch}}, {"memops", nlohmann::json::array()}, {"syncs", nlohmann::json::array()}}},
        {"kernels_total", 1}}});
  e.run.details["gpu"] = {{"sm_count", 132}};
  return e;
}

class Collect : public ::testing::Test {
 protected:
  void SetUp() override {
    auto t = LoadTask(testing::SourceDir() / "examples" / "cuda" / "vector_add");
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    task_ = *t;
    options_.compile.cuda_arch = "sm_90a";
  }
  Result<CounterProfile> Profile(const Evaluation& e, const CounterProfileOptions& o = {}) {
    return ProfileWithCounters(runner_, "/bin/kpilot-runner", task_, task_.workloads.back(), options_, e, tools_, o);
  }
  Task task_;
  EvalOptions options_;
  ScriptedRunner runner_;
  const std::vector<std::unique_ptr<Tool>> tools_ = BuiltinTools();
};

TEST_F(Collect, TheRunnerIsAskedForTheClasssCountersAndTheyReachTheKernel) {
  runner_.details = {{"counters", {{{"range", "0"},
                                    {"metrics", {{"dram__throughput.avg.pct_of_peak_sustained_elapsed", 91.0},
                                                 {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 12.0},
                                                 {"gpu__time_duration.sum", 1.0e6}}}}}},
                     {"counters_info", {{"chip", "GH100"}}}};
  auto got = Profile(Passed(task_));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->profiler, "cupti");
  EXPECT_EQ(got->version, "GH100");
  ASSERT_EQ(runner_.requests.size(), 1u);
  const auto& req = runner_.requests.front();
  EXPECT_TRUE(req.value("profile_only", false)) << req.dump(1);
  EXPECT_EQ(req.value("candidate_object", ""), "/nonexistent/candidate.so");
  std::vector<std::string> asked = req.value("counters", std::vector<std::string>{});
  EXPECT_NE(std::find(asked.begin(), asked.end(), "dram__throughput.avg.pct_of_peak_sustained_elapsed"), asked.end());
  for (const auto& m : asked) EXPECT_NE(m.rfind("launch__", 0), 0u) << m << ": read from the launch trace instead";
  ASSERT_EQ(got->reports.size(), 1u);
  const KernelReport& k = got->reports.front();
  EXPECT_EQ(k.context.Metric("dram__throughput.avg.pct_of_peak_sustained_elapsed").value_or(-1), 91.0);
  EXPECT_EQ(k.context.Metric("launch__block_size").value_or(-1), 256.0);  // from the trace
  EXPECT_EQ(k.context.sm_count, 132);                                     // from the runner's report
  EXPECT_EQ(k.roofline.result, Bottleneck::kMemory);
}

TEST_F(Collect, OnlyASetupFailureIsTheMachinesAndNcuIsTriedWhenThereIsOne) {
  runner_.details = {{"counters_error", "CUPTI's profiler is not available"}, {"counters_setup_failed", true}};
  auto setup = Profile(Passed(task_));
  EXPECT_EQ(setup.status().code(), StatusCode::kUnavailable) << setup.status().ToString();

  runner_.details = {{"counters_error", "CUPTI wanted more than 8 passes"}};
  auto passes = Profile(Passed(task_));
  EXPECT_EQ(passes.status().code(), StatusCode::kInternal) << passes.status().ToString();

  runner_.argvs.clear();
  CounterProfileOptions with_ncu;
  with_ncu.ncu_path = "/opt/ncu";
  auto fallback = Profile(Passed(task_), with_ncu);  // the double prints no CSV for ncu
  EXPECT_FALSE(fallback.ok());
  EXPECT_NE(fallback.status().message().find("ncu produced no profile"), std::string::npos) << fallback.status().ToString();
  ASSERT_EQ(runner_.argvs.size(), 2u);
  EXPECT_EQ(runner_.argvs[1].front(), "/opt/ncu");

  CounterProfileOptions ncu_only;
  ncu_only.profiler = "ncu";
  EXPECT_EQ(Profile(Passed(task_), ncu_only).status().code(), StatusCode::kUnavailable) << "no ncu on PATH";
}

TEST_F(Collect, OnlyAPassingCompiledCandidateIsProfiled) {
  Evaluation failed = Passed(task_);
  failed.verdict.kind = VerdictKind::kIncorrect;
  EXPECT_EQ(Profile(failed).status().code(), StatusCode::kInvalidInput);
  Evaluation python = Passed(task_);
  python.compile.object.clear();
  EXPECT_EQ(Profile(python).status().code(), StatusCode::kInvalidInput);
  EXPECT_TRUE(runner_.argvs.empty());
}

TEST(FindingJson, RoundTripsEveryField) {
  Finding f;
  f.id = "barrier-stall";
  f.tool = "barrier-stall";
  f.severity = 0.7;
  f.evidence = {{"share", 0.48}};
  f.guidance = "smaller blocks wait on fewer warps";
  f.skills = {"thread-coarsening"};
  Finding back = FindingFromJson(ToJson(f));
  EXPECT_EQ(back.id, f.id);
  EXPECT_EQ(back.tool, f.tool);
  EXPECT_EQ(back.severity, f.severity);
  EXPECT_EQ(back.evidence, f.evidence);
  EXPECT_EQ(back.guidance, f.guidance);
  EXPECT_EQ(back.skills, f.skills);
  EXPECT_TRUE(FindingFromJson(nlohmann::json::array()).id.empty());
}

}  // namespace
}  // namespace kpilot
