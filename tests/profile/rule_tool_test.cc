// User tools from TOML rule files: a valid file loads and fires; every kind of mistake is reported
// with file:line, the field and the fix, all of them at once.
#include <fstream>

#include <gtest/gtest.h>

#include "core/fs.h"
#include "profile/rule_tool.h"

namespace kpilot {
namespace {

namespace fs = std::filesystem;

constexpr char kDram[] = "dram__throughput.avg.pct_of_peak_sustained_elapsed";
constexpr char kL2[] = "lts__t_sector_hit_rate.pct";

constexpr char kValid[] = R"(# Two rules.
[[rule]]
id = "l2-thrashing"
description = "L2 misses while DRAM is busy"
classes = ["memory", "mixed"]
metrics = ["lts__t_sector_hit_rate.pct", "dram__throughput.avg.pct_of_peak_sustained_elapsed"]
condition = "lts__t_sector_hit_rate.pct < 50 && dram__throughput.avg.pct_of_peak_sustained_elapsed > 60"
severity = "(60 - lts__t_sector_hit_rate_pct) / 60"
guidance = "L2 hits only {lts__t_sector_hit_rate.pct}% while DRAM runs at {dram__throughput_avg_pct_of_peak_sustained_elapsed}% {{of peak}}"
skills = ["shared-memory-tiling"]

[[rule]]
id = "dram-busy"
classes = ["all"]
metrics = ["dram__throughput.avg.pct_of_peak_sustained_elapsed"]
condition = "dram__throughput.avg.pct_of_peak_sustained_elapsed > 1e1 * 7"
severity = 0.25
guidance = "DRAM at {dram__throughput.avg.pct_of_peak_sustained_elapsed}%"
)";

void Write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

const Tool* Find(const std::vector<std::unique_ptr<Tool>>& tools, const std::string& id) {
  for (const auto& t : tools) {
    if (t->id() == id) return t.get();
  }
  return nullptr;
}

TEST(RuleTools, ValidFileLoadsAndFires) {
  auto dir = TempDir::Create("kpilot-rules-");
  ASSERT_TRUE(dir.ok());
  fs::path file = dir->path() / "tools.toml";
  Write(file, kValid);
  auto tools = LoadRuleTools(file);
  ASSERT_TRUE(tools.ok()) << tools.status().message();
  ASSERT_EQ(tools->size(), 2u);

  const Tool* l2 = Find(*tools, "l2-thrashing");
  ASSERT_NE(l2, nullptr);
  EXPECT_EQ(l2->description(), "L2 misses while DRAM is busy");
  EXPECT_EQ(l2->classes(), (std::vector<Bottleneck>{Bottleneck::kMemory, Bottleneck::kMixed}));
  EXPECT_EQ(l2->metrics(), (std::vector<std::string>{kL2, kDram}));

  ProfileContext ctx;
  ctx.metrics = {{kL2, 21.456}, {kDram, 73.21}};
  auto f = l2->Run(ctx);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->id, "l2-thrashing");
  EXPECT_EQ(f->guidance, "L2 hits only 21.5% while DRAM runs at 73.2% {of peak}");
  EXPECT_NEAR(f->severity, (60 - 21.456) / 60, 1e-9);
  EXPECT_EQ(f->evidence[kL2].get<double>(), 21.456);
  EXPECT_EQ(f->evidence["rule"].get<std::string>(), file.string() + ":2");
  EXPECT_EQ(f->skills, std::vector<std::string>{"shared-memory-tiling"});

  const Tool* busy = Find(*tools, "dram-busy");
  ASSERT_NE(busy, nullptr);
  EXPECT_EQ(busy->classes().size(), 5u);  // "all"
  EXPECT_FALSE(busy->description().empty());
  auto g = busy->Run(ctx);
  ASSERT_TRUE(g);
  EXPECT_DOUBLE_EQ(g->severity, 0.25);
}

