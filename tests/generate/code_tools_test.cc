// The model's tools: bounded, ranked search; reads confined to the configured trees.
#include <gtest/gtest.h>
#include <unistd.h>

#include "core/fs.h"
#include "generate/code_tools.h"

namespace kpilot {
namespace {

namespace fs = std::filesystem;

class CodeToolsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = TempDir::Create("kpilot-code-tools-");
    ASSERT_TRUE(d.ok());
    dir_.emplace(std::move(d).value());
    fs::path cutlass = dir_->path() / "cutlass";
    fs::path other = dir_->path() / "other";
    ASSERT_TRUE(WriteFileAtomic(cutlass / "include" / "cute" / "copy.hpp",
                                "// cute copy\nstruct SM80_CP_ASYNC {};\ncp.async here\n")
                    .ok());
    ASSERT_TRUE(WriteFileAtomic(other / "notes.md", "cp.async in other tree\n").ok());
    ASSERT_TRUE(WriteFileAtomic(dir_->path() / "secret.txt", "TOP SECRET\n").ok());
    std::string big;
    for (int i = 1; i <= 1000; ++i) big += "line " + std::to_string(i) + "\n";
    ASSERT_TRUE(WriteFileAtomic(cutlass / "big.h", big).ok());
    ASSERT_EQ(symlink((dir_->path() / "secret.txt").c_str(), (cutlass / "leak.h").c_str()), 0);
    ASSERT_EQ(symlink(dir_->path().c_str(), (cutlass / "up").c_str()), 0);
    CodeToolsOptions o;
    o.roots = {cutlass, other};
    o.max_hits = 5;
    tools_.emplace(o, &ctx_);
  }
  std::optional<TempDir> dir_;
  ProposalContext ctx_;
  std::optional<CodeTools> tools_;
};

TEST_F(CodeToolsTest, SearchRanksTheFirstTreeFirstAndIsBounded) {
  std::string hits = tools_->SearchCode("cp.async", false, "");
  EXPECT_LT(hits.find("cutlass/include/cute/copy.hpp:3:"), hits.find("other/notes.md:1:")) << hits;
  std::string many = tools_->SearchCode("line", false, "");
  EXPECT_NE(many.find("more matches"), std::string::npos) << many;
  EXPECT_EQ(std::count(many.begin(), many.end(), '\n'), 6);  // 5 hits + the "more" line
  EXPECT_NE(tools_->SearchCode("SM\\d+_CP", true, "").find("copy.hpp:2:"), std::string::npos);
  EXPECT_NE(tools_->SearchCode("(", true, "").find("error: bad regex"), std::string::npos);
}

TEST_F(CodeToolsTest, SearchNeverFollowsSymlinksOut) {
  EXPECT_EQ(tools_->SearchCode("TOP SECRET", false, ""), "no matches for \"TOP SECRET\"");
}

TEST_F(CodeToolsTest, ReadFileIsBoundedAndPaged) {
  std::string head = tools_->ReadFile("cutlass/big.h", 1, 10);
  EXPECT_NE(head.find("line 10\n"), std::string::npos);
  EXPECT_EQ(head.find("line 11\n"), std::string::npos);
  EXPECT_NE(head.find("start_line=11"), std::string::npos);
  EXPECT_NE(tools_->ReadFile("cutlass/big.h", 995, 400).find("line 1000"), std::string::npos);
  std::string capped = tools_->ReadFile("cutlass/big.h", 1, 100000);
  EXPECT_NE(capped.find("line 400\n"), std::string::npos);
  EXPECT_EQ(capped.find("line 401\n"), std::string::npos);
}

TEST_F(CodeToolsTest, ReadFileIsConfinedToTheTrees) {
  for (const char* bad : {"cutlass/../secret.txt", "cutlass/leak.h", "cutlass/up/secret.txt", "/etc/passwd",
                          "elsewhere/x.h", "cutlass/include/../../secret.txt"}) {
    std::string r = tools_->ReadFile(bad, 1, 10);
    EXPECT_EQ(r.rfind("error:", 0), 0u) << bad << " → " << r;
    EXPECT_EQ(r.find("TOP SECRET"), std::string::npos) << bad;
  }
  EXPECT_NE(tools_->ReadFile("cutlass/./include/cute/copy.hpp", 1, 10).find("cute copy"), std::string::npos);
}

