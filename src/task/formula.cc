#include "task/formula.h"

#include <muParser.h>

#include <charconv>
#include <cmath>
#include <exception>
#include <optional>

namespace kpilot {
namespace {

// muparser reports problems by throwing; every call into it goes through here so that no
// exception leaves this file.
Status ParserFailure(const std::string& expr, const mu::Parser::exception_type& e) {
  std::string msg = "\"" + expr + "\": " + e.GetMsg();
  return Status::InvalidInput(msg);
}

mu::value_type Modulo(mu::value_type a, mu::value_type b) { return std::fmod(a, b); }

// A parser with kpilot's additions to muparser's built-ins: `a % b` (fmod), which tiling
// constraints need ("BLOCK % 32 == 0").
void AddOperators(mu::Parser& parser) { parser.DefineOprt("%", Modulo, mu::prMUL_DIV, mu::oaLEFT); }

Status EmptyExpression() { return Status::InvalidInput("empty expression"); }

// Sets `expr` on `parser` and returns the names of the variables it uses, defined or not.
Result<std::vector<std::string>> UsedVariables(mu::Parser& parser, const std::string& expr) {
  try {
    AddOperators(parser);
    parser.SetExpr(expr);
    std::vector<std::string> names;
    for (const auto& [name, ptr] : parser.GetUsedVar()) names.push_back(name);
    return names;
  } catch (const mu::Parser::exception_type& e) {
    return ParserFailure(expr, e);
  } catch (const std::exception& e) {
    return Status::InvalidInput("\"" + expr + "\": " + e.what());
  }
}

bool IsBlank(const std::string& s) { return s.find_first_not_of(" \t\r\n") == std::string::npos; }

std::optional<double> ParseNumber(const std::string& s) {
  double v = 0;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return v;
}

}  // namespace

Result<std::vector<std::string>> FormulaVariables(const std::string& expr) {
  if (IsBlank(expr)) return EmptyExpression();
  mu::Parser parser;
  return UsedVariables(parser, expr);
}

Result<double> EvaluateFormula(const std::string& expr, const std::map<std::string, double>& vars) {
  if (IsBlank(expr)) return EmptyExpression();
  mu::Parser parser;
  auto used = UsedVariables(parser, expr);
  if (!used.ok()) return used.status();
  // muparser binds variables by address; the copies live as long as the parser.
  std::map<std::string, double> values;
  for (const auto& name : *used) {
    auto it = vars.find(name);
    if (it == vars.end()) {
      return Status::InvalidInput("\"" + expr + "\": unknown variable \"" + name + "\"");
    }
    values[name] = it->second;
  }
  try {
    for (auto& [name, value] : values) parser.DefineVar(name, &value);
    return parser.Eval();
  } catch (const mu::Parser::exception_type& e) {
    return ParserFailure(expr, e);
  } catch (const std::exception& e) {
    return Status::InvalidInput("\"" + expr + "\": " + e.what());
  }
}

Result<bool> ConstraintsHold(const std::vector<std::string>& constraints,
                             const std::map<std::string, std::string>& params) {
  for (const auto& constraint : constraints) {
    auto used = FormulaVariables(constraint);
    if (!used.ok()) return used.status();
    std::map<std::string, double> vars;
    for (const auto& name : *used) {
      auto it = params.find(name);
      if (it == params.end()) {
        return Status::InvalidInput("constraint \"" + constraint + "\": unknown parameter \"" + name + "\"");
      }
      auto number = ParseNumber(it->second);
      if (!number) {
        return Status::InvalidInput("constraint \"" + constraint + "\": parameter " + name + " = \"" + it->second +
                                    "\" is not a number, so it cannot be used in a constraint");
      }
      vars[name] = *number;
    }
    auto value = EvaluateFormula(constraint, vars);
    if (!value.ok()) return value.status();
    if (*value == 0 || std::isnan(*value)) return false;  // NaN (e.g. 0/0) holds nothing
  }
  return true;
}

}  // namespace kpilot
