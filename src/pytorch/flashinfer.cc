// flashinfer-bench definitions and workloads loaded into a Task; Trace records and the contest
// score (docs/pytorch.md; schema of flashinfer-bench 0.1.2).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <map>
#include <sstream>

#include "core/fs.h"
#include "pytorch/pytorch.h"
#include "task/formula.h"

namespace kpilot {
namespace fs = std::filesystem;
// Definition order is the ABI order, so objects keep the order they were written in.
using ojson = nlohmann::ordered_json;

namespace {

// Problems found while reading one file, reported together: "file:line: field: problem — fix".
class Problems {
 public:
  explicit Problems(fs::path file) : file_(std::move(file)) {}
  void Add(int line, const std::string& field, const std::string& problem, const std::string& fix) {
    std::string text = file_.string();
    if (line > 0) text += ":" + std::to_string(line);
    text += ": " + field + ": " + problem;
    if (!fix.empty()) text += " — " + fix;
    lines_.push_back(std::move(text));
  }
  bool empty() const { return lines_.empty(); }
  Status ToStatus() const {
    std::string all;
    for (const auto& l : lines_) all += (all.empty() ? "" : "\n") + l;
    return Status::InvalidInput(all);
  }

 private:
  fs::path file_;
  std::vector<std::string> lines_;
};

std::string Quote(const std::string& s) { return "\"" + s + "\""; }

// "a string", "an integer 3", ... for "expected X, got Y".
std::string Describe(const ojson& j) {
  switch (j.type()) {
    case ojson::value_t::null: return "null";
    case ojson::value_t::boolean: return "a boolean";
    case ojson::value_t::string: return "string " + j.dump();
    case ojson::value_t::number_float: return "number " + j.dump();
    case ojson::value_t::number_integer:
    case ojson::value_t::number_unsigned: return "integer " + j.dump();
    case ojson::value_t::array: return "an array";
    case ojson::value_t::object: return "an object";
    default: return "a value of another kind";
  }
}

// flashinfer-bench's dtype names, what kpilot calls them, and how its `random` inputs are drawn
// (flashinfer-bench: randn for floats, randint in [-1024, 1024) for wide integers).
struct DTypeEntry {
  const char* name;
  DType dtype;
  InitSpec init;
};
constexpr InitSpec kNormal{InitKind::kNormal, 0, 1};
const DTypeEntry kDTypes[] = {
    {"float32", DType::kF32, kNormal},
    {"float16", DType::kF16, kNormal},
    {"bfloat16", DType::kBF16, kNormal},
    {"float8_e4m3fn", DType::kFP8E4M3, kNormal},
    {"float8_e5m2", DType::kFP8E5M2, kNormal},
    {"int64", DType::kI64, {InitKind::kRandint, -1024, 1024}},
    {"int32", DType::kI32, {InitKind::kRandint, -1024, 1024}},
    {"int16", DType::kI16, {InitKind::kRandint, -1024, 1024}},
    {"int8", DType::kI8, {InitKind::kRandint, -128, 128}},
    {"bool", DType::kBool, {InitKind::kRandint, 0, 2}},
};

std::string SupportedDTypes() {
  std::string s;
  for (const auto& e : kDTypes) s += (s.empty() ? "" : ", ") + std::string(e.name);
  return s;
}

const DTypeEntry* FindDType(const std::string& name) {
  for (const auto& e : kDTypes)
    if (name == e.name) return &e;
  return nullptr;
}

// The 1-based line of byte `offset` in `text`.
int LineAt(const std::string& text, size_t offset) {
  offset = std::min(offset, text.size());
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + offset, '\n'));
}

// The dataset root when `file` sits at ROOT/<folder>/<op_type>/<file>, else nullopt.
std::optional<fs::path> DatasetRoot(const fs::path& file, const std::string& folder) {
  fs::path op_dir = file.parent_path();
  if (op_dir.parent_path().filename() != folder) return std::nullopt;
  return op_dir.parent_path().parent_path();
}

// ---- the definition ----------------------------------------------------------------------------

