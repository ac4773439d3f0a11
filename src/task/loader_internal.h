// Internal to the task loader (loader*.cc): the problem collector, typed TOML readers and the
// section parsers. Not part of the task module's contract; include loader.h instead.
//
// Every reader records what is wrong with its node and returns nothing (nullopt, nullptr) so the
// loader can carry on and report every problem of a file in one go.
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "task/task.h"

namespace kpilot::loader {

// Problems as "FILE:LINE: field: problem — fix", reported in line order.
class Diagnostics {
 public:
  explicit Diagnostics(std::string file_name) : file_(std::move(file_name)) {}

  void Add(int line, const std::string& field, const std::string& problem, const std::string& fix);
  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }
  // All problems, one per line, sorted by line (stable: same-line problems keep their order).
  std::string Joined() const;

 private:
  struct Entry {
    int line;
    std::string text;
  };
  std::string file_;
  std::vector<Entry> entries_;
};

// "prefix.key", or "key" when prefix is empty.
std::string Field(const std::string& prefix, std::string_view key);
// "prefix[i]".
std::string Indexed(const std::string& prefix, size_t i);
int LineOf(const toml::node& n);
// `string "abc"`, `integer 3`, `a table`, ... for "expected X, got Y".
std::string Describe(const toml::node& n);
std::string Quote(std::string_view s);
// Shortest round-trip decimal form ("2", "0.5", "1e-05").
std::string FormatNumber(double v);
// A comma-separated list of names.
std::string JoinNames(const std::vector<std::string>& names);

// C identifier: letters, digits and '_', not starting with a digit.
bool IsIdentifier(std::string_view s);
// Task, workload and baseline names: letters, digits, '_' and '-'.
bool IsPlainName(std::string_view s);

// Typed reads of a node found at `field`; a type mismatch is recorded and yields nullopt.
std::optional<std::string> ReadString(const toml::node& n, const std::string& field, Diagnostics& d);
// Integers and floats. Infinity and NaN are rejected unless `allow_nonfinite`.
std::optional<double> ReadNumber(const toml::node& n, const std::string& field, Diagnostics& d,
                                 bool allow_nonfinite = false);
std::optional<int64_t> ReadInteger(const toml::node& n, const std::string& field, Diagnostics& d);
std::optional<bool> ReadBool(const toml::node& n, const std::string& field, Diagnostics& d);
const toml::table* ReadTable(const toml::node& n, const std::string& field, Diagnostics& d);
std::optional<DType> ReadDType(const toml::node& n, const std::string& field, Diagnostics& d);
// The elements of `[[key]]` (an array of tables); nullptr for an element that is not a table.
std::vector<const toml::table*> ReadTableArray(const toml::node& n, const std::string& key, Diagnostics& d);

// The node at table[key]; when absent records "required field is missing — fix".
const toml::node* Require(const toml::table& t, std::string_view key, const std::string& prefix, const std::string& fix,
                          Diagnostics& d);
// Records every key of `t` not in `allowed`.
void RejectUnknownKeys(const toml::table& t, const std::string& prefix, const std::vector<std::string_view>& allowed,
                       Diagnostics& d);

// Every key allowed at the top of task.toml.
const std::vector<std::string_view>& TopLevelKeys();

// A name declared in the file, for duplicate checks.
struct Declared {
  std::string name;
  std::string field;  // e.g. "inputs[1]"
  int line;
};
// The `name` of every table in an array of tables `key` (those that have a string name).
void CollectNames(const toml::table& root, std::string_view key, std::vector<Declared>* out);
// Records every name declared more than once, pointing at its first declaration.
void RejectDuplicates(const std::vector<Declared>& names, Diagnostics& d);

// Section parsers (loader_sections.cc). Each reads what it can and records the rest.
void ReadTolerance(const toml::node& n, const std::string& field, Tolerance* tol, Diagnostics& d);
// [[inputs]] or [[outputs]]; one TensorSpec per array element, so indices match the file.
std::vector<TensorSpec> ReadTensors(const toml::node& n, const std::string& key, bool is_input,
                                    const Tolerance& task_tolerance, Diagnostics& d);
std::vector<ScalarSpec> ReadScalars(const toml::node& n, Diagnostics& d);

// Where a workload's axis bindings are, for axis checks.
struct WorkloadLines {
  int axes = 0;                     // the axes table, or the workload when it has none
  std::map<std::string, int> axis;  // each bound axis
};
std::vector<Workload> ReadWorkloads(const toml::node& n, const std::vector<ScalarSpec>& scalars,
                                    std::vector<WorkloadLines>* lines, Diagnostics& d);
// [params] (loader.cc): one TunableParam per key, in declaration order; a key equal to `skip_key`
// is not a param (a candidate's kpilot-params block holds its constraints beside them).
std::vector<TunableParam> ReadParams(const toml::node& n, Diagnostics& d, std::string_view skip_key = "");
// constraints: muparser boolean expressions over the numeric params.
std::vector<std::string> ReadConstraints(const toml::node& n, const std::vector<TunableParam>& params, Diagnostics& d);
// Every axis used by a tensor is bound by every workload, and every bound axis is used.
void CheckAxes(const Task& task, const std::vector<WorkloadLines>& lines, Diagnostics& d);
// The axes used by any tensor shape, sorted.
std::vector<std::string> AxesOf(const Task& task);

}  // namespace kpilot::loader
