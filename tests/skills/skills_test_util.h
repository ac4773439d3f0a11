// Shared pieces of the skills tests: the validation options of this tree and a folder of cards.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "skills/skills.h"
#include "test_paths.h"

namespace kpilot::testing {

// The finding ids of the built-in tools and of examples/tools/*.toml, as kpilot skills uses them.
inline ValidationOptions TreeValidation() {
  auto ids = KnownFindingIds({SourceDir() / "examples" / "tools"});
  EXPECT_TRUE(ids.ok()) << ids.status().ToString();
  return ValidationOptions{ids.ok() ? *ids : std::set<std::string>{}};
}

inline std::filesystem::path SkillFixtures() { return SourceDir() / "tests" / "fixtures" / "skills"; }

}  // namespace kpilot::testing
