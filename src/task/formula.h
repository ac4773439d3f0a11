// Arithmetic and boolean formulas over named variables (muparser), for flops/bytes per workload
// and for tunable-parameter constraints.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/status.h"

namespace kpilot {

// Evaluates `expr` with the given variables bound. InvalidInput names the expression and says
// what is wrong (syntax error at a position, unknown variable "k").
Result<double> EvaluateFormula(const std::string& expr, const std::map<std::string, double>& vars);

// Parses `expr` and returns the variable names it uses (so a loader can report unknown names
// before any workload is evaluated). InvalidInput on a syntax error.
Result<std::vector<std::string>> FormulaVariables(const std::string& expr);

// True when every constraint evaluates to non-zero with `vars` bound. Non-numeric parameter
// values cannot be used in constraints (InvalidInput).
Result<bool> ConstraintsHold(const std::vector<std::string>& constraints,
                             const std::map<std::string, std::string>& params);

}  // namespace kpilot