// Reads `axes`, `inputs`, `outputs` and the rest of a Definition into `task`; `const_axes` gets
// the const axes' values and `var_axes` the var axes' names, in order.
void ReadDefinition(const ojson& def, Task& task, std::map<std::string, int64_t>& const_axes,
                    std::vector<std::string>& var_axes, Problems& p) {
  auto string_field = [&](const char* key, const std::string& fix) -> std::string {
    auto it = def.find(key);
    if (it == def.end()) {
      p.Add(0, key, "required field is missing", fix);
      return "";
    }
    if (!it->is_string() || it->get<std::string>().empty()) {
      p.Add(0, key, "expected a non-empty string, got " + Describe(*it), fix);
      return "";
    }
    return it->get<std::string>();
  };
  task.name = string_field("name", "add \"name\": \"my_kernel\"");
  string_field("op_type", "add \"op_type\": \"rmsnorm\" (the folder name under definitions/)");
  std::string reference =
      string_field("reference", "add the PyTorch reference source with a top-level def run(...)");
  if (!reference.empty() && reference.find("def run(") == std::string::npos) {
    p.Add(0, "reference", "no top-level function run(...)",
          "define def run(<inputs in definition order>) returning the outputs");
  }
  if (auto it = def.find("description"); it != def.end() && it->is_string()) task.description = *it;

  auto axes = def.find("axes");
  const ojson* declared = axes != def.end() && axes->is_object() ? &*axes : nullptr;
  if (!declared) {
    p.Add(0, "axes", axes == def.end() ? "required field is missing" : "expected an object, got " + Describe(*axes),
          "add \"axes\": {\"batch\": {\"type\": \"var\"}, \"hidden\": {\"type\": \"const\", \"value\": 4096}}");
  } else {
    for (const auto& [name, axis] : axes->items()) {
      std::string field = "axes." + name;
      std::string type = axis.is_object() && axis.contains("type") && axis["type"].is_string()
                             ? axis["type"].get<std::string>() : "";
      if (type == "var") {
        var_axes.push_back(name);
      } else if (type == "const") {
        auto v = axis.find("value");
        if (v == axis.end() || !v->is_number_integer() || v->get<int64_t>() < 0) {
          p.Add(0, field + ".value",
                v == axis.end() ? "required for a const axis" : "expected an integer >= 0, got " + Describe(*v),
                "give the axis's size, e.g. \"value\": 4096");
        } else {
          const_axes[name] = v->get<int64_t>();
        }
      } else {
        p.Add(0, field + ".type", "expected \"const\" or \"var\"",
              "write {\"type\": \"var\"} or {\"type\": \"const\", \"value\": N}");
      }
    }
  }

  std::vector<std::string> size_terms;  // one product per tensor, for the bytes formula
  auto read_tensors = [&](const char* section, bool is_input) {
    auto it = def.find(section);
    if (it == def.end() || !it->is_object() || it->empty()) {
      p.Add(0, section, it == def.end() ? "required field is missing" : "expected a non-empty object, got " + Describe(*it),
            std::string("add \"") + section + "\": {\"x\": {\"shape\": [\"batch\", \"hidden\"], \"dtype\": \"float32\"}}");
      return;
    }
    for (const auto& [name, spec] : it->items()) {
      std::string field = std::string(section) + "." + name;
      if (!spec.is_object()) {
        p.Add(0, field, "expected an object, got " + Describe(spec), "write {\"shape\": [...], \"dtype\": \"float32\"}");
        continue;
      }
      const DTypeEntry* dtype = nullptr;
      auto d = spec.find("dtype");
      if (d == spec.end() || !d->is_string()) {
        p.Add(0, field + ".dtype", d == spec.end() ? "required field is missing" : "expected a string, got " + Describe(*d),
              "one of " + SupportedDTypes());
      } else if (!(dtype = FindDType(*d))) {
        std::string problem = d->get<std::string>() == "float4_e2m1"
                                  ? "float4_e2m1 is not supported by kpilot (no fp4 element type in its ABI)"
                                  : "unknown dtype " + d->dump();
        p.Add(0, field + ".dtype", problem, "use one of " + SupportedDTypes());
      }
      auto s = spec.find("shape");
      if (s == spec.end()) {
        p.Add(0, field + ".shape", "required field is missing", "a list of axis names, or null for a scalar");
        continue;
      }
      if (s->is_null()) {  // a scalar: an ABI scalar for inputs, a 0-d tensor for outputs
        if (is_input) {
          if (dtype) task.scalars.push_back({name, dtype->dtype, 0, 0});
        } else {
          if (dtype) task.outputs.push_back({name, dtype->dtype, {}, {}, std::nullopt, 0});
        }
        if (dtype) size_terms.push_back(std::to_string(DTypeSize(dtype->dtype)));
        continue;
      }
      if (!s->is_array()) {
        p.Add(0, field + ".shape", "expected a list of axis names or null, got " + Describe(*s), "");
        continue;
      }
      TensorSpec t;
      t.name = name;
      std::string term;
      for (const auto& a : *s) {
        std::string axis = a.is_string() ? a.get<std::string>() : "";
        if (axis.empty() || !declared || !declared->contains(axis)) {
          p.Add(0, field + ".shape", "axis " + (a.is_string() ? Quote(axis) : Describe(a)) + " is not declared in axes",
                "declare it under \"axes\" or fix the name");
          continue;
        }
        t.shape.push_back(axis);
        term += axis + "*";
      }
      if (!dtype) continue;
      t.dtype = dtype->dtype;
      if (is_input) t.init = dtype->init;
      size_terms.push_back(term + std::to_string(DTypeSize(dtype->dtype)));
      (is_input ? task.inputs : task.outputs).push_back(std::move(t));
    }
  };
  read_tensors("inputs", true);
  read_tensors("outputs", false);
  if (auto in = def.find("inputs"), out = def.find("outputs");
      in != def.end() && out != def.end() && in->is_object() && out->is_object()) {
    for (const auto& [name, _] : out->items())
      if (in->contains(name))
        p.Add(0, "outputs." + name, "has the name of an input", "rename the output");
  }
  for (const auto& t : size_terms) task.bytes_formula += (task.bytes_formula.empty() ? "" : " + ") + t;
}

