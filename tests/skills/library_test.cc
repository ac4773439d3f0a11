// Loading a library from several folders: overrides, user folders, failures.
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/fs.h"
#include "skills_test_util.h"
#include "scoped_env.h"

namespace kpilot {
namespace {

namespace fs = std::filesystem;
using testing::SkillFixtures;
using testing::SourceDir;
using testing::TreeValidation;

class SkillLibraryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = TempDir::Create("kpilot-skills-lib-");
    ASSERT_TRUE(d.ok());
    tmp_.emplace(std::move(*d));
  }
  // Writes a copy of the built-in card `id` into tmp/<folder>/<id>/SKILL.md with its intent changed.
  fs::path OverrideCard(const std::string& folder, const std::string& id, const std::string& intent) {
    auto text = ReadFile(SourceDir() / "skills" / id / "SKILL.md");
    EXPECT_TRUE(text.ok());
    std::string t = *text;
    size_t at = t.find("\nintent: ");
    size_t end = t.find('\n', at + 1);
    t.replace(at, end - at, "\nintent: " + intent);
    fs::path dir = tmp_->path() / folder;
    EXPECT_TRUE(WriteFileAtomic(dir / id / "SKILL.md", t).ok());
    return dir;
  }
  std::optional<TempDir> tmp_;
};

TEST_F(SkillLibraryTest, LaterFoldersOverrideAndAreReported) {
  fs::path user = OverrideCard("user", "coalescing", "User version.");
  fs::path cli = OverrideCard("cli", "coalescing", "Command-line version.");
  auto lib = LoadLibrary({{SourceDir() / "skills", SkillOrigin::kBuiltin},
                          {user, SkillOrigin::kUser},
                          {cli, SkillOrigin::kCommandLine},
                          {SkillFixtures() / "good", SkillOrigin::kCommandLine}},
                         TreeValidation());
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  EXPECT_EQ(lib->cards.size(), 29u);
  const SkillCard* c = lib->Find("coalescing");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->intent, "Command-line version.");
  EXPECT_EQ(c->origin, SkillOrigin::kCommandLine);
  ASSERT_EQ(lib->overrides.size(), 2u);
  EXPECT_EQ(lib->overrides[0].replaced_origin, SkillOrigin::kBuiltin);
  EXPECT_EQ(lib->overrides[0].by_origin, SkillOrigin::kUser);
  EXPECT_EQ(lib->overrides[1].replaced, user / "coalescing" / "SKILL.md");
  EXPECT_EQ(lib->overrides[1].by, cli / "coalescing" / "SKILL.md");
  EXPECT_NE(lib->Find("tiny-tiles"), nullptr);
  EXPECT_EQ(lib->Find("no-such-card"), nullptr);
  EXPECT_TRUE(std::is_sorted(lib->cards.begin(), lib->cards.end(),
                             [](const SkillCard& a, const SkillCard& b) { return a.id < b.id; }));
}

TEST_F(SkillLibraryTest, MissingUserFolderIsSkippedOtherMissingFoldersFail) {
  auto lib =
      LoadLibrary({{SourceDir() / "skills", SkillOrigin::kBuiltin}, {tmp_->path() / "absent", SkillOrigin::kUser}},
                  TreeValidation());
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  EXPECT_EQ(lib->cards.size(), 28u);
  lib = LoadLibrary({{tmp_->path() / "absent", SkillOrigin::kCommandLine}}, TreeValidation());
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(lib.status().message().find("absent does not exist"), std::string::npos) << lib.status().message();
}

TEST_F(SkillLibraryTest, AnInvalidCardFailsTheLoadListingEveryProblem) {
  auto lib = LoadLibrary(
      {{SourceDir() / "skills", SkillOrigin::kBuiltin}, {SkillFixtures() / "bad", SkillOrigin::kCommandLine}},
      TreeValidation());
  ASSERT_FALSE(lib.ok());
  const std::string& m = lib.status().message();
  EXPECT_NE(m.find("unknown-finding/SKILL.md:27: field `triggers.findings`: unknown finding id `scalar-loads`"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("wrong-id/SKILL.md:6: field `id`"), std::string::npos) << m;
  EXPECT_NE(m.find("kpilot skills validate"), std::string::npos) << m;
}

TEST_F(SkillLibraryTest, FolderWithoutSkillFileIsAProblem) {
  fs::create_directories(tmp_->path() / "lib" / "empty-card");
  fs::create_directories(tmp_->path() / "lib" / ".git");
  std::vector<SkillProblem> problems;
  auto cards = LoadSkillDir({tmp_->path() / "lib", SkillOrigin::kUser}, TreeValidation(), &problems);
  ASSERT_TRUE(cards.ok());
  ASSERT_EQ(problems.size(), 1u) << FormatProblems(problems);
  EXPECT_EQ(problems[0].message, "the folder has no SKILL.md");
  EXPECT_EQ(problems[0].file.filename(), "empty-card");
}

TEST_F(SkillLibraryTest, OneCardFolderIsACard) {
  std::vector<SkillProblem> problems;
  auto cards =
      LoadSkillDir({SkillFixtures() / "good" / "tiny-tiles", SkillOrigin::kCommandLine}, TreeValidation(), &problems);
  ASSERT_TRUE(cards.ok());
  EXPECT_TRUE(problems.empty()) << FormatProblems(problems);
  ASSERT_EQ(cards->size(), 1u);
  EXPECT_EQ(cards->front().id, "tiny-tiles");
}

using testing::ScopedEnv;

TEST(SkillDirs, BuiltinThenUserThenCommandLine) {
  {
    ScopedEnv path("KPILOT_SKILLS_PATH", "/a/skills::/b/skills");
    auto dirs = DefaultSkillDirs("/builtin", {"/cli1", "/cli2"});
    ASSERT_EQ(dirs.size(), 5u);
    EXPECT_EQ(dirs[0].path, "/builtin");
    EXPECT_EQ(dirs[0].origin, SkillOrigin::kBuiltin);
    EXPECT_EQ(dirs[1].path, "/a/skills");
    EXPECT_EQ(dirs[2].path, "/b/skills");
    EXPECT_EQ(dirs[2].origin, SkillOrigin::kUser);
    EXPECT_EQ(dirs[4].path, "/cli2");
    EXPECT_EQ(dirs[4].origin, SkillOrigin::kCommandLine);
  }
  ScopedEnv path("KPILOT_SKILLS_PATH", nullptr);
  ScopedEnv home("HOME", "/home/someone");
  auto dirs = DefaultSkillDirs("/builtin", {});
  ASSERT_EQ(dirs.size(), 2u);
  EXPECT_EQ(dirs[1].path, "/home/someone/.config/kpilot/skills");
  EXPECT_EQ(dirs[1].origin, SkillOrigin::kUser);
}

}  // namespace
}  // namespace kpilot