TEST(RuleTools, SilentWhenTheConditionFailsOrAMetricIsMissing) {
  auto tools = ParseRuleTools(kValid, "tools.toml");
  ASSERT_TRUE(tools.ok()) << tools.status().message();
  const Tool* l2 = Find(*tools, "l2-thrashing");
  ProfileContext healthy;
  healthy.metrics = {{kL2, 85}, {kDram, 73}};
  EXPECT_FALSE(l2->Run(healthy));
  ProfileContext missing;
  missing.metrics = {{kDram, 95}};  // the L2 hit rate was not collected
  EXPECT_FALSE(l2->Run(missing));
  EXPECT_TRUE(Find(*tools, "dram-busy")->Run(missing));
}

TEST(RuleTools, SeverityExpressionIsClamped) {
  auto tools = ParseRuleTools(R"([[rule]]
id = "x"
classes = ["compute"]
metrics = ["sm__throughput.avg.pct_of_peak_sustained_elapsed"]
condition = "1"
severity = "sm__throughput.avg.pct_of_peak_sustained_elapsed / 10"
guidance = "SM {sm__throughput.avg.pct_of_peak_sustained_elapsed}"
)",
                              "t.toml");
  ASSERT_TRUE(tools.ok()) << tools.status().message();
  ProfileContext ctx;
  ctx.metrics["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = 1234.4;
  auto f = (*tools)[0]->Run(ctx);
  ASSERT_TRUE(f);
  EXPECT_DOUBLE_EQ(f->severity, 1.0);
  EXPECT_EQ(f->guidance, "SM 1234");
  ctx.metrics["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = -3;
  EXPECT_DOUBLE_EQ((*tools)[0]->Run(ctx)->severity, 0.0);
}

TEST(RuleTools, ExpressionNamesReplaceDots) {
  EXPECT_EQ(ExpressionName("lts__t_sector_hit_rate.pct"), "lts__t_sector_hit_rate_pct");
  EXPECT_EQ(ExpressionName("dram__throughput.avg.pct_of_peak_sustained_elapsed"),
            "dram__throughput_avg_pct_of_peak_sustained_elapsed");
}

// The error for `text`, which must fail.
std::string ErrorOf(const std::string& text) {
  auto tools = ParseRuleTools(text, "tools.toml");
  EXPECT_FALSE(tools.ok());
  if (tools.ok()) return "";
  EXPECT_EQ(tools.status().code(), StatusCode::kInvalidInput);
  return tools.status().message();
}

// A valid rule with one line replaced (or added when `replace` is absent).
std::string RuleWith(const std::string& replace, const std::string& line) {
  std::string text = R"([[rule]]
id = "x"
classes = ["memory"]
metrics = ["dram__throughput.avg.pct_of_peak_sustained_elapsed"]
condition = "dram__throughput.avg.pct_of_peak_sustained_elapsed > 80"
severity = 0.5
guidance = "DRAM at {dram__throughput.avg.pct_of_peak_sustained_elapsed}%"
)";
  if (replace.empty()) return text + line + "\n";
  size_t at = text.find(replace + " =");
  size_t end = text.find('\n', at);
  return text.substr(0, at) + line + text.substr(end);
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE((haystack).find(needle), std::string::npos) << "missing \"" << (needle) << "\" in:\n" << (haystack)

TEST(RuleToolErrors, BadToml) {
  std::string e = ErrorOf("[[rule]]\nid = \"x\"\nclasses = [\"memory\"\n");
  EXPECT_CONTAINS(e, "tools.toml:3");
  EXPECT_CONTAINS(e, "syntax");
  EXPECT_CONTAINS(e, "fix the TOML");
}

TEST(RuleToolErrors, UnknownKeySuggestsTheNearestOne) {
  std::string e = ErrorOf(RuleWith("", "conditon = \"1\""));
  EXPECT_CONTAINS(e, "tools.toml:8: rule[0].conditon: unknown key — did you mean \"condition\"?");
  e = ErrorOf("title = \"mine\"\n" + RuleWith("", ""));
  EXPECT_CONTAINS(e, "tools.toml:1: title: unknown key — a rule file holds only [[rule]] tables");
}

TEST(RuleToolErrors, MissingField) {
  std::string text = RuleWith("guidance", "");
  std::string e = ErrorOf(text);
  EXPECT_CONTAINS(e, "tools.toml:1: rule[0].guidance: missing — add guidance = ");
  e = ErrorOf("");
  EXPECT_CONTAINS(e, "tools.toml:1: rule: no rules — add at least one [[rule]] table");
}

TEST(RuleToolErrors, UnknownClass) {
  std::string e = ErrorOf(RuleWith("classes", "classes = [\"memory\", \"comput\"]"));
  EXPECT_CONTAINS(
      e,
      "tools.toml:3: rule[0].classes: unknown class \"comput\" — use compute, memory, latency, launch, mixed or all");
}

TEST(RuleToolErrors, ConditionSyntaxError) {
  std::string e =
      ErrorOf(RuleWith("condition", "condition = \"dram__throughput.avg.pct_of_peak_sustained_elapsed > \""));
  EXPECT_CONTAINS(e, "tools.toml:5: rule[0].condition: cannot parse");
  EXPECT_CONTAINS(e, "write a muparser expression");
}

TEST(RuleToolErrors, UnknownVariableNamesTheSecondRuleAndItsLine) {
  std::string text = RuleWith("", "") + R"(
[[rule]]
id = "y"
classes = ["memory"]
metrics = ["dram__throughput.avg.pct_of_peak_sustained_elapsed"]
condition = "dram_pct > 80"
guidance = "g"
)";
  std::string e = ErrorOf(text);
  EXPECT_CONTAINS(
      e, "tools.toml:14: rule[1].condition: unknown name \"dram_pct\" — use metric names declared in metrics = [...]");
  // A metric name written with its dots that was not declared is reported as written.
  e = ErrorOf(RuleWith("condition", "condition = \"lts__t_sector_hit_rate.pct < 5\""));
  EXPECT_CONTAINS(e, "rule[0].condition: unknown name \"lts__t_sector_hit_rate.pct\"");
}

