#include "profile/rule_tool.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

#ifndef TOML_HEADER_ONLY
#define TOML_HEADER_ONLY 1
#endif
#include <toml++/toml.h>

#include "core/fs.h"
#include "profile/tools/tools.h"
#include "task/formula.h"

namespace kpilot {
namespace {

namespace fs = std::filesystem;

constexpr double kDefaultSeverity = 0.5;
constexpr std::string_view kMetricsFix = "use metric names declared in metrics = [...]";

// Problems of one rule file, reported as "SOURCE:LINE: FIELD: problem — fix", sorted by line.
class Problems {
 public:
  explicit Problems(std::string source) : source_(std::move(source)) {}
  void Add(int64_t line, const std::string& field, const std::string& problem, std::string_view fix) {
    std::string text = source_ + ":" + std::to_string(std::max<int64_t>(1, line)) + ": " + field + ": " + problem;
    if (!fix.empty()) text += " — " + std::string(fix);
    entries_.push_back({line, std::move(text)});
  }
  bool empty() const { return entries_.empty(); }
  std::string Joined() const {
    auto sorted = entries_;
    std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::string out;
    for (const auto& [line, text] : sorted) out += (out.empty() ? "" : "\n") + text;
    return out;
  }
  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::vector<std::pair<int64_t, std::string>> entries_;
};

std::string Quote(std::string_view s) { return "\"" + std::string(s) + "\""; }

int64_t LineOf(const toml::node& n) { return n.source().begin.line; }

std::string Describe(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::string:
      return "string " + Quote(n.as_string()->get());
    case toml::node_type::integer:
      return "integer " + std::to_string(n.as_integer()->get());
    case toml::node_type::floating_point:
      return "float " + Num(n.as_floating_point()->get());
    case toml::node_type::boolean:
      return n.as_boolean()->get() ? "true" : "false";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::table:
      return "a table";
    default:
      return "a date/time";
  }
}

bool IsNameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }

