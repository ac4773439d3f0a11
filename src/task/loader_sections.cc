// The per-entry sections of task.toml: tensors (with init and tolerance), scalars, workloads.
#include <kpilot/kernel.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <utility>

#include "task/loader_internal.h"

namespace kpilot::loader {
namespace {

struct InitKindInfo {
  InitKind kind;
  const char* name;
  const char* a;  // parameter stored in InitSpec::a
  const char* b;  // parameter stored in InitSpec::b, or nullptr
  double a_default;
  double b_default;
};

// Defaults as documented in task.h (InitSpec).
constexpr InitKindInfo kInitKinds[] = {
    {InitKind::kNormal, "normal", "mean", "std", 0, 1},        {InitKind::kUniform, "uniform", "low", "high", 0, 1},
    {InitKind::kRandint, "randint", "low", "high", 0, 10},     {InitKind::kRange, "range", "start", "step", 0, 1},
    {InitKind::kConstant, "constant", "value", nullptr, 0, 0},
};

// Representable range of an integer (or bool) dtype.
std::pair<double, double> IntegerRange(DType t) {
  switch (t) {
    case DType::kI64:
      return {-9223372036854775808.0, 9223372036854775807.0};
    case DType::kI32:
      return {-2147483648.0, 2147483647.0};
    case DType::kI16:
      return {-32768.0, 32767.0};
    case DType::kI8:
      return {-128.0, 127.0};
    case DType::kU8:
      return {0.0, 255.0};
    case DType::kBool:
      return {0.0, 1.0};
    default:
      return {-INFINITY, INFINITY};
  }
}

// Largest finite value of a float dtype.
double FloatMax(DType t) {
  switch (t) {
    case DType::kF32:
      return FLT_MAX;
    case DType::kF16:
      return 65504.0;
    case DType::kBF16:
      return 3.3895313892515355e38;
    case DType::kFP8E4M3:
      return 448.0;
    case DType::kFP8E5M2:
      return 57344.0;
    default:
      return DBL_MAX;
  }
}

std::string RangeText(DType t) {
  auto [lo, hi] = IntegerRange(t);
  return FormatNumber(lo) + ".." + FormatNumber(hi);
}

InitSpec ReadInit(const toml::node& n, const std::string& field, std::optional<DType> dtype, Diagnostics& d) {
  InitSpec spec;
  const toml::table* t = ReadTable(n, field, d);
  if (!t) return spec;
  const InitKindInfo* info = &kInitKinds[0];
  if (const toml::node* dist = t->get("dist")) {
    auto name = ReadString(*dist, Field(field, "dist"), d);
    if (!name) return spec;
    info = nullptr;
    for (const auto& k : kInitKinds)
      if (*name == k.name) info = &k;
    if (!info) {
      d.Add(LineOf(*dist), Field(field, "dist"), "unknown distribution " + Quote(*name),
            "use normal, uniform, randint, range or constant");
      return spec;
    }
  }
  spec.kind = info->kind;
  spec.a = info->a_default;
  spec.b = info->b_default;
  std::string takes = info->b ? std::string(info->a) + " and " + info->b : info->a;
  bool ok = true;
  bool has_a = false;
  const toml::node* b_node = nullptr;
  for (auto&& [key, value] : *t) {
    std::string_view k = key.str();
    if (k == "dist") continue;
    std::string f = Field(field, k);
    bool is_a = k == info->a;
    bool is_b = info->b && k == info->b;
    if (!is_a && !is_b) {
      d.Add(static_cast<int>(key.source().begin.line), f, "not a parameter of " + Quote(info->name),
            std::string(info->name) + " takes " + takes);
      ok = false;
      continue;
    }
    auto v = ReadNumber(value, f, d, /*allow_nonfinite=*/info->kind == InitKind::kConstant);
    if (!v) {
      ok = false;
      continue;
    }
    if (info->kind == InitKind::kRandint && *v != std::floor(*v)) {
      d.Add(LineOf(value), f, "randint bounds must be integers, got " + FormatNumber(*v),
            "write a whole number, e.g. " + FormatNumber(std::floor(*v)));
      ok = false;
      continue;
    }
    (is_a ? spec.a : spec.b) = *v;
    if (is_a) has_a = true;
    if (is_b) b_node = &value;
  }
  if (info->kind == InitKind::kConstant && !has_a) {
    d.Add(LineOf(*t), Field(field, "value"), "required for dist = \"constant\"", "add value = <number>");
  }
  if (!ok) return spec;
  bool bounded = info->kind == InitKind::kUniform || info->kind == InitKind::kRandint;
  if (bounded && !(spec.a < spec.b)) {
    d.Add(LineOf(*t), field, "low (" + FormatNumber(spec.a) + ") must be less than high (" + FormatNumber(spec.b) + ")",
          std::string("set low < high") + (info->kind == InitKind::kRandint ? "; high is exclusive" : ""));
  }
  if (info->kind == InitKind::kNormal && !(spec.b > 0)) {
    d.Add(b_node ? LineOf(*b_node) : LineOf(*t), Field(field, "std"), "must be positive, got " + FormatNumber(spec.b),
          "use std > 0 (for a fixed value use dist = \"constant\")");
  }
  if (info->kind == InitKind::kRandint && dtype && !IsFloat(*dtype)) {
    auto [lo, hi] = IntegerRange(*dtype);
    if (spec.a < lo || spec.b - 1 > hi) {
      d.Add(LineOf(*t), field,
            "randint range [" + FormatNumber(spec.a) + ", " + FormatNumber(spec.b) + ") does not fit dtype " +
                std::string(DTypeName(*dtype)) + " (" + RangeText(*dtype) + ")",
            "narrow the range or use a wider dtype");
    }
  }
  return spec;
}

std::vector<std::string> ReadShape(const toml::node& n, const std::string& field, Diagnostics& d) {
  std::vector<std::string> shape;
  const auto* arr = n.as_array();
  if (!arr) {
    d.Add(LineOf(n), field, "expected an array of axis names, got " + Describe(n),
          "write e.g. shape = [\"m\", \"n\"], or [] for a 0-d tensor");
    return shape;
  }
  if (arr->size() > KPILOT_MAX_RANK) {
    d.Add(LineOf(n), field,
          "rank " + std::to_string(arr->size()) + " exceeds the maximum of " + std::to_string(KPILOT_MAX_RANK),
          "merge adjacent axes into one");
  }
  for (size_t i = 0; i < arr->size(); ++i) {
    const toml::node& el = *arr->get(i);
    const auto* s = el.as_string();
    if (!s || !IsIdentifier(s->get())) {
      d.Add(LineOf(el), Indexed(field, i), "expected an axis name (an identifier in quotes), got " + Describe(el),
            "name the axis, e.g. \"k\", and bind it in every workload's axes");
      continue;
    }
    shape.push_back(s->get());
  }
  return shape;
}

// The name of a tensor or scalar: an identifier, as the ABI hands it to the kernel.
std::string ReadArgName(const toml::table& t, const std::string& field, Diagnostics& d) {
  const toml::node* n = Require(t, "name", field, "add name = \"x\"", d);
  if (!n) return "";
  auto name = ReadString(*n, Field(field, "name"), d);
  if (!name) return "";
  if (!IsIdentifier(*name)) {
    d.Add(LineOf(*n), Field(field, "name"), Quote(*name) + " is not an identifier",
          "use letters, digits and '_', not starting with a digit");
  }
  return *name;
}

std::optional<DType> ReadRequiredDType(const toml::table& t, const std::string& field, Diagnostics& d) {
  const toml::node* n = Require(t, "dtype", field, "add dtype = \"f32\" (one of " + DTypeNameList() + ")", d);
  return n ? ReadDType(*n, Field(field, "dtype"), d) : std::nullopt;
}

TensorSpec ReadTensor(const toml::table& t, const std::string& field, bool is_input, const Tolerance& task_tolerance,
                      Diagnostics& d) {
  TensorSpec spec;
  spec.line = LineOf(t);
  RejectUnknownKeys(t, field, {"name", "dtype", "shape", "init", "tolerance"}, d);
  spec.name = ReadArgName(t, field, d);
  std::optional<DType> dtype = ReadRequiredDType(t, field, d);
  if (dtype) spec.dtype = *dtype;
  if (const toml::node* n = Require(t, "shape", field, "add shape = [\"n\"] (axis names), or [] for a 0-d tensor", d)) {
    spec.shape = ReadShape(*n, Field(field, "shape"), d);
  }
  if (const toml::node* n = t.get("init")) {
    if (is_input) {
      spec.init = ReadInit(*n, Field(field, "init"), dtype, d);
    } else {
      d.Add(LineOf(*n), Field(field, "init"), "init applies to inputs only",
            "remove it; the kernel writes its outputs");
    }
  }
  if (const toml::node* n = t.get("tolerance")) {
    if (!is_input) {
      Tolerance tol = task_tolerance;
      ReadTolerance(*n, Field(field, "tolerance"), &tol, d);
      spec.tolerance = tol;
    } else {
      d.Add(LineOf(*n), Field(field, "tolerance"), "tolerance applies to outputs only",
            "remove it, or move it to the output it should govern");
    }
  }
  return spec;
}

// A scalar's value, checked against its dtype when known.
std::optional<double> ReadScalarValue(const toml::node& n, const std::string& field, std::optional<DType> dtype,
                                      Diagnostics& d) {
  if (const auto* b = n.as_boolean()) {
    if (dtype == DType::kBool) return b->get() ? 1.0 : 0.0;
    d.Add(LineOf(n), field, "expected a number, got " + Describe(n), "booleans are for dtype \"bool\"; write a number");
    return std::nullopt;
  }
  auto v = ReadNumber(n, field, d, /*allow_nonfinite=*/true);
  if (!v || !dtype) return v;
  std::string name(DTypeName(*dtype));
  if (!IsFloat(*dtype)) {
    if (!std::isfinite(*v) || *v != std::floor(*v)) {
      d.Add(LineOf(n), field, FormatNumber(*v) + " is not a whole number but dtype is " + name,
            "write an integer, or use a float dtype");
      return std::nullopt;
    }
    auto [lo, hi] = IntegerRange(*dtype);
    if (*v < lo || *v > hi) {
      d.Add(LineOf(n), field, FormatNumber(*v) + " is out of range for " + name + " (" + RangeText(*dtype) + ")",
            "use a value in range or a wider dtype");
      return std::nullopt;
    }
  } else if (std::isfinite(*v) && std::fabs(*v) > FloatMax(*dtype)) {
    d.Add(LineOf(n), field,
          FormatNumber(*v) + " overflows " + name + " (largest finite value " + FormatNumber(FloatMax(*dtype)) + ")",
          "use a smaller value or a wider dtype");
    return std::nullopt;
  }
  return v;
}

ScalarSpec ReadScalar(const toml::table& t, const std::string& field, Diagnostics& d) {
  ScalarSpec spec;
  spec.line = LineOf(t);
  RejectUnknownKeys(t, field, {"name", "dtype", "value"}, d);
  spec.name = ReadArgName(t, field, d);
  std::optional<DType> dtype = ReadRequiredDType(t, field, d);
  if (dtype) spec.dtype = *dtype;
  if (const toml::node* n = Require(t, "value", field, "add value = <number>", d)) {
    if (auto v = ReadScalarValue(*n, Field(field, "value"), dtype, d)) spec.value = *v;
  }
  return spec;
}

Workload ReadWorkload(const toml::table& t, const std::string& field, const std::vector<ScalarSpec>& scalars,
                      WorkloadLines* lines, Diagnostics& d) {
  Workload w;
  w.line = LineOf(t);
  lines->axes = w.line;
  RejectUnknownKeys(t, field, {"name", "axes", "scalars"}, d);
  if (const toml::node* n = Require(t, "name", field, "add name = \"small\"", d)) {
    if (auto name = ReadString(*n, Field(field, "name"), d)) {
      w.name = *name;
      if (!IsPlainName(*name)) {
        d.Add(LineOf(*n), Field(field, "name"),
              Quote(*name) + " contains characters other than letters, digits, '_' and '-'",
              "rename it, e.g. \"1M\" or \"large\"");
      }
    }
  }
  if (const toml::node* n = t.get("axes")) {
    std::string axes_field = Field(field, "axes");
    if (const toml::table* axes = ReadTable(*n, axes_field, d)) {
      lines->axes = LineOf(*axes);
      for (auto&& [key, value] : *axes) {
        std::string axis(key.str());
        std::string f = Field(axes_field, axis);
        lines->axis[axis] = static_cast<int>(key.source().begin.line);
        auto v = ReadInteger(value, f, d);
        if (!v) continue;
        if (*v <= 0) {
          d.Add(LineOf(value), f, "must be a positive integer, got " + std::to_string(*v),
                "give the axis size, e.g. " + axis + " = 1024");
          continue;
        }
        w.axes[axis] = *v;
      }
    }
  }
  if (const toml::node* n = t.get("scalars")) {
    std::string scalars_field = Field(field, "scalars");
    if (const toml::table* overrides = ReadTable(*n, scalars_field, d)) {
      for (auto&& [key, value] : *overrides) {
        std::string name(key.str());
        std::string f = Field(scalars_field, name);
        const ScalarSpec* spec = nullptr;
        for (const auto& s : scalars)
          if (s.name == name) spec = &s;
        if (!spec) {
          d.Add(static_cast<int>(key.source().begin.line), f, "no scalar named " + Quote(name),
                "declare it under [[scalars]], or remove it");
          continue;
        }
        if (auto v = ReadScalarValue(value, f, spec->dtype, d)) w.scalar_values[name] = *v;
      }
    }
  }
  return w;
}

}  // namespace

void ReadTolerance(const toml::node& n, const std::string& field, Tolerance* tol, Diagnostics& d) {
  const toml::table* t = ReadTable(n, field, d);
  if (!t) return;
  RejectUnknownKeys(*t, field, {"atol", "rtol", "matched_ratio"}, d);
  for (const char* key : {"atol", "rtol"}) {
    const toml::node* v = t->get(key);
    if (!v) continue;
    std::string f = Field(field, key);
    auto x = ReadNumber(*v, f, d);
    if (!x) continue;
    if (*x < 0) {
      d.Add(LineOf(*v), f, "must be non-negative, got " + FormatNumber(*x), "use 0 or a positive number, e.g. 1e-5");
      continue;
    }
    (std::string_view(key) == "atol" ? tol->atol : tol->rtol) = *x;
  }
  if (const toml::node* v = t->get("matched_ratio")) {
    std::string f = Field(field, "matched_ratio");
    if (auto x = ReadNumber(*v, f, d)) {
      if (*x <= 0 || *x > 1) {
        d.Add(LineOf(*v), f, "must be in (0, 1], got " + FormatNumber(*x),
              "use 1.0 to require every element to match, or e.g. 0.99 to allow 1% mismatches");
      } else {
        tol->matched_ratio = *x;
      }
    }
  }
}

std::vector<TensorSpec> ReadTensors(const toml::node& n, const std::string& key, bool is_input,
                                    const Tolerance& task_tolerance, Diagnostics& d) {
  std::vector<TensorSpec> tensors;
  auto tables = ReadTableArray(n, key, d);
  for (size_t i = 0; i < tables.size(); ++i) {
    tensors.push_back(tables[i] ? ReadTensor(*tables[i], Indexed(key, i), is_input, task_tolerance, d) : TensorSpec{});
  }
  return tensors;
}

std::vector<ScalarSpec> ReadScalars(const toml::node& n, Diagnostics& d) {
  std::vector<ScalarSpec> scalars;
  auto tables = ReadTableArray(n, "scalars", d);
  for (size_t i = 0; i < tables.size(); ++i)
    scalars.push_back(tables[i] ? ReadScalar(*tables[i], Indexed("scalars", i), d) : ScalarSpec{});
  return scalars;
}

std::vector<Workload> ReadWorkloads(const toml::node& n, const std::vector<ScalarSpec>& scalars,
                                    std::vector<WorkloadLines>* lines, Diagnostics& d) {
  std::vector<Workload> workloads;
  auto tables = ReadTableArray(n, "workloads", d);
  for (size_t i = 0; i < tables.size(); ++i) {
    lines->emplace_back();
    lines->back().axes = tables[i] ? LineOf(*tables[i]) : LineOf(n);
    workloads.push_back(tables[i] ? ReadWorkload(*tables[i], Indexed("workloads", i), scalars, &lines->back(), d)
                                  : Workload{});
  }
  return workloads;
}

std::vector<std::string> AxesOf(const Task& task) {
  std::vector<std::string> axes;
  for (const auto* group : {&task.inputs, &task.outputs})
    for (const auto& t : *group)
      for (const auto& a : t.shape)
        if (std::find(axes.begin(), axes.end(), a) == axes.end()) axes.push_back(a);
  std::sort(axes.begin(), axes.end());
  return axes;
}

void CheckAxes(const Task& task, const std::vector<WorkloadLines>& lines, Diagnostics& d) {
  std::map<std::string, std::string> used;  // axis → the first shape that uses it
  for (auto [group, key] : {std::pair{&task.inputs, "inputs"}, std::pair{&task.outputs, "outputs"}})
    for (size_t i = 0; i < group->size(); ++i)
      for (const auto& axis : (*group)[i].shape) used.emplace(axis, Indexed(key, i) + ".shape");
  for (size_t i = 0; i < lines.size() && i < task.workloads.size(); ++i) {
    std::string field = Field(Indexed("workloads", i), "axes");
    for (const auto& [axis, where] : used) {
      if (lines[i].axis.count(axis)) continue;
      d.Add(lines[i].axes, field, "axis " + Quote(axis) + " is used by " + where + " but not bound",
            "add " + axis + " = <size>");
    }
    for (const auto& [axis, line] : lines[i].axis) {
      if (used.count(axis)) continue;
      d.Add(line, Field(field, axis), "axis " + Quote(axis) + " is not used by any tensor shape",
            "remove it, or use it in a shape");
    }
  }
}

}  // namespace kpilot::loader
