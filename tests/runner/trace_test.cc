#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "runner/cupti_trace.h"
#include "runner/nvml.h"

namespace kpilot {
namespace {

TraceKernel Kernel(std::string name, uint32_t stream, int64_t start, int64_t end) {
  TraceKernel k;
  k.name = std::move(name);
  k.stream_id = stream;
  k.start_ns = start;
  k.end_ns = end;
  return k;
}

TEST(LaunchTraceJson, RoundTripKeepsEveryField) {
  LaunchTrace t;
  TraceKernel k = Kernel("_Z4axpyfPKfPfi", 7, 100, 250);
  k.correlation_id = 42;
  k.grid[0] = 64;
  k.grid[1] = 2;
  k.grid[2] = 3;
  k.block[0] = 256;
  k.block[1] = 1;
  k.block[2] = 1;
  k.dynamic_shared_bytes = 1024;
  k.static_shared_bytes = 512;
  k.registers_per_thread = 40;
  t.kernels.push_back(k);
  t.memops.push_back({"memcpy_HtoD", (1ull << 33) + 5, 7, 10, 90});
  t.memops.push_back({"memset", 4096, 9, 300, 310});
  t.syncs.push_back({"event", 0xFFFFFFFFu, 260, 400});
  t.dropped_records = 3;

  // Through text too, as a saved trace travels.
  Result<LaunchTrace> back = LaunchTraceFromJson(nlohmann::json::parse(ToJson(t).dump()));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->kernels.size(), 1u);
  const TraceKernel& b = back->kernels[0];
  EXPECT_EQ(b.name, "_Z4axpyfPKfPfi");
  EXPECT_EQ(b.stream_id, 7u);
  EXPECT_EQ(b.correlation_id, 42u);
  EXPECT_EQ(b.start_ns, 100);
  EXPECT_EQ(b.end_ns, 250);
  EXPECT_EQ(b.grid[1], 2);
  EXPECT_EQ(b.grid[2], 3);
  EXPECT_EQ(b.block[0], 256);
  EXPECT_EQ(b.dynamic_shared_bytes, 1024);
  EXPECT_EQ(b.static_shared_bytes, 512);
  EXPECT_EQ(b.registers_per_thread, 40);
  ASSERT_EQ(back->memops.size(), 2u);
  EXPECT_EQ(back->memops[0].kind, "memcpy_HtoD");
  EXPECT_EQ(back->memops[0].bytes, (1ull << 33) + 5);
  EXPECT_EQ(back->memops[1].stream_id, 9u);
  EXPECT_EQ(back->memops[1].end_ns, 310);
  ASSERT_EQ(back->syncs.size(), 1u);
  EXPECT_EQ(back->syncs[0].kind, "event");
  EXPECT_EQ(back->syncs[0].stream_id, 0xFFFFFFFFu);
  EXPECT_EQ(back->dropped_records, 3u);
}

TEST(LaunchTraceJson, ErrorsNameTheField) {
  nlohmann::json j = ToJson(LaunchTrace{.kernels = {Kernel("k", 1, 0, 1)}});
  j["kernels"][0]["grid"] = {1, 2};
  Result<LaunchTrace> r = LaunchTraceFromJson(j);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(r.status().message().find("kernels[0].grid"), std::string::npos) << r.status().message();

  j = ToJson(LaunchTrace{});
  j["memops"] = {{{"kind", "memcpy_sideways"}, {"bytes", 1}, {"stream_id", 1}, {"start_ns", 0}, {"end_ns", 1}}};
  r = LaunchTraceFromJson(j);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("memops[0].kind"), std::string::npos) << r.status().message();

  j = ToJson(LaunchTrace{});
  j.erase("syncs");
  r = LaunchTraceFromJson(j);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("syncs"), std::string::npos) << r.status().message();

  EXPECT_FALSE(LaunchTraceFromJson(nlohmann::json::array()).ok());
}

TEST(SummarizeTrace, CountsAndNamesKernelsOffTheGivenStream) {
  LaunchTrace t;
  t.kernels = {Kernel("main_kernel", 5, 0, 10), Kernel("_Z6helperPf", 6, 12, 20), Kernel("_Z6helperPf", 6, 30, 40),
               Kernel("other", 8, 50, 60)};
  TraceSummary s = SummarizeTrace(t, 5);
  EXPECT_EQ(s.kernels, 4);
  EXPECT_EQ(s.kernels_off_stream, 3);
  EXPECT_EQ(s.off_stream_kernel_names, (std::vector<std::string>{"_Z6helperPf", "other"}));

  TraceSummary all_on = SummarizeTrace(LaunchTrace{.kernels = {Kernel("a", 2, 0, 1), Kernel("b", 2, 1, 2)}}, 2);
  EXPECT_EQ(all_on.kernels_off_stream, 0);
  EXPECT_TRUE(all_on.off_stream_kernel_names.empty());
}