// Rewrites every name in `expr` to its ExpressionName, recording how each was written.
// Numbers ("1.5e3") and string literals are copied as they are.
std::string RewriteNames(const std::string& expr, std::map<std::string, std::string>* written) {
  std::string out;
  size_t i = 0;
  while (i < expr.size()) {
    char c = expr[i];
    if (IsNameStart(c)) {
      size_t j = i;
      while (j < expr.size() && IsNameChar(expr[j])) ++j;
      std::string name = expr.substr(i, j - i);
      std::string safe = ExpressionName(name);
      written->emplace(safe, name);
      out += safe;
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '.' && i + 1 < expr.size() && std::isdigit(static_cast<unsigned char>(expr[i + 1])))) {
      size_t j = i;
      while (j < expr.size() && (std::isdigit(static_cast<unsigned char>(expr[j])) || expr[j] == '.')) ++j;
      if (j < expr.size() && (expr[j] == 'e' || expr[j] == 'E')) {
        size_t k = j + 1;
        if (k < expr.size() && (expr[k] == '+' || expr[k] == '-')) ++k;
        if (k < expr.size() && std::isdigit(static_cast<unsigned char>(expr[k]))) {
          j = k;
          while (j < expr.size() && std::isdigit(static_cast<unsigned char>(expr[j]))) ++j;
        }
      }
      out += expr.substr(i, j - i);
      i = j;
    } else if (c == '"') {
      size_t j = expr.find('"', i + 1);
      j = j == std::string::npos ? expr.size() : j + 1;
      out += expr.substr(i, j - i);
      i = j;
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

// A guidance template: literal text and metric names, in order.
struct TemplatePart {
  bool is_name = false;
  std::string text;  // literal text, or the ExpressionName of a metric
};

// Splits `tmpl`; on a problem returns it (and the parts so far are meaningless).
std::optional<std::string> SplitTemplate(const std::string& tmpl, std::vector<TemplatePart>* parts) {
  std::string literal;
  for (size_t i = 0; i < tmpl.size(); ++i) {
    char c = tmpl[i];
    if ((c == '{' || c == '}') && i + 1 < tmpl.size() && tmpl[i + 1] == c) {
      literal += c;
      ++i;
    } else if (c == '{') {
      size_t close = tmpl.find('}', i + 1);
      if (close == std::string::npos) return "unclosed \"{\" at character " + std::to_string(i + 1);
      std::string name = tmpl.substr(i + 1, close - i - 1);
      name.erase(0, name.find_first_not_of(' '));
      name.erase(name.find_last_not_of(' ') + 1);
      if (!literal.empty()) parts->push_back({false, std::move(literal)});
      literal.clear();
      parts->push_back({true, name});
      i = close;
    } else if (c == '}') {
      return "unmatched \"}\" at character " + std::to_string(i + 1);
    } else {
      literal += c;
    }
  }
  if (!literal.empty()) parts->push_back({false, std::move(literal)});
  return std::nullopt;
}

struct Rule {
  std::string id, description;
  std::string where;  // "file:line"
  std::vector<Bottleneck> classes;
  std::vector<std::string> metrics;
  std::string condition;  // rewritten for muparser
  double severity = kDefaultSeverity;
  std::string severity_expr;           // rewritten; "" = the constant above
  std::vector<TemplatePart> guidance;  // names as ExpressionName
  std::vector<std::string> skills;
};

class RuleTool : public Tool {
 public:
  explicit RuleTool(Rule rule) : rule_(std::move(rule)) {}
  std::string id() const override { return rule_.id; }
  std::string description() const override { return rule_.description; }
  std::vector<Bottleneck> classes() const override { return rule_.classes; }
  std::vector<std::string> metrics() const override { return rule_.metrics; }
  const std::string& where() const { return rule_.where; }

  std::optional<Finding> Run(const ProfileContext& ctx) const override {
    std::map<std::string, double> vars;
    nlohmann::json evidence = nlohmann::json::object();
    for (const auto& m : rule_.metrics) {
      auto v = ctx.Metric(m);
      if (!v) return std::nullopt;
      vars[ExpressionName(m)] = *v;
      evidence[m] = *v;
    }
    auto holds = EvaluateFormula(rule_.condition, vars);
    if (!holds.ok() || std::isnan(*holds) || *holds == 0) return std::nullopt;
    double severity = rule_.severity;
    if (!rule_.severity_expr.empty()) {
      // An expression that cannot be evaluated here (NaN, ±inf from 0/0) falls back to the
      // default rather than silencing a rule whose condition held.
      auto s = EvaluateFormula(rule_.severity_expr, vars);
      severity = s.ok() && std::isfinite(*s) ? std::clamp(*s, 0.0, 1.0) : kDefaultSeverity;
    }
    std::string guidance;
    for (const auto& part : rule_.guidance) guidance += part.is_name ? Num(vars[part.text]) : part.text;
    evidence["rule"] = rule_.where;
    Finding f;
    f.id = rule_.id;
    f.tool = rule_.id;
    f.severity = severity;
    f.evidence = std::move(evidence);
    f.guidance = std::move(guidance);
    f.skills = rule_.skills;
    return f;
  }

 private:
  Rule rule_;
};

const std::vector<std::string_view>& RuleKeys() {
  static const std::vector<std::string_view> kKeys = {"id",        "description", "classes",  "metrics",
                                                      "condition", "severity",    "guidance", "skills"};
  return kKeys;
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::string KeyFix(std::string_view key) {
  std::string fix;
  for (auto k : RuleKeys()) {
    if (EditDistance(key, k) <= 2) return "did you mean \"" + std::string(k) + "\"?";
    fix += (fix.empty() ? "" : ", ") + std::string(k);
  }
  return "the keys of a rule are " + fix;
}

bool IsKebabCase(const std::string& s) {
  if (s.empty() || s.front() == '-' || s.back() == '-') return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c == '-' && s[i - 1] != '-');
    if (!ok) return false;
  }
  return true;
}

bool IsMetricName(const std::string& s) {
  return !s.empty() && IsNameStart(s[0]) && std::all_of(s.begin(), s.end(), IsNameChar);
}

// Reads rule fields; each reader reports its own problems and returns nullopt on one.
class RuleReader {
 public:
  RuleReader(const toml::table& table, size_t index, Problems* problems)
      : table_(table), prefix_("rule[" + std::to_string(index) + "]"), problems_(problems) {}

  std::string Field(std::string_view key) const { return prefix_ + "." + std::string(key); }
  int64_t TableLine() const { return LineOf(table_); }
  void Add(int64_t line, std::string_view key, const std::string& problem, std::string_view fix) const {
    problems_->Add(line, Field(key), problem, fix);
  }

  std::optional<std::string> String(std::string_view key, bool required, std::string_view example) const {
    const toml::node* n = table_.get(key);
    if (!n) {
      if (required) Add(TableLine(), key, "missing", "add " + std::string(key) + " = " + std::string(example));
      return std::nullopt;
    }
    if (!n->is_string()) {
      Add(LineOf(*n), key, "expected a string, got " + Describe(*n),
          "write " + std::string(key) + " = " + std::string(example));
      return std::nullopt;
    }
    return n->as_string()->get();
  }

  // A list of strings with the line of each; nullopt (reported) when missing or mistyped.
  std::optional<std::vector<std::pair<std::string, int64_t>>> Strings(std::string_view key, bool required,
                                                                      std::string_view example) const {
    const toml::node* n = table_.get(key);
    if (!n) {
      if (required) Add(TableLine(), key, "missing", "add " + std::string(key) + " = " + std::string(example));
      return std::nullopt;
    }
    const toml::array* a = n->as_array();
    if (!a) {
      Add(LineOf(*n), key, "expected a list of strings, got " + Describe(*n),
          "write " + std::string(key) + " = " + std::string(example));
      return std::nullopt;
    }
    std::vector<std::pair<std::string, int64_t>> out;
    bool ok = true;
    for (size_t i = 0; i < a->size(); ++i) {
      const toml::node& e = *a->get(i);
      if (!e.is_string()) {
        problems_->Add(LineOf(e), Field(key) + "[" + std::to_string(i) + "]", "expected a string, got " + Describe(e),
                       "quote it");
        ok = false;
        continue;
      }
      out.emplace_back(e.as_string()->get(), LineOf(e));
    }
    if (!ok) return std::nullopt;
    return out;
  }

 private:
  const toml::table& table_;
  std::string prefix_;
  Problems* problems_;
};

// Checks an expression field; returns the rewritten expression, or nullopt after reporting.
std::optional<std::string> ReadExpression(const RuleReader& r, std::string_view key, const std::string& expr,
                                          int64_t line, const std::set<std::string>* declared) {
  std::map<std::string, std::string> written;
  std::string rewritten = RewriteNames(expr, &written);
  auto used = FormulaVariables(rewritten);
  if (!used.ok()) {
    // The formula module quotes the expression it saw (the rewritten one); quote the user's.
    std::string why = used.status().message();
    std::string seen = Quote(rewritten) + ": ";
    if (why.rfind(seen, 0) == 0) why = why.substr(seen.size());
    r.Add(line, key, "cannot parse " + Quote(expr) + ": " + why,
          "write a muparser expression, e.g. \"dram__throughput.avg.pct_of_peak_sustained_elapsed > 80\"");
    return std::nullopt;
  }
  bool ok = true;
  if (declared) {  // unknown only when the metrics themselves were readable
    for (const auto& name : *used) {
      if (declared->count(name)) continue;
      std::string as_written = written.count(name) ? written[name] : name;
      r.Add(line, key, "unknown name " + Quote(as_written), kMetricsFix);
      ok = false;
    }
  }
  if (!ok) return std::nullopt;
  return rewritten;
}

std::optional<Rule> ReadRule(const toml::table& table, size_t index, const std::string& source, Problems* problems) {
  RuleReader r(table, index, problems);
  bool ok = true;
  Rule rule;
  rule.where = source + ":" + std::to_string(std::max<int64_t>(1, r.TableLine()));

  for (auto&& [key, node] : table) {
    if (std::find(RuleKeys().begin(), RuleKeys().end(), key.str()) == RuleKeys().end()) {
      r.Add(LineOf(node), key.str(), "unknown key", KeyFix(key.str()));
      ok = false;
    }
  }

  if (auto id = r.String("id", true, "\"my-check\"")) {
    if (!IsKebabCase(*id)) {
      r.Add(LineOf(*table.get("id")), "id", Quote(*id) + " is not kebab-case",
            "use lower-case words joined by '-', e.g. \"l2-thrashing\"");
      ok = false;
    }
    rule.id = *id;
  } else {
    ok = false;
  }
  auto description = r.String("description", false, "\"one line for --list-tools\"");
  if (table.get("description") && !description) ok = false;

  if (auto classes = r.Strings("classes", true, "[\"memory\", \"mixed\"]")) {
    for (const auto& [name, line] : *classes) {
      if (name == "all") {
        for (Bottleneck b : AllClasses()) rule.classes.push_back(b);
      } else if (auto b = ParseBottleneck(name); b && *b != Bottleneck::kUnknown) {
        rule.classes.push_back(*b);
      } else {
        r.Add(line, "classes", "unknown class " + Quote(name), "use compute, memory, latency, launch, mixed or all");
        ok = false;
      }
    }
    if (classes->empty()) {
      r.Add(LineOf(*table.get("classes")), "classes", "empty", "list at least one class, or [\"all\"]");
      ok = false;
    }
  } else {
    ok = false;
  }

  std::set<std::string> declared;  // ExpressionNames of the metrics
  bool metrics_ok = false;
  if (auto metrics = r.Strings("metrics", true, "[\"dram__throughput.avg.pct_of_peak_sustained_elapsed\"]")) {
    metrics_ok = true;
    std::map<std::string, std::string> by_safe;
    for (const auto& [name, line] : *metrics) {
      if (!IsMetricName(name)) {
        r.Add(line, "metrics", Quote(name) + " is not a metric name",
              "use ncu's names: letters, digits, '_' and '.', e.g. \"lts__t_sector_hit_rate.pct\"");
        metrics_ok = false;
        continue;
      }
      auto [it, inserted] = by_safe.emplace(ExpressionName(name), name);
      if (!inserted) {
        if (it->second != name) {
          r.Add(line, "metrics",
                Quote(name) + " and " + Quote(it->second) + " both read as " + Quote(it->first) + " in expressions",
                "keep only one of them");
          metrics_ok = false;
        }
        continue;
      }
      rule.metrics.push_back(name);
      declared.insert(it->first);
    }
    if (metrics->empty()) {
      r.Add(LineOf(*table.get("metrics")), "metrics", "empty", "declare the metrics the condition reads");
      metrics_ok = false;
    }
  }
  if (!metrics_ok) ok = false;
  const std::set<std::string>* names = metrics_ok ? &declared : nullptr;

  if (auto condition = r.String("condition", true, "\"dram__throughput.avg.pct_of_peak_sustained_elapsed > 80\"")) {
    auto rewritten = ReadExpression(r, "condition", *condition, LineOf(*table.get("condition")), names);
    if (rewritten)
      rule.condition = *rewritten;
    else
      ok = false;
  } else {
    ok = false;
  }

  if (const toml::node* n = table.get("severity")) {
    if (n->is_integer() || n->is_floating_point()) {
      double v = n->is_integer() ? static_cast<double>(n->as_integer()->get()) : n->as_floating_point()->get();
      if (!(v >= 0 && v <= 1)) {
        r.Add(LineOf(*n), "severity", Num(v) + " is out of range",
              "use a number in [0, 1], or an expression (its value is clamped to [0, 1])");
        ok = false;
      }
      rule.severity = v;
    } else if (n->is_string()) {
      auto rewritten = ReadExpression(r, "severity", n->as_string()->get(), LineOf(*n), names);
      if (rewritten)
        rule.severity_expr = *rewritten;
      else
        ok = false;
    } else {
      r.Add(LineOf(*n), "severity", "expected a number or an expression string, got " + Describe(*n),
            "write severity = 0.6 or severity = \"(x - 80) / 20\"");
      ok = false;
    }
  }

  if (auto guidance = r.String("guidance", true, "\"what to change and why, with {metric} values\"")) {
    int64_t line = LineOf(*table.get("guidance"));
    if (auto problem = SplitTemplate(*guidance, &rule.guidance)) {
      r.Add(line, "guidance", *problem, "write {metric.name} for a value and {{ }} for literal braces");
      ok = false;
    } else {
      for (auto& part : rule.guidance) {
        if (!part.is_name) continue;
        std::string safe = ExpressionName(part.text);
        if (names && !names->count(safe)) {
          r.Add(line, "guidance", "unknown name " + Quote(part.text) + " in {" + part.text + "}", kMetricsFix);
          ok = false;
        }
        part.text = safe;
      }
    }
  } else {
    ok = false;
  }

  if (auto skills = r.Strings("skills", false, "[\"shared-memory-tiling\"]")) {
    for (const auto& [skill, line] : *skills) {
      if (!IsKebabCase(skill)) {
        r.Add(line, "skills", Quote(skill) + " is not a skill id", "use kebab-case ids, e.g. \"coalescing\"");
        ok = false;
      }
      rule.skills.push_back(skill);
    }
  } else if (table.get("skills")) {
    ok = false;
  }

  rule.description = description ? *description : "user rule " + rule.id + " (" + rule.where + ")";
  if (!ok) return std::nullopt;
  return rule;
}

std::set<std::string> BuiltinIds() {
  std::set<std::string> ids;
  for (const auto& tool : BuiltinTools()) ids.insert(tool->id());
  return ids;
}

// Parses into `tools`, reporting into `problems`; `seen` maps rule ids to where they were defined.
void ParseInto(const std::string& text, Problems* problems, std::map<std::string, std::string>* seen,
               std::vector<std::unique_ptr<Tool>>* tools) {
  toml::table root;
  try {
    root = toml::parse(text, std::string_view(problems->source()));
  } catch (const toml::parse_error& e) {
    problems->Add(e.source().begin.line, "syntax", std::string(e.description()),
                  "fix the TOML at column " + std::to_string(e.source().begin.column) + " (see https://toml.io)");
    return;
  }
  for (auto&& [key, node] : root) {
    if (key.str() != "rule") {
      problems->Add(LineOf(node), std::string(key.str()), "unknown key", "a rule file holds only [[rule]] tables");
    }
  }
  const toml::node* rules = root.get("rule");
  if (!rules) {
    problems->Add(1, "rule", "no rules", "add at least one [[rule]] table");
    return;
  }
  const toml::array* list = rules->as_array();
  if (!list || !list->is_array_of_tables()) {
    problems->Add(LineOf(*rules), "rule", "expected [[rule]] tables, got " + Describe(*rules),
                  "write each rule under a [[rule]] header");
    return;
  }
  static const std::set<std::string> kBuiltinIds = BuiltinIds();
  for (size_t i = 0; i < list->size(); ++i) {
    const toml::table& table = *list->get(i)->as_table();
    auto rule = ReadRule(table, i, problems->source(), problems);
    if (!rule) continue;
    std::string field = "rule[" + std::to_string(i) + "].id";
    int64_t line = table.get("id") ? LineOf(*table.get("id")) : LineOf(table);
    if (kBuiltinIds.count(rule->id)) {
      problems->Add(line, field, Quote(rule->id) + " is a built-in tool's id", "choose another id");
      continue;
    }
    auto [it, inserted] = seen->emplace(rule->id, rule->where);
    if (!inserted) {
      problems->Add(line, field, Quote(rule->id) + " is already defined at " + it->second, "give each rule its own id");
      continue;
    }
    tools->push_back(std::make_unique<RuleTool>(std::move(*rule)));
  }
}

}  // namespace

