// User tools from TOML rule files: a new micro-profiling check without recompiling kpilot.
//
// A rule file holds one or more rules:
//
//   [[rule]]
//   id = "l2-thrashing"                      # kebab-case, unique, not a built-in tool's id
//   description = "L2 misses while DRAM is busy"            # optional; one line for --list-tools
//   classes = ["memory", "mixed"]            # as ParseBottleneck accepts them, or ["all"]
//   metrics = ["lts__t_sector_hit_rate.pct",
//              "dram__throughput.avg.pct_of_peak_sustained_elapsed"]
//   condition = "lts__t_sector_hit_rate.pct < 50 && dram__throughput.avg.pct_of_peak_sustained_elapsed > 60"
//   severity = "(60 - lts__t_sector_hit_rate.pct) / 60"     # optional (0.5); number or expression
//   guidance = "L2 hits only {lts__t_sector_hit_rate.pct}% of sectors: ..."
//   skills = ["shared-memory-tiling"]        # optional
//
// Expressions are muparser (https://beltoforion.de/en/muparser/): + - * / ^ %, < <= > >= == !=,
// && ||, ?:, min(), max(), abs(), sqrt(), … Their variables are the metrics the rule declares.
// muparser names cannot contain '.', so every name in an expression is rewritten with each '.'
// replaced by '_' before parsing: "lts__t_sector_hit_rate.pct" becomes
// "lts__t_sector_hit_rate_pct". Either spelling may be written; two declared metrics that map to
// the same name are an error. A guidance template substitutes "{metric}" (either spelling) with
// the metric's value to 3 significant digits (integers from 100 up); "{{" and "}}" are literal
// braces. A severity expression's value is clamped to [0, 1]; a numeric severity must lie in
// [0, 1].
//
// A rule fires when every metric it declares was collected and its condition evaluates to
// non-zero; a rule with a missing metric, or whose expression fails to evaluate (e.g. division
// by zero giving NaN), stays silent. The finding's evidence holds every declared metric.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "profile/tool.h"

namespace kpilot {

// Parses the text of one rule file; `source` names it in messages. Every problem is reported,
// one per line, as "SOURCE:LINE: rule[I].FIELD: problem — fix" (InvalidInput), e.g.
//   tools.toml:7: rule[1].condition: unknown name "dram_pct" — use metric names declared in metrics = [...]
// Pure.
Result<std::vector<std::unique_ptr<Tool>>> ParseRuleTools(const std::string& text, const std::string& source);

// Reads and parses one rule file; messages name the path as given. NotFound when it is missing.
Result<std::vector<std::unique_ptr<Tool>>> LoadRuleTools(const std::filesystem::path& file);

// Every *.toml file directly inside each directory but task.toml, in the order given and by file
// name within a directory (RuleToolDirs gives them). A directory that does not exist is skipped (the user directory
// usually does not); a path that is not a directory is InvalidInput. Problems in all files are collected into one
// error; a rule id defined twice, or equal to a built-in tool's id, is one of them.
Result<std::vector<std::unique_ptr<Tool>>> LoadRuleToolsFromDirs(const std::vector<std::filesystem::path>& dirs);

// Where rule files are looked for, in order: the task's folder (for a problem or definition file,
// the file's folder), `user_dir` (~/.config/kpilot/tools; "" = none) and each --tools DIR.
std::vector<std::filesystem::path> RuleToolDirs(const std::filesystem::path& task_path,
                                                const std::filesystem::path& user_dir,
                                                const std::vector<std::string>& tool_dirs);
// The built-in tools followed by the rule-file tools of `dirs` (LoadRuleToolsFromDirs).
Result<std::vector<std::unique_ptr<Tool>>> LoadTools(const std::vector<std::filesystem::path>& dirs);
// ~/.config/kpilot/tools under $HOME ("" when HOME is unset).
std::filesystem::path UserToolDir();

// The muparser name of a metric: '.' replaced by '_'.
std::string ExpressionName(const std::string& metric);

}  // namespace kpilot
