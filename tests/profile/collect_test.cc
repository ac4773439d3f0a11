// Counter collection for one evaluated candidate (src/profile/collect.h) with a test double of
// the process runner standing in for kpilot-runner and ncu: what is asked of the runner, how its
// counters reach the kernel's report, and which failures are the machine's (Unavailable) and
// which the candidate's. The real collection is checked on the GPU by cli_gpu_test.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "core/fs.h"
#include "profile/collect.h"
#include "runner/protocol.h"
#include "task/loader.h"
#include "test_paths.h"

namespace kpilot {
namespace {

// Answers every kpilot-runner call with a passing result whose details the test sets (per CUPTI
// replay mode where `details_for_replay` has one), and keeps each call's argv and request.
class ScriptedRunner : public ProcessRunner {
 public:
  nlohmann::json details = nlohmann::json::object();
  std::map<std::string, nlohmann::json> details_for_replay;
  std::vector<std::vector<std::string>> argvs;
  std::vector<nlohmann::json> requests;
  Result<ProcessResult> Run(const ProcessSpec& spec) override {
    argvs.push_back(spec.argv);
    nlohmann::json request;
    for (size_t i = 0; i + 1 < spec.argv.size(); ++i)
      if (spec.argv[i] == "--request") {
        auto text = ReadFile(spec.argv[i + 1]);
        request = text.ok() ? nlohmann::json::parse(*text, nullptr, false) : nlohmann::json();
        requests.push_back(request);
      }
    ProcessResult p;
    p.exit_code = 0;
    RunResult r;
    r.status = "passed";
    auto replay = details_for_replay.find(request.is_object() ? request.value("counters_replay", "") : "");
    r.details = replay != details_for_replay.end() ? replay->second : details;
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
  nlohmann::json launch = {{"name", kMangled},         {"stream_id", 7},
                           {"correlation_id", 1},      {"start_ns", 0},
                           {"end_ns", 1000000},        {"grid", {4096, 1, 1}},
                           {"block", {256, 1, 1}},     {"dynamic_shared_bytes", 0},
                           {"static_shared_bytes", 0}, {"registers_per_thread", 16}};
  e.run.details["launch_trace"] = nlohmann::json::array({{{"call", "workload " + t.workload + ", seed 1"},
                                                          {"trace",
                                                           {{"version", 1},
                                                            {"kernels", {launch}},
                                                            {"memops", nlohmann::json::array()},
                                                            {"syncs", nlohmann::json::array()}}},
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
  runner_.details = {{"counters",
                      {{{"range", "0"},
                        {"metrics",
                         {{"dram__throughput.avg.pct_of_peak_sustained_elapsed", 91.0},
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

// An object may hold kernels the call never launches (transpose's smem_tiled.cu compiles a wide
// and a scalar instantiation and launches one): only the traced one is reported, with the
// counters. With no trace, or none of a workload, every kernel is kept (a static profile; the
// optimizer's per-node static findings of a task with more workloads than traced calls).
TEST_F(Collect, OnlyTheKernelsTheCallLaunchedAreReported) {
  runner_.details = {
      {"counters",
       {{{"range", "0"},
         {"metrics",
          {{"dram__throughput.avg.pct_of_peak_sustained_elapsed", 88.0}, {"gpu__time_duration.sum", 1.0e6}}}}}}};
  Evaluation e = Passed(task_);
  KernelResources other = e.compile.resources.front();
  other.name = "void vadd_scalar(float const*, float const*, float*, int)";
  other.mangled = "_Z11vadd_scalarPKfS0_Pfi";
  e.compile.resources.insert(e.compile.resources.begin(), other);  // first in the object
  auto got = Profile(e);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->reports.size(), 1u);
  EXPECT_EQ(got->reports.front().context.kernel, "vadd(float const*, float const*, float*, int)");
  EXPECT_EQ(got->reports.front().context.Metric("dram__throughput.avg.pct_of_peak_sustained_elapsed").value_or(-1),
            88.0);

  const std::string workload = task_.workloads.back().name;
  std::set<std::string> traced = TracedKernelNames(e.run.details, {workload});
  EXPECT_EQ(traced, (std::set<std::string>{kMangled}));
  // A workload with no traced call (the runner traces six check calls): its kernels are unknown.
  EXPECT_TRUE(TracedKernelNames(e.run.details, {workload, "untraced"}).empty());
  auto statics = StaticProfiles(e.compile);
  ASSERT_EQ(statics.size(), 2u);
  auto kept = LaunchedOnly(statics, traced);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept.front().resources.mangled, kMangled);
  EXPECT_EQ(LaunchedOnly(statics, {}).size(), 2u);             // nothing traced
  EXPECT_EQ(LaunchedOnly(statics, {"_Z5otherv"}).size(), 2u);  // a name the object lacks
  EXPECT_TRUE(TracedKernelNames(nlohmann::json::object(), {}).empty());
  EXPECT_TRUE(TracedKernelNames(nlohmann::json{{"launch_trace", "not an array"}}, {}).empty());

  // The runner names the workload of each traced call (older stored results lack the name); the
  // label is read only when it does not, so a name the label cannot hold whole still counts.
  nlohmann::json named = e.run.details;
  named["launch_trace"][0]["workload"] = "odd, seed name";
  named["launch_trace"][0]["seed"] = 1;
  EXPECT_EQ(TracedKernelNames(named, {"odd, seed name"}), (std::set<std::string>{kMangled}));
  EXPECT_TRUE(TracedKernelNames(named, {workload}).empty()) << "the field wins over the label";
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
  EXPECT_NE(fallback.status().message().find("ncu produced no profile"), std::string::npos)
      << fallback.status().ToString();
  ASSERT_EQ(runner_.argvs.size(), 3u);  // user replay, kernel replay, then ncu
  EXPECT_EQ(runner_.argvs[2].front(), "/opt/ncu");

  CounterProfileOptions ncu_only;
  ncu_only.profiler = "ncu";
  EXPECT_EQ(Profile(Passed(task_), ncu_only).status().code(), StatusCode::kUnavailable) << "no ncu on PATH";
}

TEST_F(Collect, WhenUserReplayFailsInItsPassesKernelReplayIsTriedBeforeNcu) {
  // What the runner reported on the H200 for sum_reduction's cuda_graph.cu (a CUDA graph launch).
  const std::string stop = "cuptiRangeProfilerStop: CUPTI_ERROR_UNKNOWN (pass 1 of 14 scheduled)";
  runner_.details_for_replay["user"] = {{"counters_error", stop}};
  runner_.details_for_replay["kernel"] = {
      {"counters", {{{"range", "0"}, {"metrics", {{"dram__throughput.avg.pct_of_peak_sustained_elapsed", 80.0}}}}}},
      {"counters_info", {{"chip", "GH100"}, {"replay", "kernel"}}}};
  CounterProfileOptions o;
  o.ncu_path = "/opt/ncu";
  auto got = Profile(Passed(task_), o);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->profiler, "cupti");
  ASSERT_EQ(runner_.requests.size(), 2u) << "ncu was not needed";
  EXPECT_EQ(runner_.requests[0].value("counters_replay", ""), "user");
  EXPECT_EQ(runner_.requests[1].value("counters_replay", ""), "kernel");
  EXPECT_NE(got->fallback_note.find("kernel replay used"), std::string::npos) << got->fallback_note;
  EXPECT_NE(got->fallback_note.find(stop), std::string::npos) << got->fallback_note;
  EXPECT_EQ(got->reports.front().context.Metric("dram__throughput.avg.pct_of_peak_sustained_elapsed").value_or(-1),
            80.0);

  // Kernel replay failing too: ncu next, and its note names both failures.
  runner_.requests.clear();
  runner_.argvs.clear();
  runner_.details_for_replay["kernel"] = {{"counters_error", "cuptiRangeProfilerDecodeData: CUPTI_ERROR_UNKNOWN"}};
  auto both = Profile(Passed(task_), o);
  EXPECT_FALSE(both.ok());  // the double prints no CSV for ncu
  ASSERT_EQ(runner_.argvs.size(), 3u);
  EXPECT_EQ(runner_.argvs[2].front(), "/opt/ncu");

  // A set-up failure is the machine's: no second CUPTI try.
  runner_.argvs.clear();
  runner_.details_for_replay["user"] = {{"counters_error", "no profiler"}, {"counters_setup_failed", true}};
  (void)Profile(Passed(task_), o);
  ASSERT_EQ(runner_.argvs.size(), 2u);
  EXPECT_EQ(runner_.argvs[1].front(), "/opt/ncu");

  // Asked for kernel replay and failing: nothing else to try in CUPTI.
  runner_.argvs.clear();
  runner_.details_for_replay["kernel"] = {{"counters_error", "cuptiRangeProfilerStop: CUPTI_ERROR_UNKNOWN"}};
  CounterProfileOptions kernel_only;
  kernel_only.replay = "kernel";
  EXPECT_EQ(Profile(Passed(task_), kernel_only).status().code(), StatusCode::kInternal);
  EXPECT_EQ(runner_.argvs.size(), 1u);
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

TEST(LaunchGapShare, TheSmallerOfTheTracedSpansAndTheTimedCallsShare) {
  EXPECT_DOUBLE_EQ(LaunchGapShare(60000, 750000, 0.08), 0.25);  // tracing gaps: the timed call's share
  EXPECT_DOUBLE_EQ(LaunchGapShare(740000, 740000, 1.72), 0.0);  // one kernel, slower when timed: no gap
  EXPECT_DOUBLE_EQ(LaunchGapShare(60000, 80000, 0), 0.25);      // no timed call: the traced span's
  EXPECT_DOUBLE_EQ(LaunchGapShare(90000, 95000, 0.08), 0.0);    // kernels longer than the timed call
  EXPECT_DOUBLE_EQ(LaunchGapShare(0, 0, 0.08), 0.0);            // nothing traced
}

// The H200 trace of sum_reduction's two-kernel candidate (tests/fixtures/traces/README.md): 92% of
// the traced span has no kernel running, but the timed call is 94% of the DRAM roofline. Stage 1
// called it launch-bound before the gaps were measured against the timed call.
TEST(StageOne, TracingGapsDoNotMakeAFastTwoKernelCallLaunchBound) {
  auto task = LoadTask(testing::SourceDir() / "examples" / "cuda" / "sum_reduction");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  const Workload* w = nullptr;
  for (const auto& x : task->workloads)
    if (x.name == "64M") w = &x;
  ASSERT_NE(w, nullptr);
  auto text = ReadFile(testing::SourceDir() / "tests" / "fixtures" / "traces" / "h200_sum_reduction_two_kernels.json");
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  Evaluation e;
  e.verdict.kind = VerdictKind::kPassed;
  WorkloadTiming t;
  t.workload = "64M";
  t.candidate.median = 0.06544;  // the same evaluation's timed median
  e.timings.push_back(t);
  e.run.calibration.dram_bytes_per_s = 4.239e12;  // the H200's measured ceilings that day
  e.run.calibration.fp32_flops_per_s = 63.49e12;
  e.run.details["launch_trace"] =
      nlohmann::json::array({{{"trace", nlohmann::json::parse(*text)}, {"kernels_total", 2}}});

  ProfileContext shared;
  LaunchTrace trace;
  RooflineInput in = StageOneInput(*w, e, &shared, &trace);
  ASSERT_EQ(trace.kernels.size(), 2u);
  EXPECT_EQ(shared.kernels_per_call, 2);
  TraceSummary s = SummarizeTrace(trace, 13);
  EXPECT_GT(1.0 - s.kernel_busy_ns / s.span_ns, 0.9);  // what the span alone says
  EXPECT_NEAR(shared.launch_gap_share, 1.0 - (60159.0 + 1536.0) / 65440.0, 1e-9);
  ASSERT_TRUE(in.launch_overhead_share.has_value());
  EXPECT_LT(*in.launch_overhead_share, 0.1);
  EXPECT_EQ(ClassifyRoofline(in).result, Bottleneck::kMemory);

  e.timings.clear();  // no timed call: the span's share is all there is
  in = StageOneInput(*w, e, &shared, &trace);
  EXPECT_GT(shared.launch_gap_share, 0.9);
}

// A search node's own evaluation checks every workload, so its traces are of several: stage 1
// takes the profiled workload's, not whichever call was traced last.
TEST(StageOne, TakesTheTraceOfTheProfiledWorkload) {
  auto task = LoadTask(testing::SourceDir() / "examples" / "cuda" / "sum_reduction");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  const Workload* w = task->FindWorkload("64M");
  ASSERT_NE(w, nullptr);
  auto text = ReadFile(testing::SourceDir() / "tests" / "fixtures" / "traces" / "h200_sum_reduction_two_kernels.json");
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  Evaluation e;
  e.verdict.kind = VerdictKind::kPassed;
  const auto trace_json = nlohmann::json::parse(*text);
  e.run.details["launch_trace"] =
      nlohmann::json::array({{{"workload", "64M"}, {"seed", 1}, {"trace", trace_json}, {"kernels_total", 2}},
                             {{"workload", "other"}, {"seed", 1}, {"trace", trace_json}, {"kernels_total", 50}}});
  ProfileContext shared;
  LaunchTrace trace;
  StageOneInput(*w, e, &shared, &trace);
  EXPECT_EQ(shared.kernels_per_call, 2) << "the 64M call's, not the last traced call's";
  Workload untraced = *w;
  untraced.name = "1K";
  StageOneInput(untraced, e, &shared, &trace);
  EXPECT_EQ(shared.kernels_per_call, 50) << "no call on the workload: the last traced call";
}

// What a counter profile needs of an evaluation made already, so that it need not evaluate the
// candidate again.
TEST(CounterProfileCanTake, NeedsAPassWithObjectSassTimingAndTheWorkloadsTrace) {
  Workload w;
  w.name = "64M";
  Evaluation e;
  e.verdict.kind = VerdictKind::kPassed;
  e.compile.ok = true;
  e.compile.object = "/cache/ab/candidate.so";
  e.compile.sass = "Function : Kernel";
  e.compile.sass_status = "ok";
  WorkloadTiming t;
  t.workload = "64M";
  t.candidate.median = 0.065;
  e.timings = {t};
  EXPECT_TRUE(CounterProfileCanTake(e, w)) << "nothing traced at all: the re-evaluation would trace nothing either";
  e.run.details["launch_trace"] = nlohmann::json::array({{{"workload", "1K"}, {"trace", nlohmann::json::object()}}});
  EXPECT_FALSE(CounterProfileCanTake(e, w)) << "traced, but not on 64M (past the runner's six calls)";
  e.run.details["launch_trace"].push_back({{"workload", "64M"}, {"trace", nlohmann::json::object()}});
  EXPECT_TRUE(CounterProfileCanTake(e, w));

  Evaluation failed = e;
  failed.verdict.kind = VerdictKind::kIncorrect;
  EXPECT_FALSE(CounterProfileCanTake(failed, w));
  Evaluation no_object = e;
  no_object.compile.object.clear();
  EXPECT_FALSE(CounterProfileCanTake(no_object, w));
  Evaluation sass_later = e;
  sass_later.compile.sass.clear();
  sass_later.compile.sass_status = kSassLater;
  EXPECT_FALSE(CounterProfileCanTake(sass_later, w)) << "its SASS never came";
  Evaluation no_sass_tool = sass_later;
  no_sass_tool.compile.sass_status = "cuobjdump not found";
  EXPECT_TRUE(CounterProfileCanTake(no_sass_tool, w)) << "a fresh compile would have none either";
  Evaluation other_timing = e;
  other_timing.timings.front().workload = "1K";
  EXPECT_FALSE(CounterProfileCanTake(other_timing, w));
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
