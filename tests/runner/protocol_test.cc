#include <gtest/gtest.h>

#include <cmath>

#include "runner/protocol.h"

namespace kpilot {
namespace {

TEST(Protocol, RequestRoundTrip) {
  RunRequest r;
  r.backend = Backend::kHost;
  r.reference_object = "/r.so";
  r.candidate_object = "/c.so";
  r.baseline_object = "/b.so";
  r.scalars = {{"alpha", DType::kF32, 0, 0}};
  RunWorkload w;
  w.name = "w1";
  w.inputs.push_back({"x", DType::kBF16, {2, 3}, {InitKind::kUniform, -1, 1}, {}});
  w.outputs.push_back({"y", DType::kF32, {2}, {}, {1e-3, 1e-4, 0.99}});
  w.scalar_values = {2.5};
  r.workloads = {w};
  r.seeds = {4, 5};
  r.timing.max_reps = 77;
  r.profile_only = true;
  r.counters = {"dram__throughput.avg.pct_of_peak_sustained_elapsed", "gpu__time_duration.sum"};
  r.counters_max_ranges = 9;
  r.counters_replay = "kernel";
  auto back = RunRequestFromJson(ToJson(r));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->candidate_object, "/c.so");
  ASSERT_EQ(back->workloads.size(), 1u);
  EXPECT_EQ(back->workloads[0].inputs[0].dtype, DType::kBF16);
  EXPECT_EQ(back->workloads[0].inputs[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(back->workloads[0].inputs[0].init.kind, InitKind::kUniform);
  EXPECT_DOUBLE_EQ(back->workloads[0].outputs[0].tolerance.matched_ratio, 0.99);
  EXPECT_EQ(back->seeds, (std::vector<uint64_t>{4, 5}));
  EXPECT_EQ(back->timing.max_reps, 77);
  EXPECT_TRUE(back->profile_only);
  EXPECT_EQ(back->counters, r.counters);
  EXPECT_EQ(back->counters_max_ranges, 9);
  EXPECT_EQ(back->counters_replay, "kernel");
}

TEST(Protocol, RequestRejectsOtherVersionsAndBadFields) {
  RunRequest r;
  nlohmann::json j = ToJson(r);
  j["version"] = 99;
  auto bad = RunRequestFromJson(j);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("99"), std::string::npos);
  j = ToJson(r);
  j.erase("seeds");
  EXPECT_FALSE(RunRequestFromJson(j).ok());
  j = ToJson(r);
  j["counters_replay"] = "application";
  bad = RunRequestFromJson(j);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("counters_replay"), std::string::npos);
}

TEST(Protocol, ResultRoundTripKeepsInfinitiesAndSamples) {
  RunResult r;
  r.status = "incorrect";
  r.message = "m";
  CheckRecord c;
  c.workload = "w";
  c.output = "y";
  c.max_abs_error = INFINITY;
  c.first_bad_value = NAN;
  c.ok = false;
  r.checks = {c};
  r.timings = {{"w", {1.0, 2.0}, {3.0, 4.0}, "m"}};
  r.sandbox.pid_namespace = true;
  r.leftover_processes_killed = 2;
  auto back = RunResultFromJson(nlohmann::json::parse(ToJson(r).dump()));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(std::isinf(back->checks[0].max_abs_error));
  EXPECT_TRUE(std::isnan(back->checks[0].first_bad_value));
  EXPECT_EQ(back->timings[0].baseline_ms, (std::vector<double>{3.0, 4.0}));
  EXPECT_TRUE(back->sandbox.pid_namespace);
  EXPECT_EQ(back->leftover_processes_killed, 2);
}

// The details as the cuda runner, a served runner and the torch worker write them
// (worker_cuda.cc, serve.cc, python/kpilot_torch/worker.py), read through the typed view.
TEST(RunReport, ReadsWhatTheRunnersWrite) {
  const auto cuda = nlohmann::json::parse(R"({
    "gpu": {"name": "NVIDIA H200", "sm_count": 132, "cc": "9.0", "driver": "13.0"},
    "served": {"request": 3, "pid": 4242, "next": "retire", "why": "the candidate kept 600 MiB of GPU memory allocated"},
    "timeline_s": {"gpu_lock": 0.001, "context": 0.12, "objects": 0.15, "checks": 0.31, "timing": 0.74}})");
  const RunReport r = ReadRunReport(cuda);
  EXPECT_EQ(r.gpu_name, "NVIDIA H200");
  EXPECT_EQ(r.gpu_sm_count, 132);
  ASSERT_TRUE(r.served.has_value());
  EXPECT_EQ(r.served->request, 3);
  EXPECT_EQ(r.served->pid, 4242);
  EXPECT_FALSE(r.served->ready);
  EXPECT_NE(r.served->why.find("600 MiB"), std::string::npos);
  EXPECT_NEAR(r.ChecksAndTimingSeconds(), 0.74 - 0.15, 1e-12);

