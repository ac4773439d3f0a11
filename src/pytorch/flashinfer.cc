// flashinfer-bench definitions and workloads loaded into a Task; Trace records and the contest
// score (docs/pytorch.md; schema of flashinfer-bench 0.1.2).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <map>
#include <sstream>

#include "core/fs.h"
#include "core/text.h"
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
    case ojson::value_t::null:
      return "null";
    case ojson::value_t::boolean:
      return "a boolean";
    case ojson::value_t::string:
      return "string " + j.dump();
    case ojson::value_t::number_float:
      return "number " + j.dump();
    case ojson::value_t::number_integer:
    case ojson::value_t::number_unsigned:
      return "integer " + j.dump();
    case ojson::value_t::array:
      return "an array";
    case ojson::value_t::object:
      return "an object";
    default:
      return "a value of another kind";
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

// The member `key` of an object, or nullptr.
const ojson* Member(const ojson& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}
ojson* Member(ojson& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

// "required field is missing" for an absent value, else "expected <what>, got <what it is>".
std::string Unexpected(const ojson* value, const std::string& what) {
  return value ? "expected " + what + ", got " + Describe(*value) : "required field is missing";
}

bool IsNonEmptyString(const ojson* v) { return v && v->is_string() && !v->get<std::string>().empty(); }

// The string member `type` of an object ("" when there is none).
std::string TypeOf(const ojson& obj) {
  const ojson* type = obj.is_object() ? Member(obj, "type") : nullptr;
  return type && type->is_string() ? type->get<std::string>() : "";
}

// ---- the definition ----------------------------------------------------------------------------

// The const axes' values and the var axes' names, in order.
struct Axes {
  std::map<std::string, int64_t> constant;
  std::vector<std::string> var;
  const ojson* declared = nullptr;  // the definition's `axes` object
};

void ReadAxes(const ojson& def, Axes& axes, Problems& p) {
  const ojson* section = Member(def, "axes");
  if (!section || !section->is_object()) {
    p.Add(0, "axes", Unexpected(section, "an object"),
          "add \"axes\": {\"batch\": {\"type\": \"var\"}, \"hidden\": {\"type\": \"const\", \"value\": 4096}}");
    return;
  }
  axes.declared = section;
  for (const auto& [name, axis] : section->items()) {
    std::string field = "axes." + name;
    std::string type = TypeOf(axis);
    if (type == "var") {
      axes.var.push_back(name);
    } else if (type == "const") {
      const ojson* v = Member(axis, "value");
      if (v && v->is_number_integer() && v->get<int64_t>() >= 0) {
        axes.constant[name] = v->get<int64_t>();
      } else {
        p.Add(0, field + ".value", Unexpected(v, "an integer >= 0"), "give the axis's size, e.g. \"value\": 4096");
      }
    } else {
      p.Add(0, field + ".type", "expected \"const\" or \"var\"",
            "write {\"type\": \"var\"} or {\"type\": \"const\", \"value\": N}");
    }
  }
}

// The dtype of `inputs.x` / `outputs.y`; nullptr (and a problem) when it is not one kpilot has.
const DTypeEntry* ReadDTypeOf(const ojson& spec, const std::string& field, Problems& p) {
  const ojson* d = Member(spec, "dtype");
  if (!d || !d->is_string()) {
    p.Add(0, field + ".dtype", Unexpected(d, "a string"), "one of " + SupportedDTypes());
    return nullptr;
  }
  if (const DTypeEntry* e = FindDType(*d)) return e;
  p.Add(0, field + ".dtype",
        *d == "float4_e2m1" ? "float4_e2m1 is not supported by kpilot (no fp4 element type in its ABI)"
                            : "unknown dtype " + d->dump(),
        "use one of " + SupportedDTypes());
  return nullptr;
}

// `inputs` or `outputs`, in definition order. Shape-null inputs become ABI scalars, shape-null
// outputs 0-d tensors. Each tensor adds "axis*axis*size" to `size_terms` (a scalar its size).
void ReadTensors(const ojson& def, const char* section, const Axes& axes, Task& task,
                 std::vector<std::string>& size_terms, Problems& p) {
  const bool is_input = std::string_view(section) == "inputs";
  const ojson* tensors = Member(def, section);
  if (!tensors || !tensors->is_object() || tensors->empty()) {
    p.Add(
        0, section, Unexpected(tensors, "a non-empty object"),
        std::string("add \"") + section + "\": {\"x\": {\"shape\": [\"batch\", \"hidden\"], \"dtype\": \"float32\"}}");
    return;
  }
  for (const auto& [name, spec] : tensors->items()) {
    std::string field = std::string(section) + "." + name;
    if (!spec.is_object()) {
      p.Add(0, field, Unexpected(&spec, "an object"), "write {\"shape\": [...], \"dtype\": \"float32\"}");
      continue;
    }
    const DTypeEntry* dtype = ReadDTypeOf(spec, field, p);
    const ojson* shape = Member(spec, "shape");
    if (!shape || !(shape->is_null() || shape->is_array())) {
      p.Add(0, field + ".shape", Unexpected(shape, "a list of axis names or null"), "null makes it a scalar");
      continue;
    }
    TensorSpec t;
    t.name = name;
    std::string term;
    for (const auto& a : shape->is_array() ? *shape : ojson::array()) {
      if (!a.is_string() || !axes.declared || !axes.declared->contains(a.get<std::string>())) {
        p.Add(0, field + ".shape", "axis " + (a.is_string() ? a.dump() : Describe(a)) + " is not declared in axes",
              "declare it under \"axes\" or fix the name");
        continue;
      }
      t.shape.push_back(a.get<std::string>());
      term += t.shape.back() + "*";
    }
    if (!dtype) continue;
    size_terms.push_back(term + std::to_string(DTypeSize(dtype->dtype)));
    t.dtype = dtype->dtype;
    if (is_input && shape->is_null()) {
      task.scalars.push_back({name, dtype->dtype, 0, 0});
    } else if (is_input) {
      t.init = dtype->init;
      task.inputs.push_back(std::move(t));
    } else {
      task.outputs.push_back(std::move(t));
    }
  }
}

// Reads a Definition into `task` and `axes`.
void ReadDefinition(const ojson& def, Task& task, Axes& axes, Problems& p) {
  auto string_field = [&](const char* key, const std::string& fix) -> std::string {
    const ojson* v = Member(def, key);
    if (IsNonEmptyString(v)) return v->get<std::string>();
    p.Add(0, key, Unexpected(v, "a non-empty string"), fix);
    return "";
  };
  task.name = string_field("name", "add \"name\": \"my_kernel\"");
  string_field("op_type", "add \"op_type\": \"rmsnorm\" (the folder name under definitions/)");
  std::string reference = string_field("reference", "add the PyTorch reference source with a top-level def run(...)");
  if (!reference.empty() && reference.find("def run(") == std::string::npos) {
    p.Add(0, "reference", "no top-level function run(...)",
          "define def run(<inputs in definition order>) returning the outputs");
  }
  if (const ojson* d = Member(def, "description"); d && d->is_string()) task.description = *d;

  ReadAxes(def, axes, p);
  std::vector<std::string> size_terms;
  ReadTensors(def, "inputs", axes, task, size_terms, p);
  ReadTensors(def, "outputs", axes, task, size_terms, p);
  const ojson* in = Member(def, "inputs");
  const ojson* out = Member(def, "outputs");
  if (in && out && in->is_object() && out->is_object()) {
    for (const auto& [name, _] : out->items())
      if (in->contains(name)) p.Add(0, "outputs." + name, "has the name of an input", "rename the output");
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

// Reads workload records into Workloads, reporting problems as "FILE:LINE: field: ...".
class RecordReader {
 public:
  RecordReader(const Task& task, const Axes& axes, fs::path base, Problems& p)
      : task_(task), axes_(axes), base_(std::move(base)), p_(p) {}

  // One workload ({uuid, axes, inputs}) into `w`; relative safetensors paths in `rec` are made
  // absolute. `prefix` starts every field named ("workload." inside a workload trace).
  void Read(ojson& rec, int line, const std::string& prefix, Workload& w) {
    line_ = line;
    prefix_ = prefix;
    const ojson* uuid = Member(rec, "uuid");
    if (IsNonEmptyString(uuid)) {
      w.name = uuid->get<std::string>().substr(0, 8);
    } else {
      Add("uuid", Unexpected(uuid, "a non-empty string"),
          "give each workload a unique id, e.g. \"uuid\": \"3f2a9c1e-...\"");
    }
    w.axes = axes_.constant;
    ReadAxisValues(Member(rec, "axes"), w);
    ojson* inputs = Member(rec, "inputs");
    if (!inputs || !inputs->is_object()) {
      Add("inputs", Unexpected(inputs, "an object"),
          "describe each input, e.g. \"inputs\": {\"x\": {\"type\": \"random\"}}");
      return;
    }
    for (auto& [name, spec] : inputs->items()) ReadInput(name, spec, w);
  }

 private:
  void Add(const std::string& field, const std::string& problem, const std::string& fix) {
    p_.Add(line_, prefix_ + field, problem, fix);
  }

  void ReadAxisValues(const ojson* axes, Workload& w) {
    if (!axes || !axes->is_object()) {
      Add("axes", Unexpected(axes, "an object"), "bind every var axis, e.g. \"axes\": {\"batch\": 8}");
      return;
    }
    for (const auto& [name, value] : axes->items()) {
      std::string field = "axes." + name;
      if (!value.is_number_integer() || value.get<int64_t>() < 0) {
        Add(field, Unexpected(&value, "an integer >= 0"), "");
        continue;
      }
      int64_t v = value.get<int64_t>();
      if (auto c = axes_.constant.find(name); c != axes_.constant.end()) {
        if (c->second != v)
          Add(field, "const axis is " + std::to_string(c->second) + " in the definition, not " + std::to_string(v),
              "remove it from the record or fix the value");
      } else if (std::find(axes_.var.begin(), axes_.var.end(), name) == axes_.var.end()) {
        Add(field, "no such axis in the definition", "remove it or fix the name");
      } else {
        w.axes[name] = v;
      }
    }
    for (const auto& name : axes_.var)
      if (!axes->contains(name))
        Add("axes." + name, "var axis is not bound", "add \"" + name + "\": N to the record's axes");
  }

  void ReadInput(const std::string& name, ojson& spec, Workload& w) {
    std::string field = "inputs." + name;
    auto named = [&](const auto& v) { return v.name == name; };
    bool is_tensor = std::any_of(task_.inputs.begin(), task_.inputs.end(), named);
    bool is_scalar = std::any_of(task_.scalars.begin(), task_.scalars.end(), named);
    if (!is_tensor && !is_scalar) {
      Add(field, "no such input in the definition", "remove it or fix the name");
      return;
    }
    std::string type = TypeOf(spec);
    if (type == "random") return;
    if (type == "scalar") {
      const ojson* v = Member(spec, "value");
      if (!v || !(v->is_number() || v->is_boolean())) {
        Add(field + ".value", Unexpected(v, "a number or boolean"), "");
      } else if (!is_scalar) {
        Add(field, "a scalar value for a tensor input",
            "use {\"type\": \"random\"} or {\"type\": \"safetensors\", ...}");
      } else {
        w.scalar_values[name] = v->is_boolean() ? (v->get<bool>() ? 1.0 : 0.0) : v->get<double>();
      }
    } else if (type == "safetensors") {
      if (!is_tensor) Add(field, "a safetensors file for a scalar input", "use {\"type\": \"scalar\", \"value\": ...}");
      if (!IsNonEmptyString(Member(spec, "tensor_key")))
        Add(field + ".tensor_key", "expected a non-empty string", "name the tensor inside the file");
      ojson* path = Member(spec, "path");
      if (!IsNonEmptyString(path)) {
        Add(field + ".path", "expected a non-empty string", "the .safetensors file, relative to the dataset root");
        return;
      }
      fs::path file = path->get<std::string>();
      if (file.is_relative()) file = (base_ / file).lexically_normal();
      std::error_code ec;
      if (!fs::is_regular_file(file, ec))
        Add(field + ".path", "file " + file.string() + " not found",
            "relative paths are resolved against " + base_.string());
      *path = file.string();
    } else {
      Add(field + ".type", type.empty() ? "missing" : "unknown input type " + Quote(type),
          "use \"random\", \"scalar\" or \"safetensors\"");
    }
  }

  const Task& task_;
  const Axes& axes_;
  fs::path base_;
  Problems& p_;
  int line_ = 0;
  std::string prefix_;
};

Status ReadWorkloads(const fs::path& file, Task& task, const Axes& axes) {
  auto text = ReadFile(file);
  if (!text.ok()) return text.status();
  Problems p(file);
  RecordReader reader(task, axes, DatasetRoot(file, "workloads").value_or(file.parent_path()), p);
  std::map<std::string, int> names;  // workload name → line
  std::istringstream lines(*text);
  std::string line_text;
  for (int line = 1; std::getline(lines, line_text); ++line) {
    if (line_text.find_first_not_of(" \t\r") == std::string::npos) continue;
    ojson rec = ojson::parse(line_text, nullptr, /*allow_exceptions=*/false);
    if (rec.is_discarded() || !rec.is_object()) {
      p.Add(line, "record", rec.is_discarded() ? "not valid JSON" : Unexpected(&rec, "a JSON object"),
            "each line is one workload trace {\"definition\": ..., \"workload\": {\"uuid\": ..., \"axes\": {...}, "
            "\"inputs\": {...}}}");
      continue;
    }
    // flashinfer-bench's datasets hold workload traces ({definition, workload, solution: null,
    // evaluation: null}); a bare workload record is read as well.
    std::string prefix;
    ojson* workload = &rec;
    if (ojson* inner = Member(rec, "workload")) {
      prefix = "workload.";
      if (!inner->is_object()) {
        p.Add(line, "workload", Unexpected(inner, "an object"),
              "write {\"uuid\": ..., \"axes\": {...}, \"inputs\": {...}}");
        continue;
      }
      const ojson* def = Member(rec, "definition");
      if (def && (!def->is_string() || *def != task.name))
        p.Add(line, "definition", "is " + def->dump() + ", not this definition's name " + Quote(task.name),
              "keep only the workloads of " + task.name + " in this file");
      workload = inner;
    }
    Workload w;
    w.line = line;
    reader.Read(*workload, line, prefix, w);
    if (w.name.empty()) continue;
    if (auto [it, fresh] = names.emplace(w.name, line); !fresh) {
      p.Add(line, prefix + "uuid",
            "starts with the same 8 characters as line " + std::to_string(it->second) + "'s (" + w.name + ")",
            "workloads are named by their uuid's first 8 characters: make them differ");
      continue;
    }
    if (!task.bytes_formula.empty() && w.axes.size() == axes.constant.size() + axes.var.size()) {
      auto bytes = EvaluateFormula(task.bytes_formula, std::map<std::string, double>(w.axes.begin(), w.axes.end()));
      if (bytes.ok()) w.min_bytes = *bytes;
    }
    w.record = workload->dump();
    task.workloads.push_back(std::move(w));
  }
  if (!p.empty()) return p.ToStatus();
  if (task.workloads.empty())
    return Status::InvalidInput(file.string() + ": no workloads — add one workload trace per line");
  return Status::Ok();
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
    return Status::InvalidInput(def_path.string() + ":" + std::to_string(LineAt(*text, e.byte)) + ": not valid JSON (" +
                                e.what() + ") — a Definition is one JSON object");
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
  Axes axes;
  Problems p(def_path);
  ReadDefinition(def, task, axes, p);
  if (!p.empty()) return p.ToStatus();

  fs::path jsonl;
  if (workloads) {
    jsonl = fs::absolute(*workloads, ec).lexically_normal();
  } else {
    auto found = FindWorkloads(def_path);
    if (!found.ok()) return found.status();
    jsonl = *found;
  }
  Status s = ReadWorkloads(jsonl, task, axes);
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
      {"timestamp", in.timestamp.empty() ? UtcNow() : in.timestamp},
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
