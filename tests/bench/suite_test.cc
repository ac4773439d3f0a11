// Suite discovery on constructed folders of each layout, and on the team's examples.
#include <gtest/gtest.h>

#include "bench/bench.h"
#include "core/fs.h"
#include "test_paths.h"

namespace kpilot {
namespace {

namespace fs = std::filesystem;

class SuiteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = TempDir::Create("kpilot-suite-");
    ASSERT_TRUE(d.ok());
    dir_.emplace(std::move(d).value());
  }
  fs::path Touch(const fs::path& rel, const std::string& text = "x\n") {
    fs::path p = dir_->path() / rel;
    EXPECT_TRUE(WriteFileAtomic(p, text).ok());
    return p;
  }
  fs::path root() const { return dir_->path(); }
  std::optional<TempDir> dir_;
};

std::vector<std::string> Ids(const std::vector<BenchProblem>& ps) {
  std::vector<std::string> out;
  for (const auto& p : ps) out.push_back(p.id);
  return out;
}

TEST_F(SuiteTest, KernelBenchLevelsAndProblemsInNumericOrder) {
  Touch("kb/level1/10_Conv.py");
  Touch("kb/level1/2_ReLU.py");
  Touch("kb/level1/notes.txt");
  Touch("kb/level1/helper.py");  // no <n>_ prefix: not a problem
  Touch("kb/level10/1_Big.py");
  Touch("kb/level2/1_Fused.py");
  Touch("kb/candidates/2_ReLU/native.cu");
  Touch("kb/candidates/2_ReLU/model_new.py");
  Touch("kb/level2/candidates/1_Fused/native.cu");
  auto s = DiscoverSuite(root() / "kb");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->format, SuiteFormat::kKernelBench);
  EXPECT_EQ(s->name, "kb");
  EXPECT_EQ(Ids(s->problems),
            (std::vector<std::string>{"level1/2_ReLU", "level1/10_Conv", "level2/1_Fused", "level10/1_Big"}));
  EXPECT_EQ(s->problems[0].level, "1");
  EXPECT_EQ(s->problems[0].stem, "2_ReLU");
  EXPECT_EQ(s->problems[0].native.filename(), "native.cu");
  EXPECT_EQ(s->problems[0].model_new.filename(), "model_new.py");
  EXPECT_TRUE(s->problems[1].native.empty());
  EXPECT_EQ(s->problems[2].native, root() / "kb/level2/candidates/1_Fused/native.cu");
}

TEST_F(SuiteTest, FlashInferDefinitionsByOpType) {
  Touch("fi/definitions/rmsnorm/rmsnorm_h512.json", "{}");
  Touch("fi/definitions/gemm/gemm_n128.json", "{}");
  Touch("fi/definitions/gemm/README.md");
  Touch("fi/workloads/gemm/gemm_n128.jsonl", "{}");
  Touch("fi/native/rmsnorm_h512.cu");
  auto s = DiscoverSuite(root() / "fi");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->format, SuiteFormat::kFlashInfer);
  EXPECT_EQ(Ids(s->problems), (std::vector<std::string>{"gemm/gemm_n128", "rmsnorm/rmsnorm_h512"}));
  EXPECT_EQ(s->problems[1].level, "rmsnorm");
  EXPECT_EQ(s->problems[1].native.filename(), "rmsnorm_h512.cu");
  EXPECT_TRUE(s->problems[0].native.empty());
}

TEST_F(SuiteTest, TaskFoldersFlatAreOneLevelNestedAreLevels) {
  Touch("flat/saxpy/task.toml");
  Touch("flat/sgemm/task.toml");
  Touch("flat/docs/readme.md");
  auto flat = DiscoverSuite(root() / "flat");
  ASSERT_TRUE(flat.ok()) << flat.status().ToString();
  EXPECT_EQ(flat->format, SuiteFormat::kTaskFolders);
  EXPECT_EQ(Ids(flat->problems), (std::vector<std::string>{"all/saxpy", "all/sgemm"}));

  Touch("nested/easy/saxpy/task.toml");
  Touch("nested/hard/sgemm/task.toml");
  auto nested = DiscoverSuite(root() / "nested");
  ASSERT_TRUE(nested.ok());
  EXPECT_EQ(Ids(nested->problems), (std::vector<std::string>{"easy/saxpy", "hard/sgemm"}));
  EXPECT_EQ(nested->problems[1].level, "hard");
}

TEST_F(SuiteTest, AFolderWithoutProblemsSaysWhatItExpected) {
  Touch("empty/readme.md");
  auto s = DiscoverSuite(root() / "empty");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("level<N>/<n>_<Name>.py"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("task.toml"), std::string::npos);
  EXPECT_FALSE(DiscoverSuite(root() / "missing").ok());
}

