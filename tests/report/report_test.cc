// The report's collector on a real store holding records written as the optimizer, the bench and
// the lineage walk write them, and the page's renderer: what each view needs is in the model, a
// run that did not finish says so, an unknown id is a clear error, and no recorded text can end
// the page's script element.
#include <gtest/gtest.h>

#include "bench/bench.h"
#include "core/fs.h"
#include "report/report.h"

namespace kpilot {
namespace {

using nlohmann::json;

class ReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = TempDir::Create("kpilot-report-");
    ASSERT_TRUE(d.ok());
    dir_.emplace(std::move(d).value());
    auto s = Store::Open(dir_->path() / "store");
    ASSERT_TRUE(s.ok());
    store_ = std::move(s).value();
  }

  std::string Blob(const std::string& text) {
    auto b = store_->PutBlob(text);
    EXPECT_TRUE(b.ok());
    return b.ok() ? *b : "";
  }
  int64_t Event(int64_t run, const std::string& kind, const json& payload) {
    auto seq = store_->AddRunEvent(run, kind, payload.dump());
    EXPECT_TRUE(seq.ok());
    return seq.ok() ? *seq : -1;
  }
  void Node(int64_t run, int64_t node, int64_t parent, int64_t proposal, const std::string& source,
            const std::string& verdict, double speedup, const json& evaluation) {
    RunNodeRecord n;
    n.run_id = run;
    n.node = node;
    n.parent = parent;
    n.proposal = proposal;
    n.source_name = "k.cu";
    n.source_blob = Blob(source);
    n.params_json = json{{"TILE", std::to_string(16 << node)}}.dump();
    n.summary = "node " + std::to_string(node);
    n.verdict = verdict;
    n.speedup = speedup;
    n.result_blob = evaluation.is_null() ? "" : Blob(evaluation.dump());
    ASSERT_TRUE(store_->AddRunNode(n).ok());
  }
  static json Evaluation(double cand_ms, double base_ms) {
    return {{"verdict", {{"kind", "passed"}, {"summary", "every output matched"}, {"evidence", json::object()}}},
            {"speedup_geomean", base_ms / cand_ms},
            {"speedup_geomean_ci", {base_ms / cand_ms * 0.98, base_ms / cand_ms * 1.02}},
            {"calibration", {{"gpu", "Test GPU"}, {"dram_bytes_per_s", 3e12}, {"fp32_flops_per_s", 6e13}}},
            {"findings", json::array({{{"id", "uncoalesced-global-access"}, {"guidance", "coalesce the loads"}}})},
            {"timings", json::array({{{"workload", "w1"},
                                      {"candidate_reported_ms", cand_ms},
                                      {"baseline_reported_ms", base_ms},
                                      {"speedup", {{"ratio", base_ms / cand_ms}, {"ci", {1.0, 2.0}}, {"n", 20}}}}})}};
  }
  static json Times(double start) {
    start += 0.1;  // the executor's clock is past 0 at any job's submission
    return {{"now_s", start + 2},           {"submitted_s", start},      {"compile_start_s", start},
            {"compile_end_s", start + 0.5}, {"eval_start_s", start + 1}, {"eval_end_s", start + 2}};
  }

  // An optimize run of three nodes: the root, a better child promoted, a compile error.
  int64_t MakeRun(const std::string& status) {
    RunRecord r;
    r.task_name = "vadd";
    r.task_dir = (dir_->path() / "no-such-task").string();
    r.config_json = json{{"generator", "params"}, {"policy", "mcts"}}.dump();
    r.status = status;
    r.best_node = 1;
    r.best_speedup = 2.0;
    auto id = store_->CreateRun(r);
    EXPECT_TRUE(id.ok());
    r.id = *id;
    EXPECT_TRUE(store_->UpdateRun(r).ok());
    Event(r.id, "start",
          {{"options", json::object()},
           {"roofline", json::array({{{"workload", "w1"}, {"flops", 1e9}, {"min_bytes", 1e8}}})},
           {"times", {{"now_s", 0.0}}}});
    const int64_t root =
        Event(r.id, "proposal", {{"parent", -1}, {"source", "root"}, {"skills_offered", json::array()}});
    Node(r.id, 0, -1, root, "int root;\n", "passed", 1.0, Evaluation(2.0, 2.0));
    Event(r.id, "evaluated",
          {{"node", 0},
           {"evaluations", 1},
           {"verdict", "passed"},
           {"speedup", 1.0},
           {"best", 0.0},
           {"device", 0},
           {"times", Times(0)}});
    Event(r.id, "promote", {{"node", 0}, {"speedup", 1.0}, {"reason", "first passing candidate"}});
    const int64_t child =
        Event(r.id, "proposal", {{"parent", 0}, {"skills_offered", {"vectorize"}}, {"skills_applied", {"vectorize"}}});
    Node(r.id, 1, 0, child, "int root;\nint child;\n", "passed", 2.0, Evaluation(1.0, 2.0));
    Event(r.id, "evaluated",
          {{"node", 1},
           {"evaluations", 2},
           {"verdict", "passed"},
           {"speedup", 2.0},
           {"best", 1.0},
           {"device", 0},
           {"times", Times(2)}});
    Event(r.id, "promote",
          {{"node", 1}, {"incumbent", 0}, {"paired_speedup", 1.9}, {"ci", {1.8, 2.0}}, {"times", Times(4)}});
    Event(r.id, "counters",
          {{"node", 1},
           {"profiler", "cupti"},
           {"bottleneck", "memory-bound"},
           {"findings", json::array({{{"id", "dram-bound"}, {"guidance", "fewer bytes"}}})}});
    Event(r.id, "transcript", {{"parent", 0}, {"endpoint", "chat"}, {"blob", Blob("the model said </script> hi")}});
    Node(r.id, 2, 0, child, "int root;\nint broken(\n", "compile_error", 0.0, json());
    Event(r.id, "evaluated",
          {{"node", 2},
           {"evaluations", 3},
           {"verdict", "compile_error"},
           {"speedup", 0.0},
           {"best", 2.0},
           {"device", 0},
           {"times", Times(6)}});
    Event(r.id, "reject", {{"node", 2}, {"incumbent", 1}, {"paired_speedup", 0.0}, {"ci", {0.0, 0.0}}});
    return r.id;
  }

