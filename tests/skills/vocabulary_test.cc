// The C++ vocabularies agree with skills/README.md and with the profiler's class names.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "core/fs.h"
#include "profile/profile.h"
#include "skills_test_util.h"

namespace kpilot {
namespace {

// The rows `| `name` | meaning |` of the table under "## Feature vocabulary".
std::vector<std::pair<std::string, std::string>> ReadmeFeatures() {
  auto text = ReadFile(testing::SourceDir() / "skills" / "README.md");
  EXPECT_TRUE(text.ok());
  if (!text.ok()) return {};
  std::istringstream in(*text);
  static const std::regex kRow(R"(^\|\s*`([a-z0-9-]+)`\s*\|\s*(.*?)\s*\|\s*$)");
  std::vector<std::pair<std::string, std::string>> rows;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) inside = line == "## Feature vocabulary";
    std::smatch m;
    if (inside && std::regex_match(line, m, kRow)) rows.emplace_back(m[1], m[2]);
  }
  return rows;
}

TEST(SkillVocabulary, FeatureTableMatchesReadme) {
  auto readme = ReadmeFeatures();
  const auto& table = FeatureVocabulary();
  ASSERT_EQ(readme.size(), table.size()) << "skills/README.md and src/skills/vocabulary.cc list different features";
  for (size_t i = 0; i < table.size(); ++i) {
    EXPECT_EQ(readme[i].first, table[i].name) << "row " << i;
    EXPECT_EQ(readme[i].second, table[i].meaning) << table[i].name;
  }
  EXPECT_TRUE(IsFeature("smem-tile"));
  EXPECT_FALSE(IsFeature("smem-tiles"));
}

TEST(SkillVocabulary, ClassesAreTheProfilersRooflineClasses) {
  ASSERT_EQ(RooflineClasses().size(), 5u);
  for (const auto& c : RooflineClasses()) {
    auto b = ParseBottleneck(c);
    ASSERT_TRUE(b) << c;
    EXPECT_EQ(BottleneckName(*b), c);
  }
}

TEST(SkillVocabulary, FindingIdsIncludeBuiltinToolsAndExampleRules) {
  auto ids = KnownFindingIds({testing::SourceDir() / "examples" / "tools"});
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  EXPECT_TRUE(ids->count("dominant-warp-stall"));  // built-in tool
  EXPECT_TRUE(ids->count("l2-miss-dram-busy"));    // examples/tools/l2_locality.toml
  EXPECT_FALSE(ids->count("scalar-loads"));
  auto builtin_only = KnownFindingIds({});
  ASSERT_TRUE(builtin_only.ok());
  EXPECT_FALSE(builtin_only->count("l2-miss-dram-busy"));
}

}  // namespace
}  // namespace kpilot
