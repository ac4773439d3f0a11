// The ncu raw-CSV parser and command line. The fixtures under tests/fixtures/ncu/ are constructed
// from the documented format (see its README) until ones captured on the H200 replace them.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/fs.h"
#include "profile/ncu.h"

namespace kpilot {
namespace {

std::string Fixture(const std::string& name) {
  auto text = ReadFile(std::string(KPILOT_FIXTURES_DIR) + "/ncu/" + name);
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

TEST(NcuRawCsv, SeveralKernelsAndInvocationsAmidProgramOutput) {
  auto r = ParseNcuRawCsv(Fixture("raw_sgemm_metrics.txt"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const auto& ks = *r;
  ASSERT_EQ(ks.size(), 5u);  // fill twice, sgemm_naive three times; "max_abs_err,0.000122" is not a row
  for (int i = 0; i < 5; ++i) EXPECT_EQ(ks[i].id, i);
  EXPECT_EQ(ks[0].kernel, "fill(float *, int, float)");
  EXPECT_EQ(ks[1].kernel, "fill(float *, int, float)");
  EXPECT_EQ(ks[2].kernel, "sgemm_naive(const float *, const float *, float *, int)");
  EXPECT_EQ(ks[2].block, "(16, 16, 1)");
  EXPECT_EQ(ks[2].grid, "(128, 128, 1)");
  EXPECT_EQ(ks[0].grid, "(16384, 1, 1)");

  // Thousands separators; nanoseconds stay nanoseconds.
  EXPECT_DOUBLE_EQ(Metric(ks[2], "gpu__time_duration.sum"), 3177696);
  EXPECT_DOUBLE_EQ(Metric(ks[3], "gpu__time_duration.sum"), 3181344);
  EXPECT_DOUBLE_EQ(Metric(ks[2], "smsp__inst_executed.sum"), 2150105088.0);
  // Mbyte and Gbyte/second are decimal: bytes and bytes per second.
  EXPECT_DOUBLE_EQ(Metric(ks[2], "dram__bytes_read.sum"), 33.57e6);
  EXPECT_DOUBLE_EQ(Metric(ks[2], "dram__bytes_read.sum.per_second"), 10.56e9);
  // Percentages and counts unchanged.
  EXPECT_DOUBLE_EQ(Metric(ks[2], "dram__throughput.avg.pct_of_peak_sustained_elapsed"), 0.32);
  EXPECT_DOUBLE_EQ(Metric(ks[2], "sm__throughput.avg.pct_of_peak_sustained_elapsed"), 65.21);
  EXPECT_DOUBLE_EQ(Metric(ks[2], "launch__registers_per_thread"), 32);
  EXPECT_EQ(ks[2].metrics.size(), 10u);
  EXPECT_TRUE(ks[2].unavailable.empty());
  // The fixed columns are not metrics.
  EXPECT_EQ(ks[2].metrics.count("CC"), 0u);
  EXPECT_EQ(ks[2].metrics.count("Device"), 0u);
}

TEST(NcuRawCsv, ProcessesUnitsTextAndNotAvailable) {
  auto r = ParseNcuRawCsv(Fixture("raw_mixed_processes.txt"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const auto& ks = *r;
  // The row printed after "progress 100%" without a newline counts; the program line between two
  // rows does not break the table.
  ASSERT_EQ(ks.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(ks[i].id, i);
  EXPECT_EQ(ks[0].kernel, "void vadd4<float>(const float4 *, const float4 *, float4 *, int)");
  EXPECT_EQ(ks[3].kernel, "zero_fill(float4 *, long)");
  EXPECT_EQ(ks[4].kernel, "softmax_rows(const float *, float *, int, int)");

  EXPECT_DOUBLE_EQ(Metric(ks[0], "gpu__time_duration.sum"), 12700);          // 12.70 usecond
  EXPECT_DOUBLE_EQ(Metric(ks[0], "dram__bytes_read.sum"), 33554432);         // byte, separators
  EXPECT_DOUBLE_EQ(Metric(ks[0], "dram__bytes_write.sum"), 16.78e6);         // Mbyte
  EXPECT_DOUBLE_EQ(Metric(ks[0], "dram__bytes.sum.per_second"), 3.96e12);    // Tbyte/second
  EXPECT_DOUBLE_EQ(Metric(ks[0], "sm__cycles_elapsed.avg.per_second"), 1.98e9);  // cycle/nsecond
  EXPECT_DOUBLE_EQ(Metric(ks[2], "launch__shared_mem_per_block_static"), 4100);  // 4.10 Kbyte
  EXPECT_DOUBLE_EQ(Metric(ks[0], "l1tex__average_t_sectors_per_request_pipe_lsu_mem_global_op_ld.ratio"), 4);
  EXPECT_DOUBLE_EQ(Metric(ks[3], "dram__bytes_read.sum"), 0);

  // Text values are not numbers kpilot reads, and are not "unavailable" either.
  EXPECT_EQ(ks[0].metrics.count("device__attribute_display_name"), 0u);
  EXPECT_EQ(ks[0].metrics.count("launch__func_cache_config"), 0u);
  EXPECT_TRUE(ks[0].unavailable.empty());

  // n/a: listed as unavailable, absent from the map.
  EXPECT_TRUE(Unavailable(ks[3], "l1tex__average_t_sectors_per_request_pipe_lsu_mem_global_op_ld.ratio"));
  EXPECT_TRUE(Unavailable(ks[3], "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct"));
  EXPECT_EQ(ks[3].unavailable.size(), 2u);
  EXPECT_EQ(ks[3].metrics.count("smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct"), 0u);
}

TEST(NcuRawCsv, CrLfLineEndings) {
  std::string text = Fixture("raw_sgemm_metrics.txt");
  std::string crlf;
  for (char c : text) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  auto r = ParseNcuRawCsv(crlf);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 5u);
  EXPECT_DOUBLE_EQ(Metric((*r)[4], "gpu__time_duration.sum"), 3176160);
  EXPECT_EQ((*r)[4].grid, "(128, 128, 1)");
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
  EXPECT_DOUBLE_EQ(Metric((*r)[1], "dram__bytes.sum"), 2e9);           // Gbyte
  EXPECT_DOUBLE_EQ(Metric((*r)[1], "gpu__time_duration.sum"), 1e6);    // second → ns
}

TEST(NcuRawCsv, NoTableSaysWhatNcuSaidInstead) {
  auto none = ParseNcuRawCsv(Fixture("no_kernels.txt"));
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(none.status().message().find("No kernels were profiled"), std::string::npos) << none.status().message();

  auto perm = ParseNcuRawCsv(Fixture("permission_error.txt"));
  ASSERT_FALSE(perm.ok());
  EXPECT_NE(perm.status().message().find("ERR_NVGPUCTRPERM"), std::string::npos) << perm.status().message();

  auto empty = ParseNcuRawCsv("");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("empty"), std::string::npos);

  auto other = ParseNcuRawCsv("Section: GPU Speed Of Light Throughput\n  DRAM Throughput  %  0.32\n");
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("Section: GPU Speed Of Light"), std::string::npos);
}

TEST(NcuRawCsv, HeaderWithoutRowsIsAnEmptyList) {
  std::string text = Fixture("raw_sgemm_metrics.txt");
  text = text.substr(0, text.find("\"0\",\"48213\""));
  auto r = ParseNcuRawCsv(text);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->empty());
}

TEST(NcuVersion, FromVersionOutput) {
  EXPECT_EQ(ParseNcuVersion(Fixture("ncu_version.txt")), "2025.3.1.0");
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
  EXPECT_EQ(std::vector<std::string>(argv.end() - 3, argv.end()),
            (std::vector<std::string>{"./bench", "--n", "2048"}));

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
