// The triggers and params moves of a skill card's front matter (card_reader.h): finding ids and
// roofline classes, and each move's param, direction, value and `when` condition.
#include <algorithm>
#include <regex>

#include "skills/card_reader.h"
#include "skills/text.h"

namespace kpilot::card_internal {

void CardReader::ReadTriggers(const YAML::Node& n, SkillCard* card) {
  int line = Line(n, root_line_);
  if (!n.IsMap()) {
    Problem(line, "triggers", "must be a mapping {findings, classes}", "write `findings: […]` and `classes: […]`");
    return;
  }
  auto keys = Keys(n, "triggers", {"findings", "classes"}, {}, line);
  if (keys.count("findings")) {
    if (auto v = TextList(keys["findings"], "triggers.findings", line, true)) {
      card->trigger_findings = *v;
      CheckKnown(keys["findings"], *v, "triggers.findings", FindingIds(), "finding id", "kpilot profile --list-tools");
    }
  }
  if (keys.count("classes")) {
    if (auto v = TextList(keys["classes"], "triggers.classes", line, true)) {
      card->trigger_classes = *v;
      CheckKnown(keys["classes"], *v, "triggers.classes", RooflineClasses(), "class", "the roofline classes");
    }
  }
  if (keys.count("findings") && keys.count("classes") && card->trigger_findings.empty() &&
      card->trigger_classes.empty() && keys["findings"].IsSequence() && keys["classes"].IsSequence())
    Problem(line, "triggers", "no finding and no class", "name the findings or classes that call for the card");
}

std::optional<ParamMove> CardReader::ReadMove(const YAML::Node& n, const std::string& field) {
  int line = Line(n, root_line_);
  if (!n.IsMap()) {
    Problem(line, field, "must be a mapping {param, move, when, value (for set)}", "write `- param: block` …");
    return std::nullopt;
  }
  auto keys = Keys(n, field, {"param", "move", "when"}, {"value"}, line);
  ParamMove mv;
  bool ok = keys.count("param") && keys.count("move") && keys.count("when");
  if (keys.count("param")) {
    auto p = Text(keys["param"], field + ".param", line);
    const auto& roles = ParamRoles();
    if (p && std::find(roles.begin(), roles.end(), *p) == roles.end() && !IsUpperParam(*p)) {
      Problem(Line(keys["param"], line), field + ".param", "`" + *p + "` is neither a param role nor a param name",
              "use a role of docs/generate.md (" + JoinQuoted(roles) + ") or one UPPER_CASE param name");
      p.reset();
    }
    if (p) mv.param = *p;
    ok = ok && p.has_value();
  }
  if (keys.count("move")) {
    auto m = Text(keys["move"], field + ".move", line);
    if (m && *m == "up")
      mv.move = MoveDirection::kUp;
    else if (m && *m == "down")
      mv.move = MoveDirection::kDown;
    else if (m && *m == "set")
      mv.move = MoveDirection::kSet;
    else {
      if (m)
        Problem(Line(keys["move"], line), field + ".move", "unknown move `" + *m + "`",
                "use up, down or set (with value)");
      ok = false;
    }
  }
  if (keys.count("value")) {
    if (auto v = Text(keys["value"], field + ".value", line))
      mv.value = Trim(*v);
    else
      ok = false;
  }
  if (ok && mv.move == MoveDirection::kSet && !mv.value) {
    Problem(line, field + ".value", "a `set` move needs a value", "add `value: …`");
    ok = false;
  }
  if (ok && mv.move != MoveDirection::kSet && mv.value) {
    Problem(Line(keys["value"], line), field + ".value", "only a `set` move takes a value",
            "remove `value:` or make the move `set`");
    ok = false;
  }
  if (keys.count("when")) {
    auto w = Text(keys["when"], field + ".when", line);
    if (!w) return std::nullopt;
    int at = Line(keys["when"], line);
    mv.when = Trim(*w);
    size_t cut = mv.when.find_first_of(" \t(");
    mv.trigger = mv.when.substr(0, cut);
    std::string rest = cut == std::string::npos ? "" : Trim(mv.when.substr(cut));
    const auto& classes = RooflineClasses();
    mv.trigger_is_class = std::find(classes.begin(), classes.end(), mv.trigger) != classes.end();
    if (!mv.trigger_is_class && !options_.finding_ids.count(mv.trigger)) {
      std::vector<std::string> known = FindingIds();
      known.insert(known.end(), classes.begin(), classes.end());
      std::optional<std::string> near = ClosestWord(mv.trigger, known);
      Problem(at, field + ".when", "must start with a finding id or a class name, got `" + mv.trigger + "`",
              near ? "did you mean `" + *near + "`?" : "see kpilot profile --list-tools for finding ids");
      ok = false;
    }
    if (!rest.empty()) {
      if (rest.front() != '(' || rest.back() != ')' || std::count(rest.begin(), rest.end(), '(') != 1 ||
          std::count(rest.begin(), rest.end(), ')') != 1) {
        Problem(at, field + ".when", "`" + mv.when + "`: the condition must be one parenthesized group",
                "write `FINDING (condition)`, e.g. `occupancy-limiter (limiter: shared memory)`");
        return std::nullopt;
      }
      MoveCondition c;
      c.text = Trim(rest.substr(1, rest.size() - 2));
      std::string values = c.text;
      if (size_t colon = c.text.find(':'); colon != std::string::npos) {
        c.key = Trim(c.text.substr(0, colon));
        values = c.text.substr(colon + 1);
      }
      c.alternatives = SplitAlternatives(values);
      if (c.alternatives.empty() ||
          std::any_of(c.alternatives.begin(), c.alternatives.end(), [](const std::string& a) { return a.empty(); })) {
        Problem(at, field + ".when", "`" + mv.when + "`: empty condition", "write `(a)`, `(a or b)` or `(key: value)`");
        return std::nullopt;
      }
      mv.condition = std::move(c);
    }
  }
  if (!ok) return std::nullopt;
  return mv;
}

void CardReader::ReadParams(const YAML::Node& n, SkillCard* card) {
  if (!n.IsSequence()) {
    Problem(Line(n, root_line_), "params", "must be a list",
            "list moves `- param: … move: … when: …`, or `[]` when params cannot realize the technique");
    return;
  }
  for (size_t i = 0; i < n.size(); ++i)
    if (auto mv = ReadMove(n[i], "params[" + std::to_string(i) + "]")) card->params.push_back(std::move(*mv));
}

}  // namespace kpilot::card_internal