TEST_F(SuiteTest, LevelsAndGlobSelect) {
  Touch("kb/level1/1_ReLU.py");
  Touch("kb/level1/2_GELU.py");
  Touch("kb/level2/1_Fused.py");
  auto s = DiscoverSuite(root() / "kb");
  ASSERT_TRUE(s.ok());
  auto l1 = SelectProblems(*s, {"1"}, "");
  ASSERT_TRUE(l1.ok());
  EXPECT_EQ(Ids(*l1), (std::vector<std::string>{"level1/1_ReLU", "level1/2_GELU"}));
  auto named = SelectProblems(*s, {"level2"}, "");
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(Ids(*named), (std::vector<std::string>{"level2/1_Fused"}));
  auto glob = SelectProblems(*s, {}, "1_*");
  ASSERT_TRUE(glob.ok());
  EXPECT_EQ(Ids(*glob), (std::vector<std::string>{"level1/1_ReLU", "level2/1_Fused"}));
  auto by_id = SelectProblems(*s, {}, "level1/*GELU");
  ASSERT_TRUE(by_id.ok());
  EXPECT_EQ(Ids(*by_id), (std::vector<std::string>{"level1/2_GELU"}));
  auto bad = SelectProblems(*s, {"3"}, "");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("has levels 1, 2"), std::string::npos) << bad.status().message();
}

TEST_F(SuiteTest, EvalOnlyCandidatesByStem) {
  Touch("kb/level1/1_ReLU.py");
  Touch("kb/level1/2_GELU.py");
  Touch("kb/level1/3_Tanh.py");
  Touch("kb/level1/4_Exp.py");
  Touch("kb/level1/5_Log.py");
  Touch("cands/1_ReLU.cu");
  Touch("cands/level1/2_GELU.py");
  Touch("cands/3_Tanh/other.txt");
  Touch("cands/3_Tanh/native.cu");
  Touch("cands/3_Tanh/model_new.py");
  Touch("cands/4_Exp/mine.cu");
  Touch("cands/5_Log/a.cu");
  Touch("cands/5_Log/b.cu");
  auto s = DiscoverSuite(root() / "kb");
  ASSERT_TRUE(s.ok());
  auto find = [&](size_t i) { return FindEvalCandidate(root() / "cands", s->problems[i]); };
  EXPECT_EQ(find(0)->filename(), "1_ReLU.cu");
  EXPECT_EQ(find(1)->filename(), "2_GELU.py");
  EXPECT_EQ(find(2)->filename(), "native.cu") << "native.cu before model_new.py";
  EXPECT_EQ(find(3)->filename(), "mine.cu") << "the folder's only candidate file";
  EXPECT_FALSE(find(4).ok()) << "two candidates: which one?";
  Touch("kb/level1/6_Sin.py");
  s = DiscoverSuite(root() / "kb");
  auto none = FindEvalCandidate(root() / "cands", s->problems[5]);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("6_Sin"), std::string::npos);
}

TEST_F(SuiteTest, EvalOnlyCandidatesThatNameNoProblemAreListed) {
  Touch("kb/level1/1_ReLU.py");
  Touch("kb/level2/7_Conv.py");
  Touch("cands/1_ReLU.cu");
  Touch("cands/1_Relu.py");  // misspelt
  Touch("cands/level2/7_Conv/model_new.py");
  Touch("cands/level2/8_Pool.py");  // no such problem
  Touch("cands/99_Gone/native.cu");
  Touch("cands/notes.txt");  // not a candidate file
  Touch("cands/.cache/x.py");
  auto s = DiscoverSuite(root() / "kb");
  ASSERT_TRUE(s.ok());
  std::vector<std::string> names;
  for (const auto& p : UnmatchedEvalCandidates(root() / "cands", *s))
    names.push_back(fs::relative(p, root() / "cands").string());
  EXPECT_EQ(names, (std::vector<std::string>{"1_Relu.py", "99_Gone", "level2/8_Pool.py"}));
}

// The bundled suites (examples/kernelbench, examples/flashinfer, examples/host).
TEST(BundledSuites, KernelBenchExampleHasLevelsAndNativeCandidates) {
  fs::path kb = testing::SourceDir() / "examples" / "kernelbench";
  if (!fs::exists(kb)) GTEST_SKIP() << "examples/kernelbench is missing from this checkout";
  auto s = DiscoverSuite(kb);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->format, SuiteFormat::kKernelBench);
  EXPECT_GE(s->problems.size(), 10u) << "the bundled KernelBench-style suite has at least 10 problems";
  int native = 0;
  for (const auto& p : s->problems) native += !p.native.empty();
  EXPECT_GT(native, 0);
  auto l1 = SelectProblems(*s, {"1"}, "");
  ASSERT_TRUE(l1.ok());
  EXPECT_FALSE(l1->empty());
}

TEST(BundledSuites, FlashInferExampleHasDefinitions) {
  fs::path fi = testing::SourceDir() / "examples" / "flashinfer";
  if (!fs::exists(fi / "definitions")) GTEST_SKIP() << "examples/flashinfer is missing from this checkout";
  auto s = DiscoverSuite(fi);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->format, SuiteFormat::kFlashInfer);
  EXPECT_GE(s->problems.size(), 3u);
}

TEST(BundledSuites, HostExamplesAreATaskFolderSuite) {
  auto s = DiscoverSuite(testing::SourceDir() / "examples" / "host");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->format, SuiteFormat::kTaskFolders);
  EXPECT_GE(s->problems.size(), 3u);
  for (const auto& p : s->problems) EXPECT_EQ(p.level, "all");
}

}  // namespace
}  // namespace kpilot
