// Params a candidate declares in a /* kpilot-params */ block: parsed with task.toml's rules, errors
// naming the candidate file and its own line numbers.
#include <gtest/gtest.h>

#include "core/fs.h"
#include "task/loader.h"

namespace kpilot {
namespace {

TEST(CandidateParams, ParsesTheBlockInDeclarationOrder) {
  std::string src =
      "// ReLU, vectorized\n"
      "/* kpilot-params\n"
      "VEC = [1, 2, 4]\n"
      "BLOCK = [64, 128, 256]\n"
      "SCALE = [0.5, 2.0]\n"
      "constraints = [\"BLOCK * VEC <= 512\"]\n"
      "*/\n"
      "#include <kpilot/kernel.h>\n";
  auto p = ParseCandidateParams(src, "relu.cu");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_TRUE(p->declared);
  EXPECT_EQ(p->line, 2);
  ASSERT_EQ(p->params.size(), 3u);
  EXPECT_EQ(p->params[0].name, "VEC");
  EXPECT_EQ(p->params[0].line, 3);
  EXPECT_EQ(p->params[1].name, "BLOCK");
  EXPECT_EQ(p->params[1].values, (std::vector<std::string>{"64", "128", "256"}));
  EXPECT_EQ(p->params[2].values, (std::vector<std::string>{"0.5", "2.0"}));
  EXPECT_EQ(p->constraints, (std::vector<std::string>{"BLOCK * VEC <= 512"}));
}

TEST(CandidateParams, NoBlockDeclaresNothing) {
  auto p = ParseCandidateParams("/* a plain comment */\n__global__ void k() {}\n", "k.cu");
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->declared);
  EXPECT_TRUE(p->params.empty());
}

TEST(CandidateParams, ErrorsNameTheCandidateLineFieldAndFix) {
  std::string src =
      "#include <kpilot/kernel.h>\n"
      "/* kpilot-params\n"
      "BLOCK = []\n"
      "2VEC = [1, 2]\n"
      "TILE = [8, 8]\n"
      "constraints = [\"BLOCK * WIDTH <= 1024\"]\n"
      "*/\n";
  auto p = ParseCandidateParams(src, "relu.cu");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidInput);
  const std::string& m = p.status().message();
  EXPECT_NE(m.find("relu.cu:3: params.BLOCK: no values given — list the values to try"), std::string::npos) << m;
  EXPECT_NE(m.find("relu.cu:4: params.2VEC: \"2VEC\" is not a C identifier"), std::string::npos) << m;
  EXPECT_NE(m.find("relu.cu:5: params.TILE[1]: value 8 is listed twice"), std::string::npos) << m;
  EXPECT_NE(m.find("relu.cu:6: constraints[0]: unknown name \"WIDTH\""), std::string::npos) << m;
}

TEST(CandidateParams, BadTomlUnclosedAndEmptyBlocksAreErrors) {
  auto syntax = ParseCandidateParams("\n/* kpilot-params\nBLOCK = [64,\n*/\n", "a.cu");
  ASSERT_FALSE(syntax.ok());
  EXPECT_NE(syntax.status().message().find("a.cu:"), std::string::npos);
  EXPECT_NE(syntax.status().message().find("kpilot-params:"), std::string::npos) << syntax.status().message();
  auto unclosed = ParseCandidateParams("/* kpilot-params\nBLOCK = [64]\n", "b.cu");
  ASSERT_FALSE(unclosed.ok());
  EXPECT_NE(unclosed.status().message().find("b.cu:1: kpilot-params: the block comment is never closed"),
            std::string::npos)
      << unclosed.status().message();
  auto empty = ParseCandidateParams("/*kpilot-params\n*/\n", "c.cu");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("declares no params"), std::string::npos);
}

TEST(CandidateParams, ATaskWithoutParamsAdoptsTheCandidates) {
  auto dir = TempDir::Create("kpilot-candidate-params-");
  ASSERT_TRUE(dir.ok());
  auto cand = dir->path() / "k.cu";
  ASSERT_TRUE(WriteFileAtomic(cand, "/* kpilot-params\nBLOCK = [64, 128]\n*/\n").ok());
  Task task;
  ASSERT_TRUE(AdoptCandidateParams(&task, cand).ok());
  ASSERT_EQ(task.params.size(), 1u);
  EXPECT_EQ(task.params[0].name, "BLOCK");
  // The task's own params win.
  Task declared;
  declared.params = {TunableParam{"VEC", {"1", "2"}, 3}};
  ASSERT_TRUE(AdoptCandidateParams(&declared, cand).ok());
  ASSERT_EQ(declared.params.size(), 1u);
  EXPECT_EQ(declared.params[0].name, "VEC");
  Task bare;
  EXPECT_EQ(AdoptCandidateParams(&bare, dir->path() / "missing.cu").code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace kpilot
