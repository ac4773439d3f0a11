// The `folder:DIR` generator: file-name order, sidecars, exhaustion, and errors that name the
// folder or file and the fix.
#include "generate/folder_generator.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/fs.h"

namespace kpilot {
namespace {

namespace fs = std::filesystem;

Task HostTask() {
  Task t;
  t.name = "saxpy";
  t.backend = Backend::kHost;
  t.params = {{"VEC", {"8", "16"}}};
  return t;
}

class Replay : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::Create("kpilot-replay-test-");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    dir_ = std::make_unique<TempDir>(std::move(*dir));
  }
  void Write(const std::string& name, const std::string& text) {
    ASSERT_TRUE(WriteFileAtomic(dir_->path() / name, text).ok());
  }
  std::string Spec() const { return "folder:" + dir_->path().string(); }
  Result<std::vector<Draft>> Next(Generator& p, int k, int64_t parent = 0) {
    ProposalContext ctx;
    ctx.k = k;
    ctx.parent_node = parent;
    ctx.parent_source = "// parent";
    return p.Propose(ctx).get();
  }
  std::unique_ptr<TempDir> dir_;
};

TEST_F(Replay, ProposesFilesInNameOrderWithSidecarsUntilExhausted) {
  Write("b_second.cpp", "// b");
  Write("a_first.cpp", "// a");
  Write("c_third.cpp", "// c");
  Write("a_first.json", R"({"params": {"VEC": 16, "ALPHA": 0.5, "MODE": "fast"},
                            "summary": "vectorize by 16", "finding": "scalar-global-loads"})");
  Write("c_third.cpp.json", R"({"summary": "third"})");
  Write("notes.txt", "not a candidate");
  Write("kernel.cu", "// wrong extension for a host task");
  Write(".hidden.cpp", "// hidden");

  auto made = MakeGenerator(Spec(), HostTask());
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  Generator& p = **made;
  EXPECT_EQ(p.name(), Spec());

  auto first = Next(p, 2);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(first->size(), 2u);
  const Draft& a = (*first)[0];
  EXPECT_EQ(a.source_name, "a_first.cpp");
  EXPECT_EQ(a.source, "// a");
  EXPECT_EQ(a.params, (ParamValues{{"VEC", "16"}, {"ALPHA", "0.5"}, {"MODE", "fast"}}));
  EXPECT_EQ(a.summary, "vectorize by 16");
  EXPECT_EQ(a.targeted_finding, "scalar-global-loads");
  const Draft& b = (*first)[1];
  EXPECT_EQ(b.source_name, "b_second.cpp");
  EXPECT_TRUE(b.params.empty());
  EXPECT_EQ(b.summary, "folder: b_second.cpp");
  EXPECT_EQ(b.targeted_finding, "");

  // The parent does not matter: the next unused file comes next.
  auto second = Next(p, 5, /*parent=*/7);
  ASSERT_TRUE(second.ok());
  ASSERT_EQ(second->size(), 1u);
  EXPECT_EQ((*second)[0].source_name, "c_third.cpp");
  EXPECT_EQ((*second)[0].summary, "third");

  auto done = Next(p, 3);
  ASSERT_TRUE(done.ok());
  EXPECT_TRUE(done->empty());
}

TEST_F(Replay, CudaTasksReplayCuFiles) {
  Write("k.cu", "// cuda");
  Write("k.cpp", "// host");
  Task task = HostTask();
  task.backend = Backend::kCuda;
  auto entries = ReadDraftFolder(dir_->path(), task);
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  ASSERT_EQ(entries->size(), 1u);
  EXPECT_EQ(entries->front().source.filename(), "k.cu");
}

TEST_F(Replay, MissingFolderNamesItAndTheFix) {
  auto r = MakeGenerator(Spec() + "/nope", HostTask());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find((dir_->path() / "nope").string()), std::string::npos);
  EXPECT_NE(r.status().message().find("folder:DIR"), std::string::npos);

  auto empty_spec = MakeGenerator("folder:", HostTask());
  ASSERT_FALSE(empty_spec.ok());
  EXPECT_EQ(empty_spec.status().code(), StatusCode::kInvalidInput);
}

TEST_F(Replay, FolderWithoutCandidatesSaysWhichExtension) {
  Write("readme.md", "nothing here");
  auto r = MakeGenerator(Spec(), HostTask());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(r.status().message().find(dir_->path().string()), std::string::npos);
  EXPECT_NE(r.status().message().find("no candidate files"), std::string::npos);
  EXPECT_NE(r.status().message().find(".cpp"), std::string::npos);
}

TEST_F(Replay, BadJsonSidecarNamesFileAndLine) {
  Write("a.cpp", "// a");
  Write("a.json", "{\n  \"params\": {\"VEC\": 16},\n  \"summary\": \"oops\n}\n");
  auto r = MakeGenerator(Spec(), HostTask());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(r.status().message().find((dir_->path() / "a.json").string() + ":3:"), std::string::npos)
      << r.status().message();
}

TEST_F(Replay, SidecarSchemaErrors) {
  Write("a.cpp", "// a");
  struct Case {
    std::string json, expect;
  };
  for (const Case& c :
       {Case{R"({"params": {"VEC": true}})", "params.VEC: expected a string or number"},
        Case{R"({"params": [1, 2]})", "params: expected an object"},
        Case{R"({"summary": 3})", "summary: expected a string"},
        Case{R"({"sumary": "typo"})", "unknown key \"sumary\""}, Case{R"([1])", "expected a JSON object"}}) {
    Write("a.json", c.json);
    auto r = ReadDraftFolder(dir_->path(), HostTask());
    ASSERT_FALSE(r.ok()) << c.json;
    EXPECT_NE(r.status().message().find(c.expect), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("a.json"), std::string::npos) << r.status().message();
  }
  Write("a.cpp.json", "{}");
  auto both = ReadDraftFolder(dir_->path(), HostTask());
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("keep one"), std::string::npos) << both.status().message();
}

TEST_F(Replay, VanishedCandidateIsAnError) {
  Write("a.cpp", "// a");
  auto made = MakeGenerator(Spec(), HostTask());
  ASSERT_TRUE(made.ok());
  fs::remove(dir_->path() / "a.cpp");
  auto r = Next(**made, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("a.cpp"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace kpilot
