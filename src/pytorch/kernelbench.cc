// KernelBench problem files loaded into a Task through the worker's `describe` reply.
#include <cmath>
#include <set>

#include "core/fs.h"
#include "core/sha256.h"
#include "pytorch/pytorch.h"

namespace kpilot {
namespace fs = std::filesystem;
using nlohmann::json;
namespace {

constexpr double kDescribeTimeoutS = 300;

bool IsIdentifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

// Problems in one reply, reported together: "p.py: describe: field: problem".
class Problems {
 public:
  explicit Problems(const fs::path& problem) : prefix_(problem.filename().string() + ": describe: ") {}
  void Add(const std::string& field, const std::string& problem) {
    text_ += (text_.empty() ? "" : "\n") + prefix_ + field + ": " + problem;
  }
  bool empty() const { return text_.empty(); }
  Status ToStatus() const {
    return Status::InvalidInput(text_ +
                                "\n(the worker's description of the problem is malformed: a kpilot_torch bug, or "
                                "a problem file it does not understand)");
  }

 private:
  std::string prefix_;
  std::string text_;
};

std::string Field(const std::string& list, size_t i, const std::string& key) {
  return list + "[" + std::to_string(i) + "]." + key;
}

std::optional<std::string> StringAt(const json& j, const std::string& key, const std::string& field, Problems& p) {
  if (!j.contains(key) || !j.at(key).is_string()) {
    p.Add(field, j.contains(key) ? "expected a string, got " + j.at(key).dump() : "missing");
    return std::nullopt;
  }
  return j.at(key).get<std::string>();
}

std::optional<DType> DTypeAt(const json& j, const std::string& field, Problems& p) {
  auto name = StringAt(j, "dtype", field, p);
  if (!name) return std::nullopt;
  auto dtype = ParseDType(*name);
  if (!dtype) p.Add(field, "unknown dtype \"" + *name + "\" (kpilot knows " + DTypeNameList() + ")");
  return dtype;
}

// A tensor of `inputs` or `outputs`; its shape's axes must be bound in `axes`.
std::optional<TensorSpec> ReadTensor(const json& j, const std::string& list, size_t i, const json& axes, Problems& p) {
  if (!j.is_object()) {
    p.Add(list + "[" + std::to_string(i) + "]", "expected an object");
    return std::nullopt;
  }
  TensorSpec t;
  auto name = StringAt(j, "name", Field(list, i, "name"), p);
  if (name && !IsIdentifier(*name)) p.Add(Field(list, i, "name"), "\"" + *name + "\" is not an identifier");
  auto dtype = DTypeAt(j, Field(list, i, "dtype"), p);
  if (!j.contains("shape") || !j.at("shape").is_array()) {
    p.Add(Field(list, i, "shape"), "expected an array of axis names");
    return std::nullopt;
  }
  for (const auto& axis : j.at("shape")) {
    if (!axis.is_string()) {
      p.Add(Field(list, i, "shape"), "expected axis names, got " + axis.dump());
      return std::nullopt;
    }
    std::string a = axis.get<std::string>();
    if (!axes.contains(a)) p.Add(Field(list, i, "shape"), "axis \"" + a + "\" is not bound in axes");
    t.shape.push_back(a);
  }
  if (list == "inputs") {
    t.role = j.value("role", "input");
    if (t.role != "input" && t.role != "param")
      p.Add(Field(list, i, "role"), "\"" + t.role + "\" is neither \"input\" nor \"param\"");
  }
  if (!name || !dtype) return std::nullopt;
  t.name = *name;
  t.dtype = *dtype;
  return t;
}

}  // namespace

Result<Task> TaskFromDescribe(const json& reply, const fs::path& problem) {
  std::string file = problem.filename().string();
  if (!reply.is_object()) return Status::InvalidInput(file + ": the worker's describe reply is not a JSON object");
  if (reply.value("status", "") == "error")
    return Status::InvalidInput(reply.value("message", file + ": the worker could not describe the problem"));
  Problems p(problem);
  if (reply.value("version", 0) != 1) p.Add("version", "expected 1, got " + reply.value("version", json()).dump());
  if (reply.value("status", "") != "ok") p.Add("status", "expected \"ok\" or \"error\"");
  const json axes = reply.value("axes", json::object());
  if (!axes.is_object()) p.Add("axes", "expected an object of axis sizes");

  Task task;
  std::error_code ec;
  fs::path abs = fs::absolute(problem, ec).lexically_normal();
  task.name = reply.value("name", problem.stem().string());
  if (task.name.empty()) task.name = problem.stem().string();
  task.description = "KernelBench problem " + file;
  task.backend = Backend::kCuda;
  task.format = TaskFormat::kKernelBench;
  task.dir = abs.parent_path();
  task.reference = {"reference", abs, ReferenceKind::kPython, "Model"};

  Workload w;
  w.name = "default";
  if (axes.is_object())
    for (const auto& [name, size] : axes.items()) {
      if (!size.is_number_integer() || size.get<int64_t>() < 0)
        p.Add("axes." + name, "expected a non-negative integer");
      else
        w.axes[name] = size.get<int64_t>();
    }
  for (const char* list : {"inputs", "outputs"}) {
    json arr = reply.value(list, json::array());
    if (!arr.is_array()) {
      p.Add(list, "expected an array");
      continue;
    }
    for (size_t i = 0; i < arr.size(); ++i)
      if (auto t = ReadTensor(arr[i], list, i, axes, p))
        (std::string(list) == "inputs" ? task.inputs : task.outputs).push_back(std::move(*t));
  }
  if (task.outputs.empty() && p.empty())
    p.Add("outputs", "no outputs (forward must return a tensor or a tuple of tensors)");
  json scalars = reply.value("scalars", json::array());
  for (size_t i = 0; scalars.is_array() && i < scalars.size(); ++i) {
    const json& s = scalars[i];
    ScalarSpec spec;
    auto name = s.is_object() ? StringAt(s, "name", Field("scalars", i, "name"), p) : std::nullopt;
    auto dtype = s.is_object() ? DTypeAt(s, Field("scalars", i, "dtype"), p) : std::nullopt;
    if (!s.is_object() || !s.contains("value") || !(s.at("value").is_number() || s.at("value").is_boolean())) {
      p.Add(Field("scalars", i, "value"), "expected a number or a boolean");
      continue;
    }
    if (!name || !dtype) continue;
    spec.name = *name;
    spec.dtype = *dtype;
    spec.value = s.at("value").is_boolean() ? (s.at("value").get<bool>() ? 1.0 : 0.0) : s.at("value").get<double>();
    task.scalars.push_back(spec);
  }
  std::set<std::string> seen;
  for (const auto* list : {&task.inputs, &task.outputs})
    for (const auto& t : *list)
      if (!seen.insert(t.name).second) p.Add("inputs/outputs", "\"" + t.name + "\" is named twice");
  for (const auto& s : task.scalars)
    if (!seen.insert(s.name).second) p.Add("scalars", "\"" + s.name + "\" is named twice");

  if (reply.contains("tolerance")) {
    const json& tol = reply.at("tolerance");
    for (const char* key : {"atol", "rtol"})
      if (!tol.is_object() || !tol.contains(key) || !tol.at(key).is_number() || tol.at(key).get<double>() < 0)
        p.Add(std::string("tolerance.") + key, "expected a non-negative number");
    if (p.empty()) {
      task.tolerance.atol = tol.at("atol").get<double>();
      task.tolerance.rtol = tol.at("rtol").get<double>();
      task.tolerance.matched_ratio = tol.value("matched_ratio", 1.0);
    }
  }
  for (const char* key : {"flops", "bytes"})
    if (reply.contains(key) &&
        (!reply.at(key).is_number() || !std::isfinite(reply.at(key).get<double>()) || reply.at(key).get<double>() < 0))
      p.Add(key, "expected a non-negative number");
  if (!p.empty()) return p.ToStatus();
  w.flops = reply.value("flops", 0.0);
  w.min_bytes = reply.value("bytes", 0.0);
  // Constant formulas, so what reads the roofline formulas (profile, prompts) sees the same numbers.
  if (w.flops > 0) task.flops_formula = json(w.flops).dump();
  if (w.min_bytes > 0) task.bytes_formula = json(w.min_bytes).dump();
  task.workloads.push_back(std::move(w));
  return task;
}

namespace {

// Where a problem's describe reply is kept, named by everything it depends on: the problem file's
// text, the interpreter, the torch installed (the bytecode cache's stamp of it) and the worker's
// own sources. "" when there is nothing to name it by (no cache folder, no filled bytecode cache).
fs::path DescribeCachePath(const PythonWorker& worker, const fs::path& problem) {
  if (!BytecodeCacheReady(worker)) return {};
  auto text = ReadFile(problem);
  auto stamp = ReadFile(worker.bytecode_cache / "ready");
  if (!text.ok() || !stamp.ok()) return {};
  Sha256Builder key;
  key.Add(*text).Add("\n").Add(worker.python.string()).Add("\n").Add(*stamp);
  for (const char* source : {"kernelbench.py", "problem.py", "native.py", "worker.py"})
    if (auto s = ReadFile(worker.pythonpath / "kpilot_torch" / source); s.ok()) key.Add(*s);
  return KpilotCacheRoot() / "describe" / (key.HexDigest().substr(0, 32) + ".json");
}

}  // namespace

Result<Task> LoadKernelBenchProblem(ProcessRunner& processes, const PythonWorker& worker, const fs::path& problem) {
  std::error_code ec;
  if (!fs::is_regular_file(problem, ec)) return Status::NotFound(problem.string() + ": no such problem file");
  fs::path abs = fs::absolute(problem, ec).lexically_normal();
  // A described problem is not described again (a KernelBench bench loads 250 of them: each
  // describe starts Python and torch). The reply is only kept once it has made a valid task.
  fs::path cached = DescribeCachePath(worker, abs);
  if (!cached.empty())
    if (auto text = ReadFile(cached); text.ok())
      if (json reply = json::parse(*text, nullptr, false); reply.is_object())
        if (auto task = TaskFromDescribe(reply, abs); task.ok()) return task;
  json request = {{"version", 1}, {"mode", "describe"}, {"format", "kernelbench"}, {"problem", abs.string()}};
  auto reply = RunWorker(processes, worker, "describe", request, kDescribeTimeoutS);
  if (!reply.ok()) return reply.status().WithContext("describing " + problem.string());
  auto task = TaskFromDescribe(*reply, abs);
  if (task.ok() && cached.empty()) cached = DescribeCachePath(worker, abs);  // the describe filled the cache
  if (task.ok() && !cached.empty()) (void)WriteFileAtomic(cached, reply->dump() + "\n");
  return task;
}

}  // namespace kpilot
