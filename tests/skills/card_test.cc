// Parsing and validating SKILL.md files: the built-in cards, a good fixture, and bad cards that
// must each be reported with file, line, field and fix.
#include <gtest/gtest.h>

#include "core/fs.h"
#include "skills_test_util.h"

namespace kpilot {
namespace {

namespace fs = std::filesystem;
using testing::SkillFixtures;
using testing::SourceDir;
using testing::TreeValidation;

TEST(SkillCard, EveryBuiltinCardLoadsAndValidates) {
  std::vector<SkillProblem> problems;
  auto cards = LoadSkillDir({SourceDir() / "skills", SkillOrigin::kBuiltin}, TreeValidation(), &problems);
  ASSERT_TRUE(cards.ok()) << cards.status().ToString();
  EXPECT_TRUE(problems.empty()) << FormatProblems(problems);
  ASSERT_EQ(cards->size(), 28u);
  for (const auto& c : *cards) {
    EXPECT_EQ(c.id, c.source.parent_path().filename().string());
    EXPECT_EQ(c.name, c.id);
    EXPECT_FALSE(c.provides.empty()) << c.id;
    EXPECT_FALSE(c.preconditions.empty()) << c.id;
    EXPECT_TRUE(c.effect_measured.empty()) << c.id << ": built-in cards claim no measured effect";
    EXPECT_NE(c.body.find("## Recipe"), std::string::npos) << c.id;
    EXPECT_EQ(c.origin, SkillOrigin::kBuiltin);
    for (const auto& mv : c.params) {
      EXPECT_FALSE(mv.trigger.empty()) << c.id;
      EXPECT_EQ(mv.value.has_value(), mv.move == MoveDirection::kSet) << c.id << " " << mv.when;
    }
  }
}

TEST(SkillCard, GoodFixtureFillsEveryField) {
  std::vector<SkillProblem> problems;
  auto cards = LoadSkillDir({SkillFixtures() / "good", SkillOrigin::kCommandLine}, TreeValidation(), &problems);
  ASSERT_TRUE(cards.ok());
  ASSERT_TRUE(problems.empty()) << FormatProblems(problems);
  ASSERT_EQ(cards->size(), 1u);
  const SkillCard& c = cards->front();
  EXPECT_EQ(c.id, "tiny-tiles");
  EXPECT_EQ(c.name, "tiny-tiles");
  EXPECT_EQ(c.intent, "Stage reused operand tiles in shared memory.");
  EXPECT_EQ(c.anchor, "The main k-loop of the kernel.");
  EXPECT_NE(c.description.find("small test card"), std::string::npos);
  ASSERT_EQ(c.preconditions.size(), 1u);
  EXPECT_EQ(c.preconditions[0].what, "Operands are reused by several threads of a block.");
  EXPECT_NE(c.preconditions[0].why.find("saves no traffic"), std::string::npos);
  EXPECT_EQ(c.effect_expected, "Fewer global loads per output element.");
  ASSERT_EQ(c.effect_measured.size(), 1u);
  EXPECT_EQ(c.effect_measured[0].provenance["task"], "examples/cuda/sgemm");
  EXPECT_EQ(c.effect_measured[0].provenance["run"], 7);
  EXPECT_DOUBLE_EQ(c.effect_measured[0].fields["speedup"].get<double>(), 1.5);
  EXPECT_EQ(c.risks, std::vector<std::string>{"Bank conflicts in the shared tile."});
  EXPECT_EQ(c.scope_cases, (std::vector<std::string>{"GEMM", "convolution"}));
  EXPECT_EQ(c.scope_languages, std::vector<std::string>{"cuda"});
  EXPECT_EQ(c.scope_platforms, (std::vector<std::string>{"sm_80", "sm_90a"}));
  EXPECT_EQ(c.requires_features, std::vector<std::string>{"coalesced-global"});
  EXPECT_EQ(c.provides, std::vector<std::string>{"smem-tile"});
  EXPECT_EQ(c.conflicts, std::vector<std::string>{"tma"});
  EXPECT_EQ(c.trigger_findings, (std::vector<std::string>{"low-cache-hit-rate", "dominant-warp-stall"}));
  EXPECT_EQ(c.trigger_classes, std::vector<std::string>{"memory-bound"});
  ASSERT_EQ(c.params.size(), 3u);
  EXPECT_EQ(c.params[0].param, "tile");
  EXPECT_EQ(c.params[0].move, MoveDirection::kUp);
  EXPECT_EQ(c.params[0].trigger, "low-cache-hit-rate");
  EXPECT_FALSE(c.params[0].condition);
  EXPECT_EQ(c.params[1].move, MoveDirection::kSet);
  EXPECT_EQ(c.params[1].value, "2");
  ASSERT_TRUE(c.params[1].condition);
  EXPECT_EQ(c.params[1].condition->key, "");
  EXPECT_EQ(c.params[1].condition->alternatives, (std::vector<std::string>{"long_scoreboard", "lg_throttle"}));
  ASSERT_TRUE(c.params[2].condition);
  EXPECT_EQ(c.params[2].trigger, "occupancy-limiter");
  EXPECT_EQ(c.params[2].condition->key, "limiter");
  EXPECT_EQ(c.params[2].condition->alternatives, std::vector<std::string>{"shared memory"});
  EXPECT_EQ(c.body.rfind("\n# Tiny tiles", 0), 0u);
  EXPECT_EQ(c.origin, SkillOrigin::kCommandLine);
  nlohmann::json j = ToJson(c);
  EXPECT_EQ(j["params"][1]["value"], "2");
  EXPECT_EQ(j["origin"], "--skills");
}

struct BadCard {
  const char* folder;
  int line;
  const char* field;
  const char* message;  // a part of the message
  const char* fix;      // a part of the fix
};

void PrintTo(const BadCard& b, std::ostream* os) { *os << b.folder << ":" << b.line; }

class BadCards : public ::testing::TestWithParam<BadCard> {};

TEST_P(BadCards, ReportFileLineFieldAndFix) {
  const BadCard& b = GetParam();
  std::vector<SkillProblem> problems;
  fs::path dir = SkillFixtures() / "bad" / b.folder;
  auto cards = LoadSkillDir({dir, SkillOrigin::kCommandLine}, TreeValidation(), &problems);
  ASSERT_TRUE(cards.ok());
  EXPECT_TRUE(cards->empty());
  ASSERT_FALSE(problems.empty());
  bool found = false;
  for (const auto& p : problems) {
    EXPECT_EQ(p.file, dir / "SKILL.md");
    if (p.line == b.line && p.field == b.field && p.message.find(b.message) != std::string::npos &&
        p.fix.find(b.fix) != std::string::npos)
      found = true;
  }
  EXPECT_TRUE(found) << "expected line " << b.line << " field " << b.field << " \"" << b.message << "\"; got\n"
                     << FormatProblems(problems);
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, BadCards,
    ::testing::Values(BadCard{"missing-field", 1, "anchor", "missing", "add `anchor:`"},
                      BadCard{"wrong-id", 6, "id", "differs from the folder name `wrong-id`", "rename the folder"},
                      BadCard{"unknown-feature", 24, "provides", "unknown feature `smem-tiles`",
                              "did you mean `smem-tile`?"},
                      BadCard{"unknown-finding", 27, "triggers.findings", "unknown finding id `scalar-loads`",
                              "kpilot profile --list-tools"},
                      BadCard{"bad-move", 31, "params[0].move", "unknown move `sideways`", "use up, down or set"},
                      BadCard{"bad-move", 39, "params[2].value", "only a `set` move takes a value", "remove `value:`"},
                      // The bracket opened on line 20 is found unclosed on line 21.
                      BadCard{"yaml-syntax", 21, "front matter", "YAML syntax: end of sequence flow not found",
                              "fix the YAML at column"},
                      BadCard{"section-order", 44, "body", "`## Preconditions` comes before `## Recipe` (line 48)",
                              "order the sections"}),
    [](const ::testing::TestParamInfo<BadCard>& param_info) {
      std::string name = param_info.param.folder;
      for (char& c : name)
        if (c == '-') c = '_';
      return name + "_" + std::to_string(param_info.param.line);
    });

TEST(SkillCard, EveryProblemOfACardIsReported) {
  std::vector<SkillProblem> problems;
  auto cards =
      LoadSkillDir({SkillFixtures() / "bad" / "many-problems", SkillOrigin::kCommandLine}, TreeValidation(), &problems);
  ASSERT_TRUE(cards.ok());
  ASSERT_EQ(problems.size(), 3u) << FormatProblems(problems);
  EXPECT_EQ(problems[0].field, "anchor");
  EXPECT_EQ(problems[1].field, "provides");
  EXPECT_EQ(problems[2].field, "triggers.classes");
  EXPECT_NE(problems[2].fix.find("did you mean `memory-bound`?"), std::string::npos) << problems[2].ToString();
  // The printed form names file, line, field and fix.
  std::string text = problems[1].ToString();
  EXPECT_NE(text.find("many-problems/SKILL.md:23: field `provides`: unknown feature `smem-tiles`; did you mean"),
            std::string::npos)
      << text;
}

TEST(SkillCard, WholeBadFolderReportsEveryCard) {
  std::vector<SkillProblem> problems;
  auto cards = LoadSkillDir({SkillFixtures() / "bad", SkillOrigin::kCommandLine}, TreeValidation(), &problems);
  ASSERT_TRUE(cards.ok());
  EXPECT_TRUE(cards->empty());
  std::set<std::string> files;
  for (const auto& p : problems) files.insert(p.file.parent_path().filename().string());
  EXPECT_EQ(files.size(), 8u) << FormatProblems(problems);
}

// Parses `text` as the card of folder `tiny-tiles`; returns the problems.
std::vector<SkillProblem> Problems(const std::string& text) {
  std::vector<SkillProblem> problems;
  ParseSkillCard(text, "tiny-tiles/SKILL.md", "tiny-tiles", TreeValidation(), &problems);
  return problems;
}

std::string GoodText() {
  auto text = ReadFile(SkillFixtures() / "good" / "tiny-tiles" / "SKILL.md");
  EXPECT_TRUE(text.ok());
  return text.ok() ? *text : "";
}

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

TEST(SkillCard, FrontMatterDelimiters) {
  auto p = Problems("name: x\n");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].line, 1);
  EXPECT_NE(p[0].message.find("does not start with a `---` line"), std::string::npos);
  p = Problems("---\nname: x\n");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NE(p[0].message.find("no closing `---` line"), std::string::npos);
  p = Problems("---\n- a\n- b\n---\n");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NE(p[0].message.find("is not a mapping"), std::string::npos);
}

