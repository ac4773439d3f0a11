// kpilot report end to end: real host-backend runs (an optimize with --report, a bench with its
// problems' runs, a lineage walk through the scripted LLM server) written as pages and opened in
// headless Chromium by tests/report/check_report.py: no console error, each view's elements
// present after its script ran, non-blank screenshots, and a node's source shown when the address
// names the node (as a click does).
#include <gtest/gtest.h>

#include "../cli/run_kpilot.h"
#include "core/fs.h"
#include "fake_llm_server.h"
#include "report/report.h"

namespace kpilot {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Opens `page` at `view` in Chromium and checks it; the checker's lines on failure.
void CheckInBrowser(const fs::path& page, const std::string& view, const std::vector<std::string>& selectors,
                    const std::vector<std::string>& texts = {}, int node = -1) {
  ProcessSpec spec;
  spec.argv = {"python3", (testing::SourceDir() / "tests" / "report" / "check_report.py").string(), page.string(),
               "--view", view};
  for (const auto& s : selectors) spec.argv.insert(spec.argv.end(), {"--expect-selector", s});
  for (const auto& t : texts) spec.argv.insert(spec.argv.end(), {"--expect-text", t});
  if (node >= 0) spec.argv.insert(spec.argv.end(), {"--node", std::to_string(node)});
  spec.timeout_s = 180;
  auto r = SystemProcessRunner().Run(spec);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 0) << "view " << view << " of " << page << ":\n" << r->out << r->err;
}

class ReportCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (FindOnPath("chromium").empty())
      GTEST_SKIP() << "chromium is not installed here (scripts/setup.sh installs Debian's chromium package)";
    auto d = TempDir::Create("kpilot-report-cli-");
    ASSERT_TRUE(d.ok());
    dir_.emplace(std::move(d).value());
  }
  fs::path root() const { return dir_->path(); }
  std::optional<TempDir> dir_;
};

TEST_F(ReportCli, AnOptimizeRunsReportOpensWithEveryView) {
  const fs::path store = root() / "store";
  auto r = testing::RunKpilot(root(),
                              {"optimize", (testing::SourceDir() / "examples" / "host" / "sgemm").string(), "--budget",
                               "6", "--workload", "256x384x320", "--report", "--store", store.string(), "--json"},
                              600);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  const fs::path page = j.value("report", "");
  ASSERT_TRUE(fs::is_regular_file(page)) << "optimize --report wrote " << page;
  EXPECT_EQ(page, store / "reports" / report::PageName(j["run"].get<int64_t>()));
  CheckInBrowser(page, "tree", {"#tree-svg", "circle.node", "#node-panel", "#node-source"}, {"Node 1", "TILE_M"}, 1);
  CheckInBrowser(page, "progress", {"#progress-evaluations", "#progress-t_s"});
  CheckInBrowser(page, "roofline", {"#roofline-chart"});
  CheckInBrowser(page, "timeline", {"#timeline-chart"}, {"host queue"});

  // kpilot report writes the same page anywhere; an unknown id is a usage error naming it.
  auto again = testing::RunKpilot(
      root(), {"report", j["run"].dump(), "--store", store.string(), "--out", (root() / "pages").string(), "--json"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(json::parse(again.out)["nodes"], 6);
  auto unknown = testing::RunKpilot(root(), {"report", "99", "--store", store.string()});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("run 99 is not in the store"), std::string::npos) << unknown.err;
  auto nostore = testing::RunKpilot(root(), {"report", "1", "--store", (root() / "nothing").string()});
  EXPECT_EQ(nostore.exit_code, 2);
  EXPECT_NE(nostore.err.find("no kpilot store"), std::string::npos) << nostore.err;
}

TEST_F(ReportCli, ABenchsReportLinksEveryProblemsRunPage) {
  // A host suite of one small problem.
  const fs::path task = root() / "suite" / "easy" / "saxpy";
  fs::create_directories(task);
  fs::copy(testing::SourceDir() / "examples" / "host" / "saxpy", task, fs::copy_options::recursive);
  auto toml = ReadFile(task / "task.toml");
  ASSERT_TRUE(toml.ok());
  std::string t = *toml;
  const size_t at = t.find("n = 33554432");
  ASSERT_NE(at, std::string::npos);
  t.replace(at, 12, "n = 262144");
  ASSERT_TRUE(WriteFileAtomic(task / "task.toml", t).ok());
  const fs::path store = root() / "store";
  auto b = testing::RunKpilot(root(),
                              {"bench", (root() / "suite").string(), "--generator", "params", "--budget", "3",
                               "--max-seconds", "0.3", "--store", store.string(), "--json"},
                              600);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  auto r = testing::RunKpilot(
      root(), {"report", "1", "--store", store.string(), "--out", (root() / "pages").string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out);
  ASSERT_EQ(j["problem_pages"].size(), 1u) << "the problem's optimizer run has a page beside the bench's";
  const fs::path problem_page = j["problem_pages"][0].get<std::string>();
  EXPECT_TRUE(fs::is_regular_file(problem_page));
  CheckInBrowser(j["page"].get<std::string>(), "bench",
                 {"#bench-levels", "#fastp-chart", "#bench-table", "#fact-wall",
                  "a[href=\"" + problem_page.filename().string() + "\"]"},
                 {"easy/saxpy"});
  CheckInBrowser(problem_page, "tree", {"#tree-svg", "circle.node"});
}

TEST_F(ReportCli, ALineageWalksReportShowsItsStepsAndCards) {
  std::vector<llm::testing::FakeReply> replies;
  std::string error;
  ASSERT_TRUE(llm::testing::LoadFakeScript(testing::SourceDir() / "tests" / "lineage" / "host_sgemm" / "script.json",
                                           &replies, &error))
      << error;
  llm::testing::FakeLlmServer server;
  for (auto& r : replies) server.Push(r);
  const fs::path config = root() / "llm.toml", store = root() / "store";
  ASSERT_TRUE(WriteFileAtomic(config, "max_retries = 0\n").ok());
  const fs::path task = testing::SourceDir() / "examples" / "host" / "sgemm";
  auto walk = testing::RunKpilot(
      root(),
      {"lineage", task.string(), (task / "candidates" / "register_tile_expert.cpp").string(), "--generator",
       server.OpenAISpec("scripted"), "--llm-config", config.string(), "--out", (root() / "cards").string(), "--store",
       store.string(), "--trials", "1", "--round-trip-min", "0.5", "--workload", "256x384x320", "--json"},
      900);
  ASSERT_EQ(walk.exit_code, 0) << walk.err;
  auto r = testing::RunKpilot(root(), {"report", "1", "--store", store.string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const fs::path page = json::parse(r.out)["page"].get<std::string>();
  CheckInBrowser(page, "lineage", {"#lineage-steps", "#lineage-cards"}, {"register-tile", "vector-global-128"});
}

}  // namespace
}  // namespace kpilot