  std::optional<TempDir> dir_;
  std::unique_ptr<Store> store_;
};

TEST_F(ReportTest, ARunsModelHoldsEveryViewsData) {
  const int64_t id = MakeRun("finished");
  auto m = report::CollectReport(*store_, id);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ((*m)["kind"], "run");
  EXPECT_EQ((*m)["kpilot_report_version"], report::kReportModelVersion);
  EXPECT_EQ((*m)["run"]["status"], "finished");
  EXPECT_EQ((*m)["run"]["note"], "") << "a finished run needs no note";
  ASSERT_EQ((*m)["nodes"].size(), 3u);
  EXPECT_EQ((*m)["best_path"], json({0, 1}));
  json child = (*m)["nodes"][1];  // a copy: a missing key reads as null
  EXPECT_TRUE(child["promoted"].get<bool>());
  EXPECT_EQ(child["cards_applied"], json({"vectorize"}));
  EXPECT_EQ(child["profile"]["findings"][0]["id"], "dram-bound");
  EXPECT_EQ(child["evaluation"]["timings"][0]["candidate_ms"], 1.0);
  EXPECT_EQ(child["evaluation"]["findings"][0]["guidance"], "coalesce the loads");
  ASSERT_TRUE(child.contains("transcripts")) << "the exchange of its parent's expansion";
  EXPECT_NE(child["transcripts"][0]["text"].get<std::string>().find("model said"), std::string::npos);
  EXPECT_EQ((*m)["sources"].size(), 3u) << "each source once by blob";
  EXPECT_EQ((*m)["sources"][child["source"].get<std::string>()], "int root;\nint child;\n");
  // Progress, promotions, roofline and timeline.
  EXPECT_EQ((*m)["progress"].size(), 3u);
  ASSERT_EQ((*m)["promotions"].size(), 3u);
  EXPECT_EQ((*m)["promotions"][1]["ci"], json({1.8, 2.0}));
  EXPECT_FALSE((*m)["promotions"][2]["promoted"].get<bool>());
  EXPECT_EQ((*m)["roofline"]["gpu"], "Test GPU");
  EXPECT_EQ((*m)["roofline"]["workloads"][0]["flops"], 1e9) << "from the start event";
  int compiles = 0, queue = 0;
  for (const auto& j : (*m)["timeline"]["jobs"]) (j["lane"] == "compile" ? compiles : queue)++;
  EXPECT_EQ(compiles, 4) << "three evaluations and one promotion check";
  EXPECT_EQ(queue, 4);
}

TEST_F(ReportTest, AnUnfinishedRunIsReportedWithANote) {
  const int64_t failed = MakeRun("failed");
  auto m = report::CollectReport(*store_, failed);
  ASSERT_TRUE(m.ok());
  EXPECT_NE((*m)["run"]["note"].get<std::string>().find("failed"), std::string::npos);
  // "running" with no process holding the run's lock is shown as interrupted, with how to resume.
  const int64_t left = MakeRun("running");
  auto i = report::CollectReport(*store_, left);
  ASSERT_TRUE(i.ok());
  EXPECT_EQ((*i)["run"]["status"], "interrupted");
  EXPECT_NE((*i)["run"]["note"].get<std::string>().find("--resume " + std::to_string(left)), std::string::npos);
}

TEST_F(ReportTest, AnUnknownIdNamesTheStoreAndTheFix) {
  auto m = report::CollectReport(*store_, 42);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
  EXPECT_NE(m.status().message().find("run 42"), std::string::npos);
  EXPECT_NE(m.status().message().find("kpilot runs"), std::string::npos);
}

