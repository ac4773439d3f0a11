// Checks mined skill cards for the lineage tests: with the skill library's validation
// (ParseSkillCard of src/skills/skills.h), and, where Python 3 with PyYAML is present, with
// bench/skills_check.py's per-card rules, which also give back the front matter as YAML parsed it.
// The library-wide checks of that script (every suggested skill has a card, the README's card
// table) do not apply to a folder of mined cards, so its check_card is called per card.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "core/subprocess.h"
#include "skills/skills.h"
#include "test_paths.h"

namespace kpilot::testing {

// The problems the skill library's loader (LoadSkillDir: ParseSkillCard on each <id>/SKILL.md,
// skipping rejected/) finds in the cards of `dir`, as text.
inline std::vector<std::string> SkillLibraryProblems(const std::filesystem::path& dir) {
  auto ids = KnownFindingIds({SourceDir() / "examples" / "tools"});
  EXPECT_TRUE(ids.ok()) << ids.status().message();
  std::vector<SkillProblem> problems;
  auto cards = LoadSkillDir({dir, SkillOrigin::kCommandLine}, {ids.ok() ? *ids : std::set<std::string>{}}, &problems);
  EXPECT_TRUE(cards.ok()) << cards.status().message();
  std::vector<std::string> out;
  for (const auto& p : problems) out.push_back(p.ToString());
  return out;
}

inline bool HavePyYaml() {
  ProcessSpec spec;
  spec.argv = {"python3", "-c", "import yaml"};
  spec.timeout_s = 30;
  auto r = SystemProcessRunner().Run(spec);
  return r.ok() && r->Succeeded();
}

// The problems bench/skills_check.py finds in the cards of `dir` (one string each), and each
// card's front matter as YAML parsed it (JSON text, by folder name) in *parsed when given.
inline std::vector<std::string> SkillsCheckProblems(const std::filesystem::path& dir, std::string* parsed = nullptr) {
  const std::string program = R"py(
import json, os, sys
sys.path.insert(0, os.path.join(sys.argv[1], "bench"))
import skills_check as sc, yaml
features = sc.vocabulary(os.path.join(sys.argv[1], "skills", "README.md"))
findings = sc.finding_ids()
errors, parsed = [], {}
for folder in sorted(os.listdir(sys.argv[2])):
    path = os.path.join(sys.argv[2], folder, "SKILL.md")
    head, body = sc.split_card(path)
    fm = yaml.safe_load(head)
    parsed[folder] = fm
    sc.check_card(path, folder, fm, body, findings, features, errors)
print(json.dumps({"errors": errors, "parsed": parsed}))
)py";
  ProcessSpec spec;
  spec.argv = {"python3", "-c", program, SourceDir().string(), dir.string()};
  spec.timeout_s = 60;
  auto r = SystemProcessRunner().Run(spec);
  EXPECT_TRUE(r.ok() && r->Succeeded()) << (r.ok() ? r->err : r.status().ToString());
  if (!r.ok() || !r->Succeeded()) return {"skills_check.py did not run"};
  auto j = nlohmann::json::parse(r->out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r->out;
  if (j.is_discarded()) return {"unreadable output"};
  if (parsed) *parsed = j["parsed"].dump();
  return j["errors"].get<std::vector<std::string>>();
}

}  // namespace kpilot::testing