TEST(SummarizeTrace, DetectsLibraryKernelsIgnoringCase) {
  LaunchTrace t;
  for (const char* name :
       {"nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_TNT", "ampere_sgemm_CUBLAS_128x64",
        "cutlass::Kernel2<cutlass_80_tensorop_s1688gemm>", "cudnn::bn_fw_tr_1C11_kernel", "_ZN8cutensor7reduce",
        "gemv2T_kernel_val", "gemmSN_NN_kernel", "my_softmax", "nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_TNT"})
    t.kernels.push_back(Kernel(name, 1, 0, 1));
  TraceSummary s = SummarizeTrace(t, 1);
  EXPECT_EQ(s.library_kernels.size(), 7u);  // distinct, my_softmax excluded
  EXPECT_EQ(std::count(s.library_kernels.begin(), s.library_kernels.end(), "my_softmax"), 0);
  EXPECT_EQ(s.library_kernels.front(), "nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_TNT");
}

TEST(SummarizeTrace, BusyTimeIsTheUnionOfKernelIntervalsAndSpanCoversMemops) {
  LaunchTrace t;
  // [100,200) and [150,300) overlap -> 200 ns; [400,450) nested in [400,500) -> 100 ns.
  t.kernels = {Kernel("a", 1, 150, 300), Kernel("b", 1, 100, 200), Kernel("c", 2, 400, 500), Kernel("d", 2, 400, 450)};
  t.memops = {{"memcpy_HtoD", 64, 1, 50, 90}, {"memset", 64, 1, 500, 520}, {"memcpy_DtoH", 64, 1, 600, 700}};
  t.syncs = {{"context", 0xFFFFFFFFu, 650, 710}};
  TraceSummary s = SummarizeTrace(t, 1);
  EXPECT_DOUBLE_EQ(s.kernel_busy_ns, 300);
  EXPECT_DOUBLE_EQ(s.span_ns, 650);  // 50 (first memcpy start) to 700 (last memcpy end)
  EXPECT_EQ(s.memcpys, 2);
  EXPECT_EQ(s.memsets, 1);
  EXPECT_EQ(s.syncs, 1);

  TraceSummary empty = SummarizeTrace(LaunchTrace{}, 0);
  EXPECT_EQ(empty.kernels, 0);
  EXPECT_DOUBLE_EQ(empty.kernel_busy_ns, 0);
  EXPECT_DOUBLE_EQ(empty.span_ns, 0);
}

Result<LaunchTrace> LoadTrace(const std::string& name) {
  std::ifstream in(std::string(KPILOT_FIXTURES_DIR) + "/traces/" + name);
  if (!in) return Status::NotFound("missing fixture traces/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return LaunchTraceFromJson(nlohmann::json::parse(text.str()));
}

// Constructed by hand (see tests/fixtures/traces/README.md).
TEST(SummarizeTrace, SavedSideStreamTrace) {
  Result<LaunchTrace> t = LoadTrace("side_stream.json");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  TraceSummary s = SummarizeTrace(*t, 13);
  EXPECT_EQ(s.kernels, 4);
  EXPECT_EQ(s.kernels_off_stream, 2);
  EXPECT_EQ(s.off_stream_kernel_names, (std::vector<std::string>{"_Z11side_kernelPfi"}));
  EXPECT_EQ(s.library_kernels, (std::vector<std::string>{"nvjet_sm90_tst_128x128_64x4_1x2_h_bz_coopA_NNT"}));
  EXPECT_DOUBLE_EQ(s.kernel_busy_ns, 100000);
  EXPECT_DOUBLE_EQ(s.span_ns, 135000);
  EXPECT_EQ(s.memcpys, 1);
  EXPECT_EQ(s.memsets, 1);
  EXPECT_EQ(s.syncs, 1);
}

// Captured by CuptiTracer on the H200: a kernel on the given stream (13), one on another (14).
TEST(SummarizeTrace, CapturedH200TwoStreamTrace) {
  Result<LaunchTrace> t = LoadTrace("h200_two_streams.json");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->dropped_records, 0u);
  TraceSummary s = SummarizeTrace(*t, 13);
  EXPECT_EQ(s.kernels, 2);
  EXPECT_EQ(s.kernels_off_stream, 1);
  EXPECT_EQ(s.off_stream_kernel_names, (std::vector<std::string>{"_Z11side_kernelPfi"}));
  EXPECT_TRUE(s.library_kernels.empty());
  EXPECT_DOUBLE_EQ(s.kernel_busy_ns, 11040 + 11104);
  EXPECT_DOUBLE_EQ(s.span_ns, 7124116);
  EXPECT_EQ(s.memcpys, 2);
  EXPECT_EQ(s.memsets, 1);
  EXPECT_EQ(s.syncs, 4);
  ASSERT_EQ(t->syncs.size(), 4u);
  EXPECT_EQ(t->syncs[0].kind, "stream_wait_event");
  EXPECT_EQ(t->syncs[1].kind, "event");
  EXPECT_EQ(t->syncs[1].stream_id, 0xFFFFFFFFu);  // an event sync names no stream
  const TraceKernel& side = t->kernels[1];
  EXPECT_EQ(side.dynamic_shared_bytes, 128);
  EXPECT_EQ(side.static_shared_bytes, 1024);
  EXPECT_EQ(side.grid[0], 16384);
  EXPECT_EQ(side.block[0], 256);
  EXPECT_GT(side.registers_per_thread, 0);
}