TEST_F(CodeToolsTest, ProfileCountersOnlyWhenAllowed) {
  Finding f;
  f.id = "tail-effect";
  f.guidance = "fill the last wave";
  f.evidence = {{"last_wave_fill", 0.12}};
  ctx_.findings = {f};
  ctx_.bottleneck = "latency-bound";
  std::string plain = tools_->Call("get_profile", {{"counters", true}});
  EXPECT_NE(plain.find("fill the last wave"), std::string::npos);
  EXPECT_EQ(plain.find("last_wave_fill"), std::string::npos);
  EXPECT_NE(plain.find("--raw-metrics"), std::string::npos);
  CodeToolsOptions o;
  o.raw_metrics = true;
  CodeTools raw(o, &ctx_);
  EXPECT_NE(raw.Call("get_profile", {{"counters", true}}).find("last_wave_fill"), std::string::npos);
  EXPECT_EQ(raw.Call("list_skills", nlohmann::json::object()).rfind("[]", 0), 0u);
  EXPECT_EQ(raw.Call("nope", nlohmann::json::object()).rfind("error:", 0), 0u);
  EXPECT_EQ(raw.Call("search_code", {{"query", "x"}}).rfind("error:", 0), 0u) << "no trees, no search";
}

TEST_F(CodeToolsTest, SkillToolsServeTheOfferedCards) {
  std::string none = tools_->Call("list_skills", nlohmann::json::object());
  EXPECT_EQ(none.rfind("[]", 0), 0u);
  EXPECT_NE(none.find("fits this kernel"), std::string::npos) << none;
  EXPECT_EQ(none.find("installed"), std::string::npos);

  OfferedSkill a;
  a.id = "coalescing";
  a.intent = "Map adjacent threads to adjacent elements.";
  a.reason = "trigger 3.5 (uncoalesced-global-access)";
  a.card_text = "---\nname: coalescing\n---\n\n# Coalescing\n";
  OfferedSkill b;
  b.id = "loop-unrolling";
  b.tune_only = true;
  for (int i = 0; i < 2000; ++i) b.card_text += "recipe line " + std::to_string(i) + "\n";
  ctx_.skills = {a, b};
  auto list = nlohmann::json::parse(tools_->Call("list_skills", nlohmann::json::object()));
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0]["id"], "coalescing");
  EXPECT_EQ(list[0]["intent"], a.intent);
  EXPECT_EQ(list[0]["tune_only"], false);
  EXPECT_EQ(list[0]["reason"], a.reason);
  EXPECT_EQ(list[1]["tune_only"], true);

  EXPECT_EQ(tools_->Call("get_skill", {{"name", "coalescing"}}), a.card_text);
  std::string cut = tools_->Call("get_skill", {{"name", "loop-unrolling"}});
  EXPECT_LE(cut.size(), 24u * 1024 + 100) << "bounded like read_file";
  EXPECT_NE(cut.find("(cut after"), std::string::npos);
  std::string before_note = cut.substr(0, cut.find("… (cut after"));
  EXPECT_EQ(before_note.back(), '\n') << "cut at a line end";
  EXPECT_EQ(b.card_text.rfind(before_note, 0), 0u);

  std::string unknown = tools_->Call("get_skill", {{"name", "split-k"}});
  EXPECT_EQ(unknown.rfind("error:", 0), 0u);
  EXPECT_NE(unknown.find("coalescing, loop-unrolling"), std::string::npos) << unknown;
  EXPECT_EQ(tools_->Call("get_skill", nlohmann::json::object()).rfind("error:", 0), 0u) << "no name";

  ctx_.skills_enabled = false;
  EXPECT_NE(tools_->Call("list_skills", nlohmann::json::object()).find("--skills off"), std::string::npos);
  EXPECT_EQ(tools_->Call("get_skill", {{"name", "coalescing"}}).rfind("error:", 0), 0u);
}

}  // namespace
}  // namespace kpilot