// ---- workloads ---------------------------------------------------------------------------------

// Where the workloads of `definition` are, as docs/pytorch.md says; NotFound lists the places.
Result<fs::path> FindWorkloads(const fs::path& definition) {
  std::vector<fs::path> tried;
  if (auto root = DatasetRoot(definition, "definitions")) {
    tried.push_back(*root / "workloads" / definition.parent_path().filename() /
                    (definition.stem().string() + ".jsonl"));
  }
  tried.push_back(definition.parent_path() / (definition.stem().string() + ".jsonl"));
  std::error_code ec;
  for (const auto& t : tried)
    if (fs::is_regular_file(t, ec)) return t;
  std::string list;
  for (const auto& t : tried) list += (list.empty() ? "" : ", ") + t.string();
  return Status::NotFound(definition.string() + ": no workloads found (looked for " + list +
                          ") — pass --workloads FILE.jsonl");
}

// One JSONL record into a Workload. `base` resolves relative safetensors paths.
void ReadRecord(ojson& rec, int line, const Task& task, const std::map<std::string, int64_t>& const_axes,
                const std::vector<std::string>& var_axes, const fs::path& base, Workload& w, Problems& p) {
  auto uuid = rec.find("uuid");
  if (uuid == rec.end() || !uuid->is_string() || uuid->get<std::string>().empty()) {
    p.Add(line, "uuid", uuid == rec.end() ? "required field is missing" : "expected a non-empty string, got " + Describe(*uuid),
          "give each workload a unique id, e.g. \"uuid\": \"3f2a9c1e-...\"");
  } else {
    w.name = uuid->get<std::string>().substr(0, 8);
  }
  w.axes = const_axes;
  auto axes = rec.find("axes");
  if (axes == rec.end() || !axes->is_object()) {
    p.Add(line, "axes", axes == rec.end() ? "required field is missing" : "expected an object, got " + Describe(*axes),
          "bind every var axis, e.g. \"axes\": {\"batch\": 8}");
  } else {
    for (const auto& [name, value] : axes->items()) {
      std::string field = "axes." + name;
      if (!value.is_number_integer() || value.get<int64_t>() < 0) {
        p.Add(line, field, "expected an integer >= 0, got " + Describe(value), "");
        continue;
      }
      int64_t v = value.get<int64_t>();
      if (auto c = const_axes.find(name); c != const_axes.end()) {
        if (c->second != v)
          p.Add(line, field, "const axis is " + std::to_string(c->second) + " in the definition, not " + std::to_string(v),
                "remove it from the record or fix the value");
      } else if (std::find(var_axes.begin(), var_axes.end(), name) == var_axes.end()) {
        p.Add(line, field, "no such axis in the definition", "remove it or fix the name");
      } else {
        w.axes[name] = v;
      }
    }
    for (const auto& name : var_axes)
      if (!axes->contains(name))
        p.Add(line, "axes." + name, "var axis is not bound", "add \"" + name + "\": N to the record's axes");
  }

  auto inputs = rec.find("inputs");
  if (inputs == rec.end() || !inputs->is_object()) {
    p.Add(line, "inputs", inputs == rec.end() ? "required field is missing" : "expected an object, got " + Describe(*inputs),
          "describe each input, e.g. \"inputs\": {\"x\": {\"type\": \"random\"}}");
    return;
  }
  for (auto& [name, spec] : inputs->items()) {
    std::string field = "inputs." + name;
    bool is_tensor = std::any_of(task.inputs.begin(), task.inputs.end(), [&](const TensorSpec& t) { return t.name == name; });
    bool is_scalar = std::any_of(task.scalars.begin(), task.scalars.end(), [&](const ScalarSpec& s) { return s.name == name; });
    if (!is_tensor && !is_scalar) {
      p.Add(line, field, "no such input in the definition", "remove it or fix the name");
      continue;
    }
    std::string type = spec.is_object() && spec.contains("type") && spec["type"].is_string()
                           ? spec["type"].get<std::string>() : "";
    if (type == "random") continue;
    if (type == "scalar") {
      auto v = spec.find("value");
      if (v == spec.end() || !(v->is_number() || v->is_boolean())) {
        p.Add(line, field + ".value", v == spec.end() ? "required for a scalar input" : "expected a number or boolean, got " + Describe(*v), "");
      } else if (!is_scalar) {
        p.Add(line, field, "a scalar value for a tensor input", "use {\"type\": \"random\"} or {\"type\": \"safetensors\", ...}");
      } else {
        w.scalar_values[name] = v->is_boolean() ? (v->get<bool>() ? 1.0 : 0.0) : v->get<double>();
      }
    } else if (type == "safetensors") {
      auto path = spec.find("path");
      auto key = spec.find("tensor_key");
      if (key == spec.end() || !key->is_string() || key->get<std::string>().empty())
        p.Add(line, field + ".tensor_key", "expected a non-empty string", "name the tensor inside the file");
      if (path == spec.end() || !path->is_string() || path->get<std::string>().empty()) {
        p.Add(line, field + ".path", "expected a non-empty string", "the .safetensors file, relative to the dataset root");
        continue;
      }
      fs::path file = path->get<std::string>();
      if (file.is_relative()) file = (base / file).lexically_normal();
      std::error_code ec;
      if (!fs::is_regular_file(file, ec)) {
        p.Add(line, field + ".path", "file " + file.string() + " not found",
              "relative paths are resolved against " + base.string());
      }
      *path = file.string();
      if (!is_tensor) p.Add(line, field, "a safetensors file for a scalar input", "use {\"type\": \"scalar\", \"value\": ...}");
    } else {
      p.Add(line, field + ".type", type.empty() ? "missing" : "unknown input type " + Quote(type),
            "use \"random\", \"scalar\" or \"safetensors\"");
    }
  }
}