std::string ExpressionName(const std::string& metric) {
  std::string out = metric;
  std::replace(out.begin(), out.end(), '.', '_');
  return out;
}

Result<std::vector<std::unique_ptr<Tool>>> ParseRuleTools(const std::string& text, const std::string& source) {
  Problems problems(source);
  std::map<std::string, std::string> seen;
  std::vector<std::unique_ptr<Tool>> tools;
  ParseInto(text, &problems, &seen, &tools);
  if (!problems.empty()) return Status::InvalidInput(problems.Joined());
  return tools;
}

Result<std::vector<std::unique_ptr<Tool>>> LoadRuleTools(const fs::path& file) {
  auto text = ReadFile(file);
  if (!text.ok()) return text.status();
  return ParseRuleTools(*text, file.string());
}

Result<std::vector<std::unique_ptr<Tool>>> LoadRuleToolsFromDirs(const std::vector<fs::path>& dirs) {
  std::vector<std::unique_ptr<Tool>> tools;
  std::map<std::string, std::string> seen;
  std::string errors;
  auto add_error = [&errors](const std::string& e) { errors += (errors.empty() ? "" : "\n") + e; };
  for (const auto& dir : dirs) {
    std::error_code ec;
    if (!fs::exists(dir, ec)) continue;
    if (!fs::is_directory(dir, ec)) {
      add_error(dir.string() + ": not a directory — pass a folder of *.toml rule files");
      continue;
    }
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      // The task folder's own task.toml sits beside its rule files; it is not one of them.
      if (entry.path().extension() != ".toml" || entry.path().filename() == "task.toml") continue;
      if (entry.is_regular_file(ec)) files.push_back(entry.path());
    }
    if (ec) {
      add_error(dir.string() + ": cannot list: " + ec.message());
      continue;
    }
    std::sort(files.begin(), files.end());
    for (const auto& file : files) {
      auto text = ReadFile(file);
      if (!text.ok()) {
        add_error(text.status().message());
        continue;
      }
      Problems problems(file.string());
      ParseInto(*text, &problems, &seen, &tools);
      if (!problems.empty()) add_error(problems.Joined());
    }
  }
  if (!errors.empty()) return Status::InvalidInput(errors);
  return tools;
}

}  // namespace kpilot