// Captured on the H200 by `kpilot eval --json` (the runner's trace of one call, from
// run_details.launch_trace): transpose-naive from bench/profile_set, one kernel on the given
// stream. The runner's own cudaDeviceSynchronize after the call is dropped before the trace is
// kept (DropRunnerSync), so a kernel-only candidate shows no sync at all.
TEST(SummarizeTrace, CapturedEvalCallOfAKernelOnlyCandidate) {
  Result<LaunchTrace> t = LoadTrace("h200_transpose_naive_call.json");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->dropped_records, 0u);
  TraceSummary s = SummarizeTrace(*t, 13);
  EXPECT_EQ(s.kernels, 1);
  EXPECT_EQ(s.kernels_off_stream, 0);
  EXPECT_TRUE(s.library_kernels.empty());
  EXPECT_EQ(s.memcpys, 0);
  EXPECT_EQ(s.memsets, 0);
  EXPECT_EQ(s.syncs, 0);
  EXPECT_DOUBLE_EQ(s.kernel_busy_ns, 978650);
  EXPECT_DOUBLE_EQ(s.span_ns, 978650);
  const TraceKernel& k = t->kernels[0];
  EXPECT_EQ(k.name, "_Z14TransposeNaivePKfPfll");
  EXPECT_EQ(k.grid[0], 256);
  EXPECT_EQ(k.grid[1], 1024);
  EXPECT_EQ(k.block[0], 32);
  EXPECT_EQ(k.block[1], 8);
  EXPECT_EQ(k.registers_per_thread, 16);
}

// Captured on the H200 by a runner from before DropRunnerSync: tests/adversarial's
// memoize_by_pointer.cu launches Check and AddUnlessSeen and synchronizes nothing itself; the one
// "context" sync, which starts while AddUnlessSeen runs, is the runner's own. Today's runner drops
// it; this trace keeps the old record to show what that sync looks like.
TEST(SummarizeTrace, CapturedOldRunnerTraceHasTheRunnersContextSync) {
  Result<LaunchTrace> t = LoadTrace("h200_memoize_old_runner.json");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  TraceSummary s = SummarizeTrace(*t, 13);
  EXPECT_EQ(s.kernels, 2);
  EXPECT_EQ(s.kernels_off_stream, 0);
  EXPECT_EQ(s.memcpys + s.memsets, 0);
  EXPECT_DOUBLE_EQ(s.kernel_busy_ns, 1952 + 63712);
  EXPECT_DOUBLE_EQ(s.span_ns, 5125149);  // a 5 ms host gap between the two launches
  ASSERT_EQ(s.syncs, 1);
  EXPECT_EQ(t->syncs[0].kind, "context");
  EXPECT_EQ(t->syncs[0].stream_id, 0xFFFFFFFFu);
  EXPECT_GT(t->syncs[0].start_ns, t->kernels[1].start_ns);
  EXPECT_LT(t->syncs[0].start_ns, t->kernels[1].end_ns);
}

// This test runs on CPU-only CI machines: whatever CUPTI does without a GPU, no crash, and no
// records made up out of nothing.
TEST(CuptiTracer, StartWithoutGpuFailsCleanlyOrCollectsNothing) {
  Result<std::unique_ptr<CuptiTracer>> tracer = CuptiTracer::Start();
  if (!tracer.ok()) {
    EXPECT_EQ(tracer.status().code(), StatusCode::kUnavailable);
    EXPECT_NE(tracer.status().message().find("CUPTI"), std::string::npos) << tracer.status().message();
    return;
  }
  Result<LaunchTrace> t = (*tracer)->Collect();
  if (t.ok()) {
    EXPECT_TRUE(t->kernels.empty());
    EXPECT_TRUE(t->memops.empty());
  }
  // A second tracer cannot start while the first lives.
  EXPECT_FALSE(CuptiTracer::Start().ok());
}

TEST(Nvml, OpenWithoutDriverIsUnavailableAndNamesTheLibrary) {
  Result<std::unique_ptr<Nvml>> nvml = Nvml::Open();
  if (nvml.ok()) GTEST_SKIP() << "this machine has an NVIDIA driver";
  EXPECT_EQ(nvml.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(nvml.status().message().find("libnvidia-ml"), std::string::npos) << nvml.status().message();
}

}  // namespace
}  // namespace kpilot