  const RunReport torch = ReadRunReport(nlohmann::json::parse(
      R"({"gpu": "NVIDIA H100 80GB HBM3", "torch": "2.11.0+cu130", "served": {"request": 1, "pid": 7, "next": "ready", "why": ""},
          "python_start_s": 0.04, "import_torch_s": 1.9, "candidate_setup_s": 0.5, "reference_setup_s": 0.25,
          "baseline_setup_s": 0.25, "compile_s": 12.5, "gpu_lock_wait_s": 4.5, "check_s": 2.5, "timing_s": 3.0,
          "out_of_memory": true,
          "reference_flaws": [{"flaw": "random", "evidence": "called again on the same inputs with another random seed, output out differs"}]})"));
  EXPECT_EQ(torch.gpu_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(torch.gpu_sm_count, 0);
  EXPECT_EQ(torch.torch_version, "2.11.0+cu130");
  EXPECT_TRUE(torch.served && torch.served->ready);
  EXPECT_EQ(torch.ChecksAndTimingSeconds(), 0);  // no timeline
  EXPECT_DOUBLE_EQ(torch.python_start_s, 0.04);
  EXPECT_DOUBLE_EQ(torch.import_torch_s, 1.9);
  EXPECT_DOUBLE_EQ(torch.setup_s, 1.0);
  EXPECT_DOUBLE_EQ(torch.compile_s, 12.5);
  EXPECT_DOUBLE_EQ(torch.lock_wait_s, 4.5);
  EXPECT_DOUBLE_EQ(torch.check_s, 2.5);
  EXPECT_DOUBLE_EQ(torch.timing_s, 3.0);
  ASSERT_EQ(torch.reference_flaws.size(), 1u);
  EXPECT_EQ(torch.reference_flaws[0].flaw, "random");
  EXPECT_NE(torch.reference_flaws[0].evidence.find("another random seed"), std::string::npos);
  EXPECT_TRUE(torch.out_of_memory);
  EXPECT_TRUE(r.reference_flaws.empty());
  EXPECT_FALSE(r.out_of_memory);
}

TEST(RunReport, MissingOrMistypedKeysLeaveTheDefaults) {
  const RunReport r = ReadRunReport(nlohmann::json::parse(
      R"({"gpu": 7, "torch": null, "served": "yes", "timeline_s": {"objects": "soon", "checks": 0.5}})"));
  EXPECT_EQ(r.gpu_name, "");
  EXPECT_EQ(r.torch_version, "");
  EXPECT_FALSE(r.served.has_value());
  EXPECT_FALSE(ReadRunReport(nlohmann::json::parse(R"({"out_of_memory": "yes"})")).out_of_memory);
  EXPECT_EQ(r.timeline_s.count("objects"), 0u);
  EXPECT_EQ(r.ChecksAndTimingSeconds(), 0);
  EXPECT_FALSE(ReadRunReport(nlohmann::json::array()).served.has_value());
  // Checks only (a run that was not timed): from the objects' load to the checks' end.
  EXPECT_NEAR(ReadRunReport(nlohmann::json::parse(R"({"timeline_s": {"objects": 0.2, "checks": 0.5}})"))
                  .ChecksAndTimingSeconds(),
              0.3, 1e-12);
}

}  // namespace
}  // namespace kpilot
