// Prompt assembly: templates, the override folder, what each section holds, raw metrics only
// when asked for.
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "core/fs.h"
#include "generate/prompt.h"
#include "task/loader.h"
#include "toolchain/toolchain.h"
#include "generator_test_util.h"
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
  for (const char* want :
       {"# Task: saxpy", "y = a*x + y_in", "[[workloads]]", "ABI-HEADER-TEXT", "// the parent source",
        "CHUNK=4096 VEC=8", "y[17] = 3.5, expected 2.5", "first_bad_index", "memory-bound", "scalar-global-loads",
        "use float4 loads", "#4 passed 1.1x", "VEC 8→16: wider simd", "draft 1 of 2", "g++ -O3 -march=native", ".cpp"})
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

std::string Rendered(const std::string& file, const PromptVars& vars) {
  auto text = LoadPromptTemplate(file, "", testing::SourceDir() / "prompts");
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  auto p = RenderPrompt(text.ok() ? *text : "", vars, file);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? *p : "";
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_F(PromptTest, OfferedCardsReachThePromptWithPreconditionsRecipeAndRisks) {
  ProposalContext c = Context(task_);
  c.skills = {testing::BuiltinCard("coalescing"), testing::BuiltinCard("vector-loads-128bit")};
  ASSERT_FALSE(c.skills[0].card_text.empty());
  std::string p = Rendered("propose.md", BuildPromptVars(task_, c, {}));
  for (const char* want :
       {"## Skill cards that fit this kernel",
        "### `coalescing`: ", "### `vector-loads-128bit`: ", "Offered because: REASON-coalescing",
        // a precondition's what — why, folded YAML on one line
        "- The tensor has a contiguous (unit-stride) dimension that the warp can walk. — Coalescing merges the 32 "
        "lanes' addresses into few sectors only when those addresses are adjacent; with a non-unit innermost stride",
        // the recipe, and a risk
        "1. For every global array, find its contiguous (stride-1) dimension from the task's layout.",
        "- Transposing through shared memory without padding introduces 32-way bank conflicts.",
        "`Applied skills: <id>, <id>`", "`Applied skills: none`"})
    EXPECT_NE(p.find(want), std::string::npos) << want;
  EXPECT_NE(p.find(c.skills[0].intent), std::string::npos);
  EXPECT_EQ(p.find("## Before / After"), std::string::npos) << "only the recipe of the body";
  EXPECT_EQ(p.find("measured: []"), std::string::npos) << "not the raw front matter";
  EXPECT_LT(p.find("## Skill cards"), p.find("## What to do"));
}

TEST_F(PromptTest, NoCardsOrSkillsOffMeansNoSkillsSection) {
  ProposalContext c = Context(task_);
  for (bool enabled : {true, false}) {
    c.skills_enabled = enabled;
    c.skills = enabled ? std::vector<OfferedSkill>{} : std::vector<OfferedSkill>{testing::BuiltinCard("coalescing")};
    PromptVars v = BuildPromptVars(task_, c, {});
    EXPECT_EQ(v["skills"], "") << enabled;
    EXPECT_EQ(v["skill_folders"], "") << enabled;
    for (const char* file : {"propose.md", "agent.md"}) {
      std::string p = Rendered(file, v);
      EXPECT_EQ(p.find("Skill cards"), std::string::npos) << file;
      EXPECT_EQ(p.find("Applied skills"), std::string::npos) << file;
      EXPECT_EQ(p.find("coalescing"), std::string::npos) << file;
    }
  }
}

TEST_F(PromptTest, TheSkillsSectionIsBoundedAndCutsOnlyAtLineEnds) {
  ProposalContext c = Context(task_);
  for (const char* id :
       {"shared-memory-tiling", "vector-loads-128bit", "register-tiling", "tma-bulk-copy", "cp-async-pipeline"})
    c.skills.push_back(testing::BuiltinCard(id));
  std::set<std::string> card_lines;
  for (const auto& k : c.skills)
    for (const auto& l : SkillCardLines(k)) card_lines.insert(l);
  for (size_t limit : {size_t{6000}, size_t{2500}}) {
    PromptOptions o;
    o.max_skill_chars = limit;
    o.tools = true;
    std::string s = BuildPromptVars(task_, c, o)["skills"];
    ASSERT_FALSE(s.empty()) << limit;
    EXPECT_LE(s.size(), limit);
    EXPECT_EQ(Count(s, "\n### `"), 3u) << "three cards by default, of five offered (" << limit << ")";
    EXPECT_NE(s.find("### `shared-memory-tiling`"), std::string::npos);
    EXPECT_EQ(s.find("### `tma-bulk-copy`"), std::string::npos);
    EXPECT_NE(s.find("get_skill `register-tiling` gives the whole card"), std::string::npos)
        << "these cards are longer than a third of " << limit << " each: the last is cut";
    EXPECT_NE(s.find("End your reply"), std::string::npos) << "the request survives the cut";
    if (limit == 6000) {
      EXPECT_NE(s.find("- Register spills when TM x TN is too large"), std::string::npos)
          << "risks come before the recipe";
    }
    for (const char* heading : {"Recipe:\n…", "Risks:\n…", "it):\n…"})
      EXPECT_EQ(s.find(heading), std::string::npos) << "a heading left without a line: " << heading;
    // Every line is a whole line of a card, or the section's own text: nothing cut mid-line.
    std::istringstream in(s);
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || card_lines.count(line)) continue;
      bool own = line.rfind("## Skill cards", 0) == 0 || line.rfind("kpilot's skill library", 0) == 0 ||
                 line.rfind("End your reply", 0) == 0 || line.rfind("… (cut here", 0) == 0;
      EXPECT_TRUE(own) << "not a whole line: " << line;
    }
  }
  PromptOptions one;
  one.max_skills = 1;
  EXPECT_EQ(Count(BuildPromptVars(task_, c, one)["skills"], "\n### `"), 1u);
  one.max_skills = 0;
  EXPECT_EQ(BuildPromptVars(task_, c, one)["skills"], "");
}