Status ReadWorkloads(const fs::path& file, Task& task, const std::map<std::string, int64_t>& const_axes,
                     const std::vector<std::string>& var_axes) {
  auto text = ReadFile(file);
  if (!text.ok()) return text.status();
  fs::path base = DatasetRoot(file, "workloads").value_or(file.parent_path());
  Problems p(file);
  std::map<std::string, int> names;  // workload name → line
  std::istringstream lines(*text);
  std::string line_text;
  for (int line = 1; std::getline(lines, line_text); ++line) {
    if (line_text.find_first_not_of(" \t\r") == std::string::npos) continue;
    ojson rec = ojson::parse(line_text, nullptr, /*allow_exceptions=*/false);
    if (rec.is_discarded() || !rec.is_object()) {
      p.Add(line, "record", rec.is_discarded() ? "not valid JSON" : "expected a JSON object, got " + Describe(rec),
            "each line must be one workload {\"uuid\": ..., \"axes\": {...}, \"inputs\": {...}}");
      continue;
    }
    Workload w;
    w.line = line;
    ReadRecord(rec, line, task, const_axes, var_axes, base, w, p);
    if (w.name.empty()) continue;
    if (auto [it, fresh] = names.emplace(w.name, line); !fresh) {
      p.Add(line, "uuid", "starts with the same 8 characters as line " + std::to_string(it->second) + "'s (" + w.name + ")",
            "workloads are named by their uuid's first 8 characters: make them differ");
      continue;
    }
    std::map<std::string, double> vars(w.axes.begin(), w.axes.end());
    if (!task.bytes_formula.empty() && w.axes.size() == const_axes.size() + var_axes.size()) {
      auto bytes = EvaluateFormula(task.bytes_formula, vars);
      if (bytes.ok()) w.min_bytes = *bytes;
    }
    w.record = rec.dump();
    task.workloads.push_back(std::move(w));
  }
  if (!p.empty()) return p.ToStatus();
  if (task.workloads.empty())
    return Status::InvalidInput(file.string() + ": no workloads — add one JSON record per line");
  return Status::Ok();
}

