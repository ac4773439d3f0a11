// Stage-1 classification on constructed cases with H200-like ceilings, and the small shared
// pieces of profile.h (bottleneck names, findings as JSON).
#include <gtest/gtest.h>

#include "profile/roofline.h"

namespace kpilot {
namespace {

constexpr double kDram = 4.3e12;  // bytes/s, the measured device-to-device copy rate
constexpr double kFp32 = 60e12;   // FLOP/s
constexpr double kBf16 = 780e12;  // FLOP/s, measured bf16 matmul

bool Mentions(const RooflineVerdict& v, const std::string& text) {
  return v.explanation.find(text) != std::string::npos;
}

// 16 M floats: c = a + b. 1 FLOP per 12 bytes.
RooflineInput VectorAdd() {
  RooflineInput in;
  in.flops = 16.0 * (1 << 20);
  in.min_bytes = 12.0 * 16 * (1 << 20);
  in.dram_bytes_per_s = kDram;
  in.peak_flops_per_s = kFp32;
  in.time_ms = 0.052;
  return in;
}

TEST(Roofline, MemoryBoundVectorAdd) {
  RooflineInput in = VectorAdd();
  in.dram_throughput_pct = 88;
  in.sm_throughput_pct = 21;
  RooflineVerdict v = ClassifyRoofline(in);
  EXPECT_EQ(v.analytic, Bottleneck::kMemory);
  EXPECT_EQ(v.measured, Bottleneck::kMemory);
  EXPECT_EQ(v.result, Bottleneck::kMemory);
  EXPECT_FALSE(v.disagree);
  EXPECT_NEAR(v.arithmetic_intensity, 1.0 / 12, 1e-12);
  EXPECT_NEAR(v.ridge_point, kFp32 / kDram, 1e-9);
  EXPECT_NEAR(v.floor_ms, in.min_bytes / kDram * 1e3, 1e-12);
  EXPECT_NEAR(v.achieved_fraction, v.floor_ms / 0.052, 1e-12);
  EXPECT_EQ(v.ceiling, "DRAM bandwidth");
  EXPECT_TRUE(Mentions(v, "88.0%")) << v.explanation;
  EXPECT_TRUE(Mentions(v, "memory-bound")) << v.explanation;
}

TEST(Roofline, ComputeBoundGemm) {
  RooflineInput in;
  const double n = 4096;
  in.flops = 2 * n * n * n;
  in.min_bytes = 3 * n * n * 2;  // bf16 A, B, C
  in.dram_bytes_per_s = kDram;
  in.peak_flops_per_s = kBf16;
  in.time_ms = 0.21;
  in.sm_throughput_pct = 84;
  in.dram_throughput_pct = 11;
  RooflineVerdict v = ClassifyRoofline(in);
  EXPECT_EQ(v.analytic, Bottleneck::kCompute);
  EXPECT_EQ(v.measured, Bottleneck::kCompute);
  EXPECT_EQ(v.result, Bottleneck::kCompute);
  EXPECT_EQ(v.ceiling, "compute peak");
  EXPECT_GT(v.arithmetic_intensity, v.ridge_point);
  EXPECT_NEAR(v.floor_ms, in.flops / kBf16 * 1e3, 1e-12);
  EXPECT_GT(v.achieved_fraction, 0.8);
  EXPECT_LT(v.achieved_fraction, 0.9);
}

RooflineInput Tiny() {
  RooflineInput in;
  in.flops = 1024;
  in.min_bytes = 12 * 1024;
  in.dram_bytes_per_s = kDram;
  in.peak_flops_per_s = kFp32;
  in.time_ms = 0.004;
  return in;
}

TEST(Roofline, LatencyBoundTinyKernel) {
  RooflineInput in = Tiny();
  in.sm_throughput_pct = 2.1;
  in.dram_throughput_pct = 0.7;
  RooflineVerdict v = ClassifyRoofline(in);
  EXPECT_EQ(v.analytic, Bottleneck::kMemory);
  EXPECT_EQ(v.measured, Bottleneck::kLatency);
  EXPECT_EQ(v.result, Bottleneck::kLatency);
  EXPECT_TRUE(v.disagree);
  EXPECT_TRUE(Mentions(v, "latency-bound")) << v.explanation;

  // Without ncu: under 10% of the ceiling on a call shorter than 50 µs.
  RooflineVerdict unprofiled = ClassifyRoofline(Tiny());
  EXPECT_EQ(unprofiled.measured, Bottleneck::kUnknown);
  EXPECT_EQ(unprofiled.analytic, Bottleneck::kMemory);
  EXPECT_EQ(unprofiled.result, Bottleneck::kLatency);
  EXPECT_LT(unprofiled.achieved_fraction, 0.1);
  EXPECT_TRUE(Mentions(unprofiled, "latency-bound")) << unprofiled.explanation;
}

TEST(Roofline, SlowLongCallWithoutNcuKeepsItsSide) {
  RooflineInput in = VectorAdd();
  in.time_ms = 5;  // 1% of the ceiling, but a long call: a slow memory-bound kernel
  RooflineVerdict v = ClassifyRoofline(in);
  EXPECT_LT(v.achieved_fraction, 0.1);
  EXPECT_EQ(v.result, Bottleneck::kMemory);
}

TEST(Roofline, LaunchBound) {
  RooflineInput in = Tiny();
  in.launch_overhead_share = 0.35;
  in.kernels_per_call = 12;
  in.sm_throughput_pct = 2;
  in.dram_throughput_pct = 1;
  RooflineVerdict v = ClassifyRoofline(in);
  EXPECT_EQ(v.result, Bottleneck::kLaunch);
  EXPECT_EQ(v.measured, Bottleneck::kLatency);
  EXPECT_TRUE(Mentions(v, "35%")) << v.explanation;
  EXPECT_TRUE(Mentions(v, "12 kernel")) << v.explanation;

  in.launch_overhead_share = 0.20;  // the trigger is strictly more than 20%
  EXPECT_EQ(ClassifyRoofline(in).result, Bottleneck::kLatency);
}

TEST(Roofline, MixedWhenBothUnitsAreBusy) {
  RooflineInput in = VectorAdd();
  in.sm_throughput_pct = 72;
  in.dram_throughput_pct = 81;
  RooflineVerdict v = ClassifyRoofline(in);
  EXPECT_EQ(v.measured, Bottleneck::kMixed);
  EXPECT_EQ(v.result, Bottleneck::kMixed);

  in.sm_throughput_pct = 59.9;  // one under 60%: the busier side names it
  EXPECT_EQ(ClassifyRoofline(in).result, Bottleneck::kMemory);
}

TEST(Roofline, DisagreementIsExplainedAndTheAnalyticClassWins) {
  // An elementwise op whose implementation burns SM cycles (e.g. integer division per element):
  // ncu sees the SM busier, the ridge point says the work is memory-bound.
  RooflineInput in = VectorAdd();
  in.time_ms = 0.4;
  in.sm_throughput_pct = 78;
  in.dram_throughput_pct = 31;
  RooflineVerdict v = ClassifyRoofline(in);
  EXPECT_EQ(v.analytic, Bottleneck::kMemory);
  EXPECT_EQ(v.measured, Bottleneck::kCompute);
  EXPECT_TRUE(v.disagree);
  EXPECT_EQ(v.result, Bottleneck::kMemory);
  EXPECT_TRUE(Mentions(v, "disagree")) << v.explanation;
  EXPECT_TRUE(Mentions(v, "analytic class wins")) << v.explanation;
  EXPECT_TRUE(Mentions(v, "78.0%")) << v.explanation;
}

TEST(Roofline, PartialAndMissingInputs) {
  RooflineVerdict none = ClassifyRoofline(RooflineInput{});
  EXPECT_EQ(none.analytic, Bottleneck::kUnknown);
  EXPECT_EQ(none.measured, Bottleneck::kUnknown);
  EXPECT_EQ(none.result, Bottleneck::kUnknown);
  EXPECT_FALSE(none.explanation.empty());

  // ncu alone.
  RooflineInput measured_only;
  measured_only.time_ms = 1;
  measured_only.sm_throughput_pct = 20;
  measured_only.dram_throughput_pct = 75;
  RooflineVerdict m = ClassifyRoofline(measured_only);
  EXPECT_EQ(m.result, Bottleneck::kMemory);
  EXPECT_FALSE(m.disagree);

  // One throughput only: a busy unit names the class, an idle one does not.
  RooflineInput dram_only;
  dram_only.dram_throughput_pct = 70;
  EXPECT_EQ(ClassifyRoofline(dram_only).measured, Bottleneck::kMemory);
  dram_only.dram_throughput_pct = 10;
  EXPECT_EQ(ClassifyRoofline(dram_only).measured, Bottleneck::kUnknown);

  // Bytes only (no flops formula): the bandwidth is the only ceiling.
  RooflineInput bytes_only = VectorAdd();
  bytes_only.flops = 0;
  RooflineVerdict b = ClassifyRoofline(bytes_only);
  EXPECT_EQ(b.analytic, Bottleneck::kMemory);
  EXPECT_EQ(b.ceiling, "DRAM bandwidth");
  EXPECT_EQ(b.arithmetic_intensity, 0);
}

TEST(Bottleneck, NamesRoundTrip) {
  for (Bottleneck b : {Bottleneck::kCompute, Bottleneck::kMemory, Bottleneck::kLatency, Bottleneck::kLaunch,
                       Bottleneck::kMixed, Bottleneck::kUnknown}) {
    auto parsed = ParseBottleneck(BottleneckName(b));
    ASSERT_TRUE(parsed.has_value()) << BottleneckName(b);
    EXPECT_EQ(*parsed, b);
  }
  EXPECT_EQ(BottleneckName(Bottleneck::kMemory), "memory-bound");
  EXPECT_EQ(ParseBottleneck("compute"), Bottleneck::kCompute);
  EXPECT_EQ(ParseBottleneck("Memory"), Bottleneck::kMemory);
  EXPECT_EQ(ParseBottleneck("latency_bound"), Bottleneck::kLatency);
  EXPECT_EQ(ParseBottleneck("launch"), Bottleneck::kLaunch);
  EXPECT_FALSE(ParseBottleneck("fast").has_value());
  EXPECT_FALSE(ParseBottleneck("").has_value());
}

TEST(Finding, ToJson) {
  Finding f;
  f.id = "register-spill";
  f.tool = "RegisterSpill";
  f.severity = 0.8;
  f.evidence["local_loads"] = 47;
  f.guidance = "Spills: 252 bytes stored per thread.";
  f.skills = {"reduce-register-pressure"};
  nlohmann::json j = ToJson(f);
  EXPECT_EQ(j["id"], "register-spill");
  EXPECT_EQ(j["tool"], "RegisterSpill");
  EXPECT_DOUBLE_EQ(j["severity"].get<double>(), 0.8);
  EXPECT_EQ(j["evidence"]["local_loads"], 47);
  EXPECT_EQ(j["guidance"], "Spills: 252 bytes stored per thread.");
  ASSERT_TRUE(j["skills"].is_array());
  EXPECT_EQ(j["skills"][0], "reduce-register-pressure");
  EXPECT_TRUE(ToJson(Finding{})["evidence"].is_object());
}

}  // namespace
}  // namespace kpilot
