// Prompt assembly: templates, the override folder, what each section holds, raw metrics only
// when asked for.
#include <gtest/gtest.h>

#include "core/fs.h"
#include "propose/prompt.h"
#include "task/loader.h"
#include "test_paths.h"

namespace kpilot {
namespace {

namespace fs = std::filesystem;

ProposalContext Context(const Task& task) {
  ProposalContext c;
  c.task = &task;
  c.parent_node = 3;
  c.parent_source = "// the parent source\n";
  c.parent_source_name = "omp_simd.cpp";
  c.parent_params = {{"CHUNK", "4096"}, {"VEC", "8"}};
  c.parent_verdict = "incorrect";
  c.parent_verdict_summary = "y[17] = 3.5, expected 2.5";
  c.parent_verdict_evidence = R"({"max_abs_error": 1.0, "first_bad_index": 17})";
  c.parent_metrics = R"({"median_ms": {"12M-odd": 4.25}, "registers_marker": 77})";
  c.bottleneck = "memory-bound";
  Finding f;
  f.id = "scalar-global-loads";
  f.severity = 0.8;
  f.guidance = "use float4 loads";
  f.evidence = {{"load_width_bytes", 4}};
  c.findings = {f};
  c.memory_summary = "Tried from #3:\n#4 passed 1.1x";
  c.sibling_summaries = {"VEC 8→16: wider simd"};
  c.k = 2;
  return c;
}

class PromptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto t = LoadTask(testing::SourceDir() / "examples" / "host" / "saxpy");
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    task_ = *t;
  }
  Task task_;
  fs::path shipped_ = testing::SourceDir() / "prompts";
};

TEST_F(PromptTest, ShippedTemplatesRenderEverySection) {
  ProposalContext c = Context(task_);
  PromptOptions o;
  o.abi_header = "ABI-HEADER-TEXT";
  auto text = LoadPromptTemplate("propose.md", "", shipped_);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  auto p = RenderPrompt(*text, BuildPromptVars(task_, c, o), "propose.md");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  for (const char* want : {"# Task: saxpy", "y = a*x + y_in", "[[workloads]]", "ABI-HEADER-TEXT", "// the parent source",
                           "CHUNK=4096 VEC=8", "y[17] = 3.5, expected 2.5", "first_bad_index", "memory-bound",
                           "scalar-global-loads", "use float4 loads", "#4 passed 1.1x", "VEC 8→16: wider simd",
                           "draft 1 of 2", "g++ -O3 -march=native", ".cpp"})
    EXPECT_NE(p->find(want), std::string::npos) << want;
  EXPECT_EQ(p->find("{{"), std::string::npos) << "every placeholder is filled";
  // Guidance only: no raw numbers without the flag.
  EXPECT_EQ(p->find("registers_marker"), std::string::npos);
  EXPECT_EQ(p->find("load_width_bytes"), std::string::npos);
}

TEST_F(PromptTest, RawMetricsOnlyWithTheFlag) {
  ProposalContext c = Context(task_);
  PromptOptions o;
  o.raw_metrics = true;
  PromptVars v = BuildPromptVars(task_, c, o);
  EXPECT_NE(v["raw_metrics"].find("registers_marker"), std::string::npos);
  EXPECT_NE(v["raw_metrics"].find("load_width_bytes"), std::string::npos);
  o.raw_metrics = false;
  EXPECT_EQ(BuildPromptVars(task_, c, o)["raw_metrics"], "");
}

TEST_F(PromptTest, AnOverrideFolderReplacesOnlyTheFilesItHas) {
  auto dir = TempDir::Create("kpilot-prompts-");
  ASSERT_TRUE(dir.ok());
  ASSERT_TRUE(WriteFileAtomic(dir->path() / "propose.md", "MINE {{task_name}}").ok());
  auto mine = LoadPromptTemplate("propose.md", dir->path(), shipped_);
  ASSERT_TRUE(mine.ok());
  EXPECT_EQ(*mine, "MINE {{task_name}}");
  auto shipped = LoadPromptTemplate("reask.md", dir->path(), shipped_);
  ASSERT_TRUE(shipped.ok());
  EXPECT_NE(shipped->find("{{problem}}"), std::string::npos);
  auto missing = LoadPromptTemplate("nope.md", dir->path(), shipped_);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST_F(PromptTest, AnUnknownPlaceholderNamesFileAndLine) {
  auto r = RenderPrompt("line one\n{{memroy}}\n", {{"memory", "x"}}, "my/propose.md");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(r.status().message().find("my/propose.md:2: unknown placeholder {{memroy}}"), std::string::npos)
      << r.status().message();
}

TEST_F(PromptTest, EmptySectionsDisappear) {
  ProposalContext c;
  c.task = &task_;
  c.parent_verdict = "passed";
  c.parent_speedup = 1.5;
  c.k = 1;
  PromptVars v = BuildPromptVars(task_, c, {});
  EXPECT_EQ(v["profile"], "");
  EXPECT_EQ(v["memory"], "");
  EXPECT_EQ(v["siblings"], "");
  EXPECT_EQ(v["verdict_evidence"], "");
  EXPECT_EQ(v["draft_note"], "");
  EXPECT_NE(v["parent_verdict"].find("1.500×"), std::string::npos);
}

}  // namespace
}  // namespace kpilot