TEST_F(ReportTest, RecordedTextCannotEndThePagesScript) {
  const int64_t id = MakeRun("finished");
  auto m = report::CollectReport(*store_, id);
  ASSERT_TRUE(m.ok());
  const std::string page = report::RenderHtml(*m);
  // The transcript holds "</script>": the page has exactly its own two closing tags.
  size_t closes = 0;
  for (size_t at = page.find("</script>"); at != std::string::npos; at = page.find("</script>", at + 1)) ++closes;
  EXPECT_EQ(closes, 2u);
  EXPECT_NE(page.find("\\u003c/script>"), std::string::npos);
  EXPECT_NE(page.find("<title>kpilot report: run"), std::string::npos);
  EXPECT_EQ(page.find("http://"), page.find("http://www.w3.org/2000/svg")) << "no network address but SVG's namespace";
  EXPECT_EQ(page.find("https://"), std::string::npos);
}

TEST_F(ReportTest, WriteReportWritesThePageAtomicallyUnderItsName) {
  const int64_t id = MakeRun("finished");
  auto w = report::WriteReport(*store_, id, dir_->path() / "out");
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->page, dir_->path() / "out" / report::PageName(id));
  EXPECT_EQ(w->nodes, 3);
  auto text = ReadFile(w->page);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->size(), w->bytes);
}

TEST_F(ReportTest, ABenchsModelHoldsItsProblemsAndLinksTheirRuns) {
  Suite suite;
  suite.name = "kb";
  suite.root = dir_->path() / "missing-suite";
  auto bench = CreateBench(*store_, suite, json{{"suite", suite.root.string()}});
  ASSERT_TRUE(bench.ok());
  const int64_t run = MakeRun("finished");
  ProblemResult a;
  a.id = "level1/1_A";
  a.level = "1";
  a.verdict = "passed";
  a.speedup_eager = 1.5;
  a.run_id = run;
  ProblemResult b;
  b.id = "level1/2_B";
  b.level = "1";
  b.error = "the problem file does not load";
  for (const auto& r : {a, b}) Event(*bench, "problem", {{"problem", r.id}, {"result", ToJson(r)}});
  Event(*bench, "problem_start", {{"problem", "level2/1_C"}});
  auto m = report::CollectReport(*store_, *bench);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ((*m)["kind"], "bench");
  EXPECT_EQ((*m)["bench"]["problems"].size(), 2u);
  EXPECT_EQ((*m)["bench"]["total"]["correct"], 1);
  EXPECT_EQ((*m)["bench"]["unfinished"][0]["problem"], "level2/1_C");
  auto w = report::WriteReport(*store_, *bench, dir_->path() / "bench-out");
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_EQ(w->problem_pages.size(), 1u);
  EXPECT_EQ(w->problem_pages[0].filename(), report::PageName(run));
  auto page = ReadFile(w->page);
  ASSERT_TRUE(page.ok());
  EXPECT_NE(page->find("\"page\":\"" + report::PageName(run) + "\""), std::string::npos) << "the link is in the model";
}

TEST_F(ReportTest, ALineageWalksModelHoldsStepsCardsAndAdmissions) {
  RunRecord r;
  r.task_name = "sgemm";
  r.config_json = json{{"command", "lineage"}, {"expert", "expert.cpp"}}.dump();
  r.status = "finished";
  auto id = store_->CreateRun(r);
  ASSERT_TRUE(id.ok());
  Event(*id, "expert", {{"comparison", {{"speedup", 5.0}, {"ci", {4.9, 5.1}}}}});
  const std::string src = Blob("simplified source");
  Event(*id, "reject",
        {{"step", 1},
         {"attempt", 1},
         {"stage", "measure"},
         {"accepted", false},
         {"reason", "incorrect"},
         {"source", src}});
  Event(*id, "accept",
        {{"step", 1},
         {"attempt", 2},
         {"stage", "done"},
         {"accepted", true},
         {"declaration", {{"feature", "register-tile"}, {"mechanism", "reuse"}}},
         {"simplified", {{"comparison", {{"speedup", 0.4}, {"ci", {0.39, 0.41}}}}}},
         {"source", src}});
  Event(*id, "cards", {{"cards", json::array({"register-tile"})}});
  Event(*id, "admission",
        {{"card", "register-tile"},
         {"admitted", true},
         {"stage", "done"},
         {"comparison", {{"speedup", 1.7}, {"ci", {1.6, 1.8}}}}});
  auto m = report::CollectReport(*store_, *id);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ((*m)["kind"], "lineage");
  json l = (*m)["lineage"];
  EXPECT_EQ(l["expert"]["speedup"], 5.0);
  ASSERT_EQ(l["attempts"].size(), 2u);
  EXPECT_EQ(l["attempts"][1]["declaration"]["feature"], "register-tile");
  EXPECT_EQ(l["attempts"][1]["simplified"]["speedup"], 0.4);
  EXPECT_EQ(l["admissions"][0]["comparison"]["speedup"], 1.7);
  EXPECT_EQ((*m)["sources"][src], "simplified source");
}

}  // namespace
}  // namespace kpilot