std::string NowIso8601() {
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// flashinfer-bench writes non-finite errors as the strings "NaN" / "Infinity" (pydantic's
// ser_json_inf_nan="strings"), which JSON numbers cannot hold.
nlohmann::json ErrorValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return "Infinity";
  return std::max(0.0, v);
}

}  // namespace

Result<Task> LoadFlashInferDefinition(const fs::path& definition, const std::optional<fs::path>& workloads) {
  std::error_code ec;
  fs::path def_path = fs::absolute(definition, ec).lexically_normal();
  auto text = ReadFile(def_path);
  if (!text.ok()) return text.status();
  ojson def;
  try {
    def = ojson::parse(*text);
  } catch (const ojson::parse_error& e) {
    return Status::InvalidInput(def_path.string() + ":" + std::to_string(LineAt(*text, e.byte)) +
                                ": not valid JSON (" + e.what() + ") — a Definition is one JSON object");
  }
  if (!def.is_object())
    return Status::InvalidInput(def_path.string() + ": expected a JSON object (a flashinfer-bench Definition), got " +
                                Describe(def));

  Task task;
  task.backend = Backend::kCuda;
  task.format = TaskFormat::kFlashInfer;
  task.dir = def_path.parent_path();
  task.reference = {"reference", def_path, ReferenceKind::kPython, "run"};
  task.tolerance = {1e-2, 1e-2, 1.0};
  std::map<std::string, int64_t> const_axes;
  std::vector<std::string> var_axes;
  Problems p(def_path);
  ReadDefinition(def, task, const_axes, var_axes, p);
  if (!p.empty()) return p.ToStatus();

  fs::path jsonl;
  if (workloads) {
    jsonl = fs::absolute(*workloads, ec).lexically_normal();
  } else {
    auto found = FindWorkloads(def_path);
    if (!found.ok()) return found.status();
    jsonl = *found;
  }
  Status s = ReadWorkloads(jsonl, task, const_axes, var_axes);
  if (!s.ok()) return s;
  return task;
}

nlohmann::json TraceRecord(const TraceInput& in) {
  nlohmann::json workload = nlohmann::json::object();
  for (const char* key : {"uuid", "axes", "inputs"})
    if (in.workload.contains(key)) workload[key] = in.workload[key];

  nlohmann::json environment = in.environment.is_object() ? in.environment : nlohmann::json::object();
  if (!environment.contains("hardware") || !environment["hardware"].is_string() ||
      environment["hardware"].get<std::string>().empty())
    environment["hardware"] = "unknown";
  if (!environment.contains("libs")) environment["libs"] = nlohmann::json::object();

  nlohmann::json evaluation = {
      {"status", in.status},
      {"environment", environment},
      {"timestamp", in.timestamp.empty() ? NowIso8601() : in.timestamp},
      {"log", in.log},
  };
  // The schema wants correctness for PASSED and INCORRECT_NUMERICAL only, performance for PASSED only.
  if (in.status == "PASSED" || in.status == "INCORRECT_NUMERICAL") {
    evaluation["correctness"] = {{"max_relative_error", ErrorValue(in.max_rel_error)},
                                 {"max_absolute_error", ErrorValue(in.max_abs_error)}};
  }
  if (in.status == "PASSED") {
    double latency = std::max(0.0, in.latency_ms), reference = std::max(0.0, in.reference_latency_ms);
    evaluation["performance"] = {{"latency_ms", latency},
                                 {"reference_latency_ms", reference},
                                 {"speedup_factor", latency > 0 ? reference / latency : 0.0}};
  }
  return {{"definition", in.definition}, {"workload", workload}, {"solution", in.solution}, {"evaluation", evaluation}};
}

double ContestScore(const std::vector<double>& speedups, const std::vector<bool>& passed) {
  if (speedups.empty() || speedups.size() != passed.size()) return 0;
  double sum = 0;
  for (size_t i = 0; i < speedups.size(); ++i) {
    if (!passed[i]) return 0;
    sum += speedups[i];
  }
  return sum / static_cast<double>(speedups.size());
}

}  // namespace kpilot
