// The ncu raw-CSV parser and command line, on output captured on the H200 (Nsight Compute
// 2025.3.1.0; tests/fixtures/ncu/README.md has every file's command). permission_error.txt is the
// one constructed file.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/fs.h"
#include "fixture_file.h"
#include "profile/ncu.h"

namespace kpilot {
namespace {

std::string Fixture(const std::string& name) {
  auto text = testing::ReadFixture(std::string(KPILOT_FIXTURES_DIR) + "/ncu/" + name);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? *text : std::string();
}

double Metric(const KernelMetrics& k, const std::string& name) {
  auto it = k.metrics.find(name);
  EXPECT_NE(it, k.metrics.end()) << name << " missing for launch " << k.id;
  return it == k.metrics.end() ? -1 : it->second;
}

bool Unavailable(const KernelMetrics& k, const std::string& name) {
  return std::find(k.unavailable.begin(), k.unavailable.end(), name) != k.unavailable.end();
}

// `kpilot profile --profiler ncu` on examples/cuda/sgemm: ncu's "==PROF==" lines and the runner's
// JSON result line come before the table; one launch of the tools' metrics (plus the launch__,
// device__attribute_ and other columns ncu adds to every raw page).
TEST(NcuRawCsv, CapturedMetricsRunAmidProgramOutput) {
  auto r = ParseNcuRawCsv(Fixture("raw_sgemm_metrics.txt"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const auto& ks = *r;
  ASSERT_EQ(ks.size(), 1u);  // the {"calibration":…} line is the program's, not a row
  const KernelMetrics& k = ks[0];
  EXPECT_EQ(k.id, 0);
  EXPECT_EQ(k.kernel, "Sgemm(const float *, const float *, float *, long, long, long)");
  EXPECT_EQ(k.block, "(16, 16, 1)");
  EXPECT_EQ(k.grid, "(128, 128, 1)");

  // Thousands separators; ncu 2025.3's raw page prints base units ("ns", "byte"): unchanged.
  EXPECT_DOUBLE_EQ(Metric(k, "gpu__time_duration.sum"), 3463392);
  EXPECT_DOUBLE_EQ(Metric(k, "dram__bytes_read.sum"), 33561856);
  EXPECT_DOUBLE_EQ(Metric(k, "dram__bytes_read.avg"), 699205.33);
  EXPECT_DOUBLE_EQ(Metric(k, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"), 1073741824.0);
  EXPECT_DOUBLE_EQ(Metric(k, "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"), 8589934592.0);
  EXPECT_DOUBLE_EQ(Metric(k, "device__attribute_clock_rate"), 1980000);
  // Percentages, ratios and counts unchanged.
  EXPECT_DOUBLE_EQ(Metric(k, "dram__throughput.avg.pct_of_peak_sustained_elapsed"), 0.27);
  EXPECT_DOUBLE_EQ(Metric(k, "sm__throughput.avg.pct_of_peak_sustained_elapsed"), 59.44);
  EXPECT_DOUBLE_EQ(Metric(k, "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"), 22.34);
  EXPECT_DOUBLE_EQ(Metric(k, "launch__registers_per_thread"), 32);
  EXPECT_DOUBLE_EQ(Metric(k, "launch__waves_per_multiprocessor"), 15.52);
  EXPECT_DOUBLE_EQ(Metric(k, "launch__grid_size"), 16384);
  EXPECT_DOUBLE_EQ(Metric(k, "sm__maximum_warps_per_active_cycle_pct"), 100);
  // 366 metric columns: 360 numbers, 5 texts ("NVIDIA H200", "CachePreferNone", …) that are not
  // metrics kpilot reads, and launch__kernel_name, printed empty.
  EXPECT_EQ(k.metrics.size(), 360u);
  EXPECT_EQ(k.metrics.count("device__attribute_display_name"), 0u);
  EXPECT_EQ(k.metrics.count("launch__func_cache_config"), 0u);
  EXPECT_EQ(k.unavailable, (std::vector<std::string>{"launch__kernel_name"}));
  // The fixed columns are not metrics.
  EXPECT_EQ(k.metrics.count("CC"), 0u);
  EXPECT_EQ(k.metrics.count("Device"), 0u);
}

// ncu around a python3 program using PyTorch (--target-processes all): the program's own print
// before the table, three library kernels whose names hold commas, parentheses and templates.
TEST(NcuRawCsv, CapturedPyTorchProcessKernelNames) {
  auto r = ParseNcuRawCsv(Fixture("raw_torch_processes.txt"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const auto& ks = *r;
  ASSERT_EQ(ks.size(), 3u);  // "sum 2097152.0" is the program's
  for (int i = 0; i < 3; ++i) EXPECT_EQ(ks[i].id, i);
  EXPECT_EQ(ks[0].kernel,
            "void vectorized_elementwise_kernel<4, FillFunctor<float>, std::array<char *, 1>>(int, T2, T3)");
  EXPECT_EQ(ks[2].kernel,
            "void reduce_kernel<512, 1, ReduceOp<float, func_wrapper_t<float, sum_functor<float, float, "
            "float>::operator ()(TensorIterator &)::[lambda(float, float) (instance 1)]>, unsigned int, float, 4, "
            "4>>(T3)");
  EXPECT_EQ(ks[2].grid, "(1, 128, 1)");
  EXPECT_EQ(ks[2].block, "(512, 1, 1)");
  EXPECT_DOUBLE_EQ(Metric(ks[0], "gpu__time_duration.sum"), 3232);
  EXPECT_DOUBLE_EQ(Metric(ks[1], "dram__bytes_read.sum"), 4199424);
  EXPECT_DOUBLE_EQ(Metric(ks[2], "gpu__time_duration.sum"), 7744);
  EXPECT_DOUBLE_EQ(Metric(ks[2], "launch__shared_mem_per_block_dynamic"), 2048);
  // Asked for two metrics, ncu still printed its launch__ columns; no SOL throughput, so none.
  EXPECT_EQ(ks[0].metrics.count("sm__throughput.avg.pct_of_peak_sustained_elapsed"), 0u);
  EXPECT_EQ(ks[0].metrics.count("dram__throughput.avg.pct_of_peak_sustained_elapsed"), 0u);
}

// `--set full` on the runner: 2,227 metric columns, four launches of one kernel (the candidate
// calls it once per chunk), empty and "no data" values.
TEST(NcuRawCsv, CapturedFullSetSeveralLaunches) {
  auto r = ParseNcuRawCsv(Fixture("full_chunked-scale-copy-sync.csv"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const auto& ks = *r;
  ASSERT_EQ(ks.size(), 4u);
  const double times[] = {12544, 12448, 12448, 12704};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(ks[i].id, i);
    EXPECT_EQ(ks[i].kernel, "ScaleShift(const float *, float *, float, long)");
    EXPECT_EQ(ks[i].grid, "(16384, 1, 1)");
    EXPECT_DOUBLE_EQ(Metric(ks[i], "gpu__time_duration.sum"), times[i]);
  }
  const KernelMetrics& k = ks[0];
  EXPECT_DOUBLE_EQ(Metric(k, "sm__throughput.avg.pct_of_peak_sustained_elapsed"), 32.60);
  EXPECT_DOUBLE_EQ(Metric(k, "dram__bytes_read.sum.per_second"), 1337734693877.55);  // byte/s
  EXPECT_DOUBLE_EQ(Metric(k, "sm__cycles_elapsed.avg.per_second"), 1962020958.95);   // hz
  EXPECT_DOUBLE_EQ(Metric(k, "smsp__cycles_active.avg"), 21273.06);                  // cycle
  // The full set names DRAM throughput gpu__dram_throughput only; the parser adds the
  // dram__throughput name kpilot reads, with the same value, for every rollup.
  EXPECT_DOUBLE_EQ(Metric(k, "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"), 29.02);
  EXPECT_DOUBLE_EQ(Metric(k, "dram__throughput.avg.pct_of_peak_sustained_elapsed"), 29.02);
  EXPECT_DOUBLE_EQ(Metric(k, "dram__throughput.max.pct_of_peak_sustained_elapsed"), 29.58);
  // "no data" (source counters) and empty cells are unavailable, not zero.
  EXPECT_TRUE(Unavailable(k, "sass__inst_executed_register_spilling_mem_local"));
  EXPECT_TRUE(Unavailable(k, "sass__inst_executed_register_spilling_mem_shared"));
  EXPECT_TRUE(Unavailable(k, "SM_B.TriageCompute.l1tex__t_sector_hit_rate.pct"));
  EXPECT_EQ(k.metrics.count("sass__inst_executed_register_spilling_mem_local"), 0u);
  EXPECT_EQ(k.unavailable.size(), 14u);  // 12 empty, 2 "no data"

  // Merged per kernel: the mean of the four launches.
  auto merged = MergeInvocations(ks);
  ASSERT_EQ(merged.size(), 1u);
  EXPECT_EQ(merged[0].kernel, k.kernel);
  EXPECT_EQ(merged[0].id, 0);
  EXPECT_DOUBLE_EQ(Metric(merged[0], "gpu__time_duration.sum"), 12536);
  EXPECT_NEAR(Metric(merged[0], "dram__throughput.avg.pct_of_peak_sustained_elapsed"), 29.005, 1e-9);
  RooflineInput in;
  ApplyMeasured(merged[0].metrics, &in);
  ASSERT_TRUE(in.sm_throughput_pct && in.dram_throughput_pct);
  EXPECT_NEAR(*in.sm_throughput_pct, 32.6375, 1e-9);
  EXPECT_NEAR(*in.dram_throughput_pct, 29.005, 1e-9);
}

TEST(NcuRawCsv, DramThroughputAliasNeverOverwritesTheMeasuredName) {
  const std::string text =
      "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\","
      "\"Grid Size\",\"Device\",\"CC\",\"dram__throughput.avg.pct_of_peak_sustained_elapsed\","
      "\"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed\"\n"
      "\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"%\",\"%\"\n"
      "\"0\",\"1\",\"a\",\"h\",\"k(int)\",\"1\",\"7\",\"(1, 1, 1)\",\"(1, 1, 1)\",\"0\",\"9.0\",\"12.2\",\"11.8\"\n";
  auto r = ParseNcuRawCsv(text);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_DOUBLE_EQ(Metric((*r)[0], "dram__throughput.avg.pct_of_peak_sustained_elapsed"), 12.2);
}

// "n/a" did not appear in any capture (empty cells and "no data" did); older ncu versions print it.
TEST(NcuRawCsv, NotAvailableValues) {
  const std::string text =
      "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\","
      "\"Grid Size\",\"Device\",\"CC\",\"a__x.sum\",\"b__y.ratio\",\"c__z.pct\"\n"
      "\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"byte\",\"\",\"%\"\n"
      "\"0\",\"1\",\"a\",\"h\",\"k(int)\",\"1\",\"7\",\"(1, 1, 1)\",\"(1, 1, "
      "1)\",\"0\",\"9.0\",\"1,024\",\"n/a\",\"N/A\"\n";
  auto r = ParseNcuRawCsv(text);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_DOUBLE_EQ(Metric((*r)[0], "a__x.sum"), 1024);
  EXPECT_EQ((*r)[0].metrics.size(), 1u);
  EXPECT_EQ((*r)[0].unavailable, (std::vector<std::string>{"b__y.ratio", "c__z.pct"}));
}

// Not seen in the captures (ncu 2025.3 prints the table after the program ends), but possible
// with a program that writes without a trailing newline: its text glued in front of a row, and a
// program line between the units row and the data.
TEST(NcuRawCsv, RowGluedToProgramOutput) {
  std::string text = Fixture("raw_sgemm_metrics.txt");
  size_t row = text.find("\"0\",\"715\"");
  ASSERT_NE(row, std::string::npos);
  text.insert(row, "checking 5 trials\nprogress 100%");
  auto r = ParseNcuRawCsv(text);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_DOUBLE_EQ(Metric((*r)[0], "gpu__time_duration.sum"), 3463392);
}

TEST(NcuRawCsv, CrLfLineEndings) {
  std::string text = Fixture("full_chunked-scale-copy-sync.csv");
  std::string crlf;
  for (char c : text) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  auto r = ParseNcuRawCsv(crlf);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 4u);
  EXPECT_DOUBLE_EQ(Metric((*r)[3], "gpu__time_duration.sum"), 12704);
  EXPECT_EQ((*r)[3].grid, "(16384, 1, 1)");
  EXPECT_EQ((*r)[3].unavailable.size(), 14u);
}

TEST(NcuRawCsv, QuotesInsideFieldsAndARepeatedHeader) {
  const std::string text =
      "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\","
      "\"Grid Size\",\"Device\",\"CC\",\"gpu__time_duration.sum\"\n"
      "\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"msecond\"\n"
      "\"0\",\"1\",\"a\",\"h\",\"k<\"\"x\"\">(int)\",\"1\",\"7\",\"(1, 1, 1)\",\"(1, 1, 1)\",\"0\",\"9.0\",\"1.5\"\n"
      "==PROF== Disconnected from process 1\n"
      "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\","
      "\"Grid Size\",\"Device\",\"CC\",\"dram__bytes.sum\",\"gpu__time_duration.sum\"\n"
      "\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"Gbyte\",\"second\"\n"
      "\"0\",\"2\",\"b\",\"h\",\"m(int)\",\"1\",\"7\",\"(1, 1, 1)\",\"(1, 1, 1)\",\"0\",\"9.0\",\"2\",\"0.001\"\n";
  auto r = ParseNcuRawCsv(text);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].kernel, "k<\"x\">(int)");
  EXPECT_DOUBLE_EQ(Metric((*r)[0], "gpu__time_duration.sum"), 1.5e6);  // msecond → ns
  EXPECT_EQ((*r)[0].metrics.count("dram__bytes.sum"), 0u);
  EXPECT_DOUBLE_EQ(Metric((*r)[1], "dram__bytes.sum"), 2e9);         // Gbyte
  EXPECT_DOUBLE_EQ(Metric((*r)[1], "gpu__time_duration.sum"), 1e6);  // second → ns
}

TEST(NcuRawCsv, NoTableSaysWhatNcuSaidInstead) {
  // Captured: -k matched nothing; ncu's clock note comes first and is not the reason.
  auto none = ParseNcuRawCsv(Fixture("no_kernels.txt"));
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kInvalidInput);
  const std::string& msg = none.status().message();
  EXPECT_NE(msg.find("profiled no kernels"), std::string::npos) << msg;
  EXPECT_NE(msg.find("==WARNING== No kernels were profiled."), std::string::npos) << msg;
  EXPECT_NE(msg.find("kernel filter"), std::string::npos) << msg;
  EXPECT_NE(msg.find("reduce_kernel, vectorized_elementwise_kernel"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("unmodified GPU clocks"), std::string::npos) << msg;

  // Constructed (root on the H200 cannot provoke it): the error line is quoted.
  auto perm = ParseNcuRawCsv(Fixture("permission_error.txt"));
  ASSERT_FALSE(perm.ok());
  EXPECT_NE(perm.status().message().find("ERR_NVGPUCTRPERM"), std::string::npos) << perm.status().message();

  // Only the clock note and the metrics warning of a real run, no table: the metrics warning.
  std::string full = Fixture("full_transpose-naive.csv");
  auto cut = ParseNcuRawCsv(full.substr(0, full.find("{\"calibration\"")));
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("Unable to access the following 6 metrics"), std::string::npos)
      << cut.status().message();

  auto empty = ParseNcuRawCsv("");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("empty"), std::string::npos);

  auto other = ParseNcuRawCsv("Section: GPU Speed Of Light Throughput\n  DRAM Throughput  %  0.32\n");
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("Section: GPU Speed Of Light"), std::string::npos);
}

TEST(NcuRawCsv, HeaderWithoutRowsIsAnEmptyList) {
  std::string text = Fixture("raw_sgemm_metrics.txt");
  text = text.substr(0, text.find("\"0\",\"715\""));
  auto r = ParseNcuRawCsv(text);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->empty());
}

TEST(NcuVersion, FromVersionOutput) {
  EXPECT_EQ(ParseNcuVersion(Fixture("ncu_version.txt")), "2025.3.1.0");  // "(build 36398880)" follows
  EXPECT_EQ(ParseNcuVersion("Version 2024.1.0.0 (build 33681293) (public-release)\n"), "2024.1.0.0");
  EXPECT_EQ(ParseNcuVersion("ncu: command not found\n"), "");
  EXPECT_EQ(ParseNcuVersion(""), "");
}

// The position of `flag` in argv, or -1.
int IndexOf(const std::vector<std::string>& argv, const std::string& flag) {
  auto it = std::find(argv.begin(), argv.end(), flag);
  return it == argv.end() ? -1 : static_cast<int>(it - argv.begin());
}

TEST(NcuCommand, AlwaysLeavesClocksAlone) {
  for (bool full : {false, true}) {
    NcuRequest req;
    req.set = full ? "full" : "";
    req.target = {"./bench"};
    auto argv = NcuCommand("/opt/ncu/ncu", req);
    ASSERT_FALSE(argv.empty());
    EXPECT_EQ(argv[0], "/opt/ncu/ncu");
    int clock = IndexOf(argv, "--clock-control");
    ASSERT_GE(clock, 0);
    EXPECT_EQ(argv[clock + 1], "none");
    int page = IndexOf(argv, "--page");
    ASSERT_GE(page, 0);
    EXPECT_EQ(argv[page + 1], "raw");
    EXPECT_GE(IndexOf(argv, "--csv"), 0);
    int procs = IndexOf(argv, "--target-processes");
    ASSERT_GE(procs, 0);
    EXPECT_EQ(argv[procs + 1], "all");
    EXPECT_EQ(argv.back(), "./bench");
  }
}

TEST(NcuCommand, MetricsSectionsFilterAndTarget) {
  NcuRequest req;
  req.metrics = {"dram__throughput.avg.pct_of_peak_sustained_elapsed", "gpu__time_duration.sum"};
  req.sections = {"SpeedOfLight", "Occupancy"};
  req.kernel_regex = "sgemm.*";
  req.launch_skip = 3;
  req.launch_count = 2;
  req.target = {"./bench", "--n", "2048"};
  auto argv = NcuCommand("ncu", req);

  int metrics = IndexOf(argv, "--metrics");
  ASSERT_GE(metrics, 0);
  EXPECT_EQ(argv[metrics + 1], "dram__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum");
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "--section"), 2);
  EXPECT_GE(IndexOf(argv, "SpeedOfLight"), 0);
  EXPECT_GE(IndexOf(argv, "Occupancy"), 0);
  int k = IndexOf(argv, "-k");
  ASSERT_GE(k, 0);
  EXPECT_EQ(argv[k + 1], "regex:sgemm.*");
  int skip = IndexOf(argv, "--launch-skip");
  ASSERT_GE(skip, 0);
  EXPECT_EQ(argv[skip + 1], "3");
  int count = IndexOf(argv, "-c");
  ASSERT_GE(count, 0);
  EXPECT_EQ(argv[count + 1], "2");
  EXPECT_EQ(IndexOf(argv, "--set"), -1);
  // The program and its arguments come last, in order.
  ASSERT_GE(argv.size(), 3u);
  EXPECT_EQ(std::vector<std::string>(argv.end() - 3, argv.end()), (std::vector<std::string>{"./bench", "--n", "2048"}));

  req.kernel_regex = "regex:^vadd";
  argv = NcuCommand("ncu", req);
  EXPECT_EQ(argv[IndexOf(argv, "-k") + 1], "regex:^vadd");
}

TEST(NcuCommand, FullSetReplacesMetricsAndDefaultsAddNothing) {
  NcuRequest req;
  req.set = "full";
  req.metrics = {"gpu__time_duration.sum"};
  req.sections = {"SpeedOfLight"};
  auto argv = NcuCommand("ncu", req);
  int set = IndexOf(argv, "--set");
  ASSERT_GE(set, 0);
  EXPECT_EQ(argv[set + 1], "full");
  EXPECT_EQ(IndexOf(argv, "--metrics"), -1);
  EXPECT_EQ(IndexOf(argv, "--section"), -1);

  auto plain = NcuCommand("ncu", NcuRequest{});
  EXPECT_EQ(IndexOf(plain, "-k"), -1);
  EXPECT_EQ(IndexOf(plain, "-c"), -1);
  EXPECT_EQ(IndexOf(plain, "--launch-skip"), -1);
  EXPECT_EQ(plain.size(), 8u);  // ncu and its seven fixed arguments
}

}  // namespace
}  // namespace kpilot