TEST(SkillCard, GoodTextHasNoProblem) {
  EXPECT_TRUE(Problems(GoodText()).empty()) << FormatProblems(Problems(GoodText()));
}

TEST(SkillCard, DescriptionLimitDuplicateKeysAndUnknownFields) {
  std::string text = Replace(GoodText(), "intent: Stage", "description2: x\nintent: Stage");
  auto p = Problems(text);
  ASSERT_EQ(p.size(), 1u) << FormatProblems(p);
  EXPECT_EQ(p[0].field, "description2");
  EXPECT_EQ(p[0].message, "unknown field");
  EXPECT_NE(p[0].fix.find("did you mean `description`?"), std::string::npos);

  p = Problems(Replace(GoodText(), "intent: Stage", "anchor: twice\nintent: Stage"));
  ASSERT_EQ(p.size(), 1u) << FormatProblems(p);
  EXPECT_EQ(p[0].field, "anchor");
  EXPECT_EQ(p[0].message, "given twice");
  EXPECT_EQ(p[0].line, 9);  // the second anchor: line 7 holds the first

  std::string long_text =
      Replace(GoodText(), "description: >-\n", "description: " + std::string(1025, 'x') + "\nx: >-\n");
  p = Problems(long_text);
  bool saw = false;
  for (const auto& q : p) saw |= q.field == "description" && q.message.find("1025 characters") != std::string::npos;
  EXPECT_TRUE(saw) << FormatProblems(p);
}

