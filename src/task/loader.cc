#include "task/loader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

#include "core/fs.h"
#include "task/formula.h"
#include "task/loader_internal.h"

namespace kpilot {
namespace fs = std::filesystem;
using namespace loader;

namespace {

bool IsNumber(const std::string& s) {
  double v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && ptr == s.data() + s.size();
}

// A float parameter value as it should reach the compiler: always with a decimal point or
// exponent, so that -DSCALE=2.0 stays a floating-point literal.
std::string FloatMacroValue(double v) {
  std::string s = FormatNumber(v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string_view ExtensionFor(Backend b) { return b == Backend::kCuda ? ".cu" : ".cpp"; }

// A source path (reference or baseline): relative to the task folder, present, and with the
// extension its backend compiles.
SourceRef ReadSource(const toml::node& n, const std::string& name, const std::string& field, const fs::path& dir,
                     std::optional<Backend> backend, Diagnostics& d) {
  SourceRef ref;
  ref.name = name;
  auto rel = ReadString(n, field, d);
  if (!rel) return ref;
  if (rel->empty()) {
    d.Add(LineOf(n), field, "empty path", "name a source file in the task folder");
    return ref;
  }
  ref.path = (dir / *rel).lexically_normal();
  std::error_code ec;
  if (!fs::is_regular_file(ref.path, ec)) {
    d.Add(LineOf(n), field, "file " + Quote(*rel) + " not found in " + dir.string(),
          "create it, or fix the path (it is relative to the task folder)");
  }
  if (backend) {
    std::string_view want = ExtensionFor(*backend);
    std::string ext = ref.path.extension().string();
    if (ext != want) {
      d.Add(LineOf(n), field,
            Quote(*rel) + " does not end in " + std::string(want) + " but backend is " + Quote(BackendName(*backend)),
            "the " + std::string(BackendName(*backend)) + " backend compiles " + std::string(want) +
                " files: rename the file or change backend");
    }
  }
  return ref;
}

std::vector<SourceRef> ReadBaselines(const toml::node& n, const fs::path& dir, std::optional<Backend> backend,
                                     Diagnostics& d) {
  std::vector<SourceRef> baselines;
  auto tables = ReadTableArray(n, "baselines", d);
  for (size_t i = 0; i < tables.size(); ++i) {
    if (!tables[i]) continue;
    const toml::table& t = *tables[i];
    std::string field = Indexed("baselines", i);
    RejectUnknownKeys(t, field, {"name", "source"}, d);
    std::string name;
    if (const toml::node* nn = Require(t, "name", field, "add name = \"vendor\"", d)) {
      if (auto s = ReadString(*nn, Field(field, "name"), d)) {
        name = *s;
        if (!IsPlainName(name)) {
          d.Add(LineOf(*nn), Field(field, "name"),
                Quote(name) + " contains characters other than letters, digits, '_' and '-'",
                "rename it, e.g. \"cublas\"");
        } else if (name == "reference") {
          d.Add(LineOf(*nn), Field(field, "name"), "\"reference\" names the task's reference",
                "give the baseline another name");
        }
      }
    }
    if (const toml::node* src = Require(
            t, "source", field,
            "add source = \"baseline" + std::string(ExtensionFor(backend.value_or(Backend::kHost))) + "\"", d)) {
      baselines.push_back(ReadSource(*src, name, Field(field, "source"), dir, backend, d));
    }
  }
  return baselines;
}

// [draw]: `axis = [low, high]` for axes the tensors use, 1 <= low <= high.
void ReadDraw(const toml::node& n, Task* task, Diagnostics& d) {
  const toml::table* t = ReadTable(n, "draw", d);
  if (t == nullptr) return;
  std::set<std::string> used;
  for (const auto* group : {&task->inputs, &task->outputs})
    for (const auto& tensor : *group) used.insert(tensor.shape.begin(), tensor.shape.end());
  for (auto&& [key, value] : *t) {
    const std::string axis(key.str());
    const std::string field = Field("draw", axis);
    if (!used.count(axis)) {
      d.Add(LineOf(value), field, "axis " + Quote(axis) + " is not used by any tensor shape",
            "draw only axes the inputs' and outputs' shapes use");
      continue;
    }
    const toml::array* range = value.as_array();
    if (range == nullptr || range->size() != 2 || !(*range)[0].is_integer() || !(*range)[1].is_integer()) {
      d.Add(LineOf(value), field, "expected [low, high], two integers", "write e.g. " + axis + " = [1000, 4000000]");
      continue;
    }
    const int64_t low = (*range)[0].value<int64_t>().value_or(0), high = (*range)[1].value<int64_t>().value_or(0);
    if (low < 1 || high < low) {
      d.Add(LineOf(value), field,
            "the range [" + std::to_string(low) + ", " + std::to_string(high) + "] is empty or below 1",
            "use 1 <= low <= high");
      continue;
    }
    task->draw_axes[axis] = {low, high};
  }
}

// flops/bytes: muparser over axis names, evaluated for every workload into `out`.
void ReadRooflineFormula(const toml::table& roofline, const char* key, Task* task, std::string* formula,
                         double Workload::*out, bool evaluate, Diagnostics& d) {
  const toml::node* n = roofline.get(key);
  if (!n) return;
  std::string field = Field("roofline", key);
  auto expr = ReadString(*n, field, d);
  if (!expr) return;
  *formula = *expr;
  auto vars = FormulaVariables(*expr);
  if (!vars.ok()) {
    d.Add(LineOf(*n), field, vars.status().message(), "write a muparser expression over the axes, e.g. \"2*m*n*k\"");
    return;
  }
  std::vector<std::string> axes = AxesOf(*task);
  bool names_ok = true;
  for (const auto& v : *vars) {
    if (std::find(axes.begin(), axes.end(), v) != axes.end()) continue;
    d.Add(LineOf(*n), field, "unknown name " + Quote(v),
          axes.empty() ? "no tensor declares an axis, so use numbers only" : "use only axis names: " + JoinNames(axes));
    names_ok = false;
  }
  if (!names_ok || !evaluate) return;
  for (auto& w : task->workloads) {
    std::map<std::string, double> values;
    for (const auto& [axis, size] : w.axes) values[axis] = static_cast<double>(size);
    auto v = EvaluateFormula(*expr, values);
    if (!v.ok()) {
      d.Add(LineOf(*n), field, v.status().message() + " for workload " + Quote(w.name), "fix the expression");
    } else if (!std::isfinite(*v) || *v < 0) {
      d.Add(LineOf(*n), field, "evaluates to " + FormatNumber(*v) + " for workload " + Quote(w.name),
            "it must be a finite, non-negative count");
    } else {
      w.*out = *v;
    }
  }
}

}  // namespace

namespace loader {

std::vector<TunableParam> ReadParams(const toml::node& n, Diagnostics& d, std::string_view skip_key) {
  std::vector<TunableParam> params;
  const toml::table* t = ReadTable(n, "params", d);
  if (!t) return params;
  // toml++ iterates keys sorted by name; params keep the order they were declared in.
  std::vector<std::pair<const toml::key*, const toml::node*>> entries;
  for (auto&& [key, value] : *t) entries.emplace_back(&key, &value);
  std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    const auto& x = a.first->source().begin;
    const auto& y = b.first->source().begin;
    return x.line != y.line ? x.line < y.line : x.column < y.column;
  });
  for (const auto& [key_ptr, value_ptr] : entries) {
    const toml::key& key = *key_ptr;
    const toml::node& value = *value_ptr;
    if (!skip_key.empty() && key.str() == skip_key) continue;
    TunableParam p;
    p.name = std::string(key.str());
    p.line = static_cast<int>(key.source().begin.line);
    std::string field = Field("params", p.name);
    if (p.name == "constraints") {
      d.Add(p.line, field, "constraints is a top-level key, not a parameter",
            "move it above the first [table] header, next to name");
      continue;
    }
    if (!IsIdentifier(p.name)) {
      d.Add(p.line, field, Quote(p.name) + " is not a C identifier (it becomes -D" + p.name + ")",
            "use letters, digits and '_', not starting with a digit");
    }
    const auto* arr = value.as_array();
    if (!arr || arr->empty()) {
      d.Add(LineOf(value), field, arr ? "no values given" : "expected an array of values, got " + Describe(value),
            "list the values to try, e.g. " + p.name + " = [64, 128, 256]");
      params.push_back(std::move(p));  // still declared: constraints may name it
      continue;
    }
    for (size_t i = 0; i < arr->size(); ++i) {
      const toml::node& el = *arr->get(i);
      std::string v;
      if (const auto* x = el.as_integer())
        v = std::to_string(x->get());
      else if (const auto* f = el.as_floating_point(); f && std::isfinite(f->get()))
        v = FloatMacroValue(f->get());
      else if (const auto* s = el.as_string())
        v = s->get();
      if (v.empty()) {
        d.Add(LineOf(el), Indexed(field, i),
              "expected an integer, finite float or non-empty string, got " + Describe(el),
              "write e.g. 128, 0.5 or \"float4\"");
        continue;
      }
      if (std::find(p.values.begin(), p.values.end(), v) != p.values.end()) {
        d.Add(LineOf(el), Indexed(field, i), "value " + v + " is listed twice", "remove one");
        continue;
      }
      p.values.push_back(v);
    }
    params.push_back(std::move(p));
  }
  return params;
}

std::vector<std::string> ReadConstraints(const toml::node& n, const std::vector<TunableParam>& params, Diagnostics& d) {
  std::vector<std::string> constraints;
  const auto* arr = n.as_array();
  if (!arr) {
    d.Add(LineOf(n), "constraints", "expected an array of strings, got " + Describe(n),
          "write e.g. constraints = [\"BLOCK * VEC <= 2048\"]");
    return constraints;
  }
  std::vector<std::string> names;
  for (const auto& p : params) names.push_back(p.name);
  for (size_t i = 0; i < arr->size(); ++i) {
    const toml::node& el = *arr->get(i);
    std::string field = Indexed("constraints", i);
    auto expr = ReadString(el, field, d);
    if (!expr) continue;
    constraints.push_back(*expr);
    auto vars = FormulaVariables(*expr);
    if (!vars.ok()) {
      d.Add(LineOf(el), field, vars.status().message(),
            "write a muparser boolean expression over the params, e.g. \"BLOCK * VEC <= 2048\"");
      continue;
    }
    for (const auto& v : *vars) {
      const TunableParam* p = nullptr;
      for (const auto& q : params)
        if (q.name == v) p = &q;
      if (!p) {
        d.Add(LineOf(el), field, "unknown name " + Quote(v),
              names.empty() ? "declare it under [params], or remove the constraint"
                            : "use only param names: " + JoinNames(names));
        continue;
      }
      for (const auto& value : p->values) {
        if (IsNumber(value)) continue;
        d.Add(LineOf(el), field, "uses " + v + ", whose value " + Quote(value) + " is not a number",
              "constrain only numeric params, or drop " + v + " from the constraint");
        break;
      }
    }
  }
  return constraints;
}

}  // namespace loader

namespace {

// Fills `task` from the parsed document; problems go to `d`.
void ReadTask(const toml::table& root, Task* task, Diagnostics& d) {
  RejectUnknownKeys(root, "", TopLevelKeys(), d);
  if (const toml::node* n = Require(root, "name", "", "add name = \"my_task\" at the top", d)) {
    if (auto name = ReadString(*n, "name", d)) {
      task->name = *name;
      if (!IsPlainName(*name)) {
        d.Add(LineOf(*n), "name", Quote(*name) + " contains characters other than letters, digits, '_' and '-'",
              "rename it, e.g. \"my_task\"");
      }
    }
  }
  if (const toml::node* n = root.get("description")) {
    if (auto s = ReadString(*n, "description", d)) task->description = *s;
  }
  std::optional<Backend> backend;
  if (const toml::node* n = Require(root, "backend", "", "add backend = \"host\" or backend = \"cuda\"", d)) {
    if (auto s = ReadString(*n, "backend", d)) {
      if (*s == "host")
        backend = Backend::kHost;
      else if (*s == "cuda")
        backend = Backend::kCuda;
      else
        d.Add(LineOf(*n), "backend", "unknown backend " + Quote(*s), "use \"host\" or \"cuda\"");
    }
  }
  if (backend) task->backend = *backend;
  std::string ext(ExtensionFor(backend.value_or(Backend::kHost)));
  if (const toml::node* n =
          Require(root, "reference", "",
                  "add reference = \"reference" + ext + "\" (a source implementing the candidate ABI)", d)) {
    task->reference = ReadSource(*n, "reference", "reference", task->dir, backend, d);
  }
  if (const toml::node* n = root.get("baselines")) task->baselines = ReadBaselines(*n, task->dir, backend, d);
  if (const toml::node* n = root.get("libraries")) {
    if (auto v = ReadBool(*n, "libraries", d)) task->libraries = *v;
  }
  if (const toml::node* n = root.get("cutlass")) {
    if (auto v = ReadBool(*n, "cutlass", d)) task->cutlass = *v;
  }
  if (const toml::node* n = root.get("compute_precision"))
    task->compute_precision = ReadDType(*n, "compute_precision", d);

  if (const toml::node* n = root.get("tolerance")) ReadTolerance(*n, "tolerance", &task->tolerance, d);
  if (const toml::node* n = root.get("inputs"))
    task->inputs = ReadTensors(*n, "inputs", /*is_input=*/true, task->tolerance, d);
  if (const toml::node* n = root.get("outputs"))
    task->outputs = ReadTensors(*n, "outputs", /*is_input=*/false, task->tolerance, d);
  // (A outputs key of the wrong type has been reported already.)
  if (task->outputs.empty() && (!root.get("outputs") || root.get("outputs")->is_array())) {
    d.Add(root.get("outputs") ? LineOf(*root.get("outputs")) : 1, "outputs", "no outputs declared",
          "add at least one [[outputs]] table with name, dtype and shape");
  }
  if (const toml::node* n = root.get("scalars")) task->scalars = ReadScalars(*n, d);

  std::vector<WorkloadLines> lines;
  if (const toml::node* n = root.get("workloads")) task->workloads = ReadWorkloads(*n, task->scalars, &lines, d);
  // (A workloads key of the wrong type has been reported already.)
  if (task->workloads.empty() && (!root.get("workloads") || root.get("workloads")->is_array())) {
    d.Add(root.get("workloads") ? LineOf(*root.get("workloads")) : 1, "workloads", "no workloads declared",
          "add at least one [[workloads]] table with a name and axes = { <axis> = <size> }");
  }

  std::vector<Declared> args, workloads, baselines;
  for (const char* key : {"inputs", "outputs", "scalars"}) CollectNames(root, key, &args);
  CollectNames(root, "workloads", &workloads);
  CollectNames(root, "baselines", &baselines);
  for (const auto* names : {&args, &workloads, &baselines}) RejectDuplicates(*names, d);
  CheckAxes(*task, lines, d);

  // Evaluating the roofline needs sound workloads; a formula with problems of its own is still
  // checked for syntax and names.
  bool evaluate = d.empty();
  if (const toml::node* n = root.get("roofline")) {
    if (const toml::table* t = ReadTable(*n, "roofline", d)) {
      RejectUnknownKeys(*t, "roofline", {"flops", "bytes"}, d);
      ReadRooflineFormula(*t, "flops", task, &task->flops_formula, &Workload::flops, evaluate, d);
      ReadRooflineFormula(*t, "bytes", task, &task->bytes_formula, &Workload::min_bytes, evaluate, d);
    }
  }
  if (const toml::node* n = root.get("draw")) ReadDraw(*n, task, d);
  if (const toml::node* n = root.get("params")) task->params = ReadParams(*n, d);
  if (const toml::node* n = root.get("constraints")) task->constraints = ReadConstraints(*n, task->params, d);
}

}  // namespace

Result<Task> LoadTask(const fs::path& dir_or_file) {
  std::error_code ec;
  fs::path file = dir_or_file;
  if (fs::is_directory(dir_or_file, ec)) file = dir_or_file / "task.toml";
  if (!fs::exists(file, ec)) {
    return Status::NotFound(fs::is_directory(dir_or_file, ec) ? "no task.toml in " + dir_or_file.string()
                                                              : "no task folder or file at " + dir_or_file.string());
  }
  if (!fs::is_regular_file(file, ec)) {
    return Status::InvalidInput(file.string() + " is not a regular file");
  }
  fs::path absolute = fs::absolute(file, ec);
  if (ec) return Status::Internal("cannot resolve " + file.string() + ": " + ec.message());
  absolute = absolute.lexically_normal();

  Result<std::string> text = ReadFile(file);
  if (!text.ok()) return text.status();
  Diagnostics d(file.filename().string());
  toml::table root;
  try {
    root = toml::parse(*text, std::string_view(absolute.string()));
  } catch (const toml::parse_error& e) {
    d.Add(static_cast<int>(e.source().begin.line), "syntax", std::string(e.description()),
          "fix the TOML at column " + std::to_string(e.source().begin.column) + " (see https://toml.io)");
    return Status::InvalidInput(d.Joined());
  }

  Task task;
  task.dir = absolute.parent_path();
  ReadTask(root, &task, d);
  if (!d.empty()) return Status::InvalidInput(d.Joined());
  return task;
}

}  // namespace kpilot