TEST(RuleToolErrors, SeverityOutOfRangeOrMistyped) {
  std::string e = ErrorOf(RuleWith("severity", "severity = 1.5"));
  EXPECT_CONTAINS(e, "tools.toml:6: rule[0].severity: 1.5 is out of range — use a number in [0, 1]");
  e = ErrorOf(RuleWith("severity", "severity = -1"));
  EXPECT_CONTAINS(e, "rule[0].severity: -1 is out of range");
  e = ErrorOf(RuleWith("severity", "severity = true"));
  EXPECT_CONTAINS(e, "rule[0].severity: expected a number or an expression string, got true");
  e = ErrorOf(RuleWith("severity", "severity = \"bogus / 2\""));
  EXPECT_CONTAINS(e, "rule[0].severity: unknown name \"bogus\"");
}

TEST(RuleToolErrors, GuidanceTemplate) {
  std::string e = ErrorOf(RuleWith("guidance", "guidance = \"hit rate {l2_hit}\""));
  EXPECT_CONTAINS(e, "tools.toml:7: rule[0].guidance: unknown name \"l2_hit\" in {l2_hit} — use metric names declared");
  e = ErrorOf(RuleWith("guidance", "guidance = \"open {brace\""));
  EXPECT_CONTAINS(e, "rule[0].guidance: unclosed \"{\"");
}

TEST(RuleToolErrors, IdsMustBeKebabCaseUniqueAndNotBuiltIn) {
  std::string e = ErrorOf(RuleWith("id", "id = \"My_Rule\""));
  EXPECT_CONTAINS(e, "tools.toml:2: rule[0].id: \"My_Rule\" is not kebab-case");
  e = ErrorOf(RuleWith("id", "id = \"dram-near-peak\""));
  EXPECT_CONTAINS(e, "rule[0].id: \"dram-near-peak\" is a built-in tool's id — choose another id");
  e = ErrorOf(RuleWith("", "") + RuleWith("", ""));
  EXPECT_CONTAINS(e, "tools.toml:10: rule[1].id: \"x\" is already defined at tools.toml:1");
}