TEST(SkillCard, ScopeElementTypesAreTaskSpellings) {
  std::string platforms = "  platforms: [sm_80, sm_90a]\n";
  ASSERT_NE(GoodText().find(platforms), std::string::npos);
  auto p = Problems(Replace(GoodText(), platforms, platforms + "  dtypes: [bf16, half]\n"));
  ASSERT_EQ(p.size(), 1u) << FormatProblems(p);
  EXPECT_EQ(p[0].field, "scope.dtypes");
  EXPECT_NE(p[0].message.find("`half`"), std::string::npos) << FormatProblems(p);
  EXPECT_TRUE(Problems(Replace(GoodText(), platforms, platforms + "  dtypes: [f16, bf16, fp8-e4m3]\n")).empty());
  EXPECT_EQ(SkillDTypes().size(), 12u);
}

TEST(SkillCard, MoveWhenMustNameAFindingOrClassAndOneCondition) {
  auto p = Problems(Replace(GoodText(), "when: low-cache-hit-rate", "when: low-cache-hitrate"));
  ASSERT_EQ(p.size(), 1u) << FormatProblems(p);
  EXPECT_EQ(p[0].field, "params[0].when");
  EXPECT_NE(p[0].fix.find("did you mean `low-cache-hit-rate`?"), std::string::npos);
  p = Problems(Replace(GoodText(), "when: low-cache-hit-rate", "when: memory-bound"));
  EXPECT_TRUE(p.empty()) << FormatProblems(p);
  p = Problems(Replace(GoodText(), "when: low-cache-hit-rate", "when: \"low-cache-hit-rate (a\""));
  ASSERT_EQ(p.size(), 1u) << FormatProblems(p);
  EXPECT_NE(p[0].message.find("one parenthesized group"), std::string::npos);
  p = Problems(Replace(GoodText(), "    move: set\n    value: \"2\"\n", "    move: set\n"));
  ASSERT_EQ(p.size(), 1u) << FormatProblems(p);
  EXPECT_EQ(p[0].field, "params[1].value");
  EXPECT_NE(p[0].message.find("needs a value"), std::string::npos);
  p = Problems(Replace(GoodText(), "param: tile\n", "param: tiles\n"));
  ASSERT_EQ(p.size(), 1u) << FormatProblems(p);
  EXPECT_EQ(p[0].field, "params[0].param");
}