TEST_F(PromptTest, CardsThatAddATechniqueComeBeforeTuneOnlyCards) {
  ProposalContext c = Context(task_);
  c.skills = {testing::BuiltinCard("loop-unrolling", /*tune_only=*/true), testing::BuiltinCard("coalescing")};
  std::string s = BuildPromptVars(task_, c, {})["skills"];
  ASSERT_NE(s.find("### `loop-unrolling`"), std::string::npos);
  EXPECT_LT(s.find("### `coalescing`"), s.find("### `loop-unrolling`"));
  EXPECT_NE(s.find("already has what this card provides"), std::string::npos);
}

TEST_F(PromptTest, AgentInstructionsListTheCardFoldersAndAskForAppliedSkills) {
  ProposalContext c = Context(task_);
  c.skills = {testing::BuiltinCard("coalescing"), testing::BuiltinCard("split-k")};
  PromptOptions o;
  o.candidate_file = "candidate.cpp";
  std::string p = Rendered("agent.md", BuildPromptVars(task_, c, o));
  for (const char* want : {"1. `coalescing` (skills/coalescing/SKILL.md): ", "2. `split-k` (skills/split-k/SKILL.md): ",
                           "Offered because: REASON-split-k", ".claude/skills/", "`APPLIED_SKILLS`"})
    EXPECT_NE(p.find(want), std::string::npos) << want;
  EXPECT_EQ(p.find("### `coalescing`"), std::string::npos) << "the agent reads the cards themselves";
}

}  // namespace
}  // namespace kpilot

namespace kpilot {
namespace {

// A CUDA task's prompts name the CUTLASS headers its candidates compile against, with their folder
// (an agent compiling by hand needs it); a host task's, or one with cutlass = false, do not.
TEST(CutlassInPrompts, TheCompileCommandNamesTheHeadersOfACudaTask) {
  auto cuda = LoadTask(testing::SourceDir() / "examples" / "cuda" / "gemm_tc");
  ASSERT_TRUE(cuda.ok()) << cuda.status().ToString();
  ProposalContext c;
  c.task = &*cuda;
  PromptOptions o;
  o.cutlass_version = "4.2.0";
  o.cutlass_include = "/opt/cutlass/include";
  const std::string with = BuildPromptVars(*cuda, c, o)["compile_command"];
  EXPECT_NE(with.find("CUTLASS 4.2.0's headers on the include path (-I /opt/cutlass/include)"), std::string::npos)
      << with;
  EXPECT_NE(with.find("#include <cute/tensor.hpp>"), std::string::npos) << with;
  EXPECT_EQ(BuildPromptVars(*cuda, c, PromptOptions{})["compile_command"].find("CUTLASS"), std::string::npos);

  // What the generators set: the toolchain's own lookup, for a CUDA task that allows it.
  PromptOptions found;
  SetCandidateCutlass(*cuda, &found);
  EXPECT_EQ(found.cutlass_version, FindCutlass(DefaultToolSearch()) ? FindCutlass(DefaultToolSearch())->version : "");
  Task off = *cuda;
  off.cutlass = false;
  PromptOptions none;
  SetCandidateCutlass(off, &none);
  EXPECT_EQ(none.cutlass_version, "");
  auto host = LoadTask(testing::SourceDir() / "examples" / "host" / "saxpy");
  ASSERT_TRUE(host.ok());
  SetCandidateCutlass(*host, &none);
  EXPECT_EQ(none.cutlass_include, "");
}

}  // namespace
}  // namespace kpilot