TEST(RuleToolErrors, MistypedFields) {
  std::string e = ErrorOf(RuleWith("metrics", "metrics = \"dram__bytes.sum\""));
  EXPECT_CONTAINS(e, "tools.toml:4: rule[0].metrics: expected a list of strings, got string \"dram__bytes.sum\"");
  e = ErrorOf(RuleWith("metrics", "metrics = [\"dram bytes\"]"));
  EXPECT_CONTAINS(e, "rule[0].metrics: \"dram bytes\" is not a metric name");
  e = ErrorOf(RuleWith("classes", "classes = [3]"));
  EXPECT_CONTAINS(e, "rule[0].classes[0]: expected a string, got integer 3");
}

TEST(RuleToolErrors, AllProblemsAreCollectedInLineOrder) {
  std::string text = R"([[rule]]
id = "x"
classes = ["nope"]
metrics = ["dram__throughput.avg.pct_of_peak_sustained_elapsed"]
condition = "dram_pct > 80"
severity = 2
guidance = "g"
)";
  std::string e = ErrorOf(text);
  size_t classes = e.find("tools.toml:3: rule[0].classes");
  size_t condition = e.find("tools.toml:5: rule[0].condition");
  size_t severity = e.find("tools.toml:6: rule[0].severity");
  ASSERT_NE(classes, std::string::npos) << e;
  ASSERT_NE(condition, std::string::npos) << e;
  ASSERT_NE(severity, std::string::npos) << e;
  EXPECT_LT(classes, condition);
  EXPECT_LT(condition, severity);
  EXPECT_EQ(std::count(e.begin(), e.end(), '\n'), 2);
}

TEST(RuleToolsFromDirs, EveryTomlButTaskTomlInEachDirectory) {
  auto dir = TempDir::Create("kpilot-rules-");
  ASSERT_TRUE(dir.ok());
  Write(dir->path() / "a.toml", kValid);
  Write(dir->path() / "task.toml", "name = \"not a rule file\"\n");
  Write(dir->path() / "notes.txt", "ignored");
  fs::create_directory(dir->path() / "user");
  Write(dir->path() / "user" / "b.toml", RuleWith("id", "id = \"user-rule\""));

  auto tools = LoadRuleToolsFromDirs({dir->path(), dir->path() / "user", dir->path() / "absent"});
  ASSERT_TRUE(tools.ok()) << tools.status().message();
  ASSERT_EQ(tools->size(), 3u);
  EXPECT_EQ((*tools)[0]->id(), "l2-thrashing");
  EXPECT_EQ((*tools)[2]->id(), "user-rule");
}

TEST(RuleToolsFromDirs, ProblemsInSeveralFilesAndDuplicatesAcrossFiles) {
  auto dir = TempDir::Create("kpilot-rules-");
  ASSERT_TRUE(dir.ok());
  Write(dir->path() / "a.toml", kValid);
  Write(dir->path() / "b.toml", RuleWith("id", "id = \"dram-busy\""));
  Write(dir->path() / "c.toml", RuleWith("severity", "severity = 7"));
  auto tools = LoadRuleToolsFromDirs({dir->path()});
  ASSERT_FALSE(tools.ok());
  const std::string& e = tools.status().message();
  EXPECT_CONTAINS(e, (dir->path() / "b.toml").string() + ":2: rule[0].id: \"dram-busy\" is already defined at " +
                         (dir->path() / "a.toml").string() + ":12");
  EXPECT_CONTAINS(e, (dir->path() / "c.toml").string() + ":6: rule[0].severity: 7 is out of range");

  Write(dir->path() / "plain", "");
  tools = LoadRuleToolsFromDirs({dir->path() / "plain"});
  ASSERT_FALSE(tools.ok());
  EXPECT_CONTAINS(tools.status().message(), "not a directory");
}

TEST(RuleTools, MissingFileIsNotFound) {
  auto tools = LoadRuleTools("/nonexistent/kpilot/tools.toml");
  ASSERT_FALSE(tools.ok());
  EXPECT_EQ(tools.status().code(), StatusCode::kNotFound);
}

TEST(RuleTools, ShippedExamplesLoad) {
  auto tools = LoadRuleToolsFromDirs({fs::path(KPILOT_SOURCE_DIR) / "examples" / "tools"});
  ASSERT_TRUE(tools.ok()) << tools.status().message();
  EXPECT_GE(tools->size(), 2u);
}

}  // namespace
}  // namespace kpilot