TEST(SkillCard, FeatureListsAndBodyRules) {
  auto p = Problems(Replace(GoodText(), "conflicts: [tma]", "conflicts: [smem-tile]"));
  ASSERT_EQ(p.size(), 1u) << FormatProblems(p);
  EXPECT_EQ(p[0].field, "conflicts");
  p = Problems(Replace(GoodText(), "provides: [smem-tile]", "provides: []"));
  ASSERT_EQ(p.size(), 1u) << FormatProblems(p);
  EXPECT_EQ(p[0].field, "provides");
  p = Problems(
      Replace(GoodText(), "## Example configuration (example, not a precondition)", "## Example configuration"));
  ASSERT_EQ(p.size(), 1u) << FormatProblems(p);
  EXPECT_NE(p[0].message.find("not a precondition"), std::string::npos);
  p = Problems(Replace(GoodText(), "```cuda", "```"));
  ASSERT_EQ(p.size(), 1u) << FormatProblems(p);
  EXPECT_NE(p[0].message.find("no ```cuda fragment"), std::string::npos);
  p = Problems(Replace(GoodText(), "1. Load", "Load"));
  ASSERT_EQ(p.size(), 1u) << FormatProblems(p);
  EXPECT_NE(p[0].message.find("no numbered edits"), std::string::npos);
  p = Problems(Replace(GoodText(), "## Before / After\n", ""));
  ASSERT_EQ(p.size(), 1u) << FormatProblems(p);
  EXPECT_EQ(p[0].message, "missing section `## Before / After`");
}

// A plain Agent Skill (name and description only) is a text-only card; its rules are Agent Skills'.
TEST(SkillCard, PlainAgentSkillIsTextOnly) {
  const std::string text =
      "---\nname: tiny-tiles\ndescription: Tile small matrices in shared memory.\n  Second line.\nlicense: MIT\n---\n"
      "Any Markdown at all.\n";
  std::vector<SkillProblem> problems;
  auto card = ParseSkillCard(text, "tiny-tiles/SKILL.md", "tiny-tiles", TreeValidation(), &problems);
  ASSERT_TRUE(card) << FormatProblems(problems);
  EXPECT_TRUE(card->text_only);
  EXPECT_EQ(card->id, "tiny-tiles");
  EXPECT_EQ(card->intent, "Tile small matrices in shared memory. Second line.");
  EXPECT_EQ(card->body, "Any Markdown at all.\n");
  EXPECT_TRUE(card->trigger_findings.empty());
}

TEST(SkillCard, PlainAgentSkillProblems) {
  // Its name must be its folder's.
  auto p = Problems("---\nname: other-name\ndescription: x\n---\nbody\n");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].field, "name");
  EXPECT_NE(p[0].message.find("differs from the folder name"), std::string::npos);
  // Both fields are required.
  p = Problems("---\nname: tiny-tiles\n---\nbody\n");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].field, "description");
  // Agent Skills' 1024 characters.
  p = Problems("---\nname: tiny-tiles\ndescription: " + std::string(1100, 'x') + "\n---\n");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NE(p[0].message.find("1024"), std::string::npos);
  // One kpilot field makes it a kpilot card, validated whole: every other field is then missing.
  p = Problems("---\nname: tiny-tiles\ndescription: x\nintent: Do it.\n---\nbody\n");
  EXPECT_GT(p.size(), 5u);
}

}  // namespace
}  // namespace kpilot
