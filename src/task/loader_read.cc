#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include "task/loader_internal.h"

namespace kpilot::loader {

void Diagnostics::Add(int line, const std::string& field, const std::string& problem, const std::string& fix) {
  std::string text = file_ + ":" + std::to_string(line) + ": " + field + ": " + problem;
  if (!fix.empty()) text += " — " + fix;
  entries_.push_back({line, std::move(text)});
}

std::string Diagnostics::Joined() const {
  std::vector<Entry> sorted = entries_;
  std::stable_sort(sorted.begin(), sorted.end(), [](const Entry& a, const Entry& b) { return a.line < b.line; });
  std::string out;
  for (const auto& e : sorted) {
    if (!out.empty()) out += '\n';
    out += e.text;
  }
  return out;
}

const std::vector<std::string_view>& TopLevelKeys() {
  static const std::vector<std::string_view> kKeys = {
      "name",        "description", "backend",   "reference",         "baselines", "inputs",
      "outputs",     "scalars",     "tolerance", "workloads",         "roofline",  "params",
      "constraints", "libraries",   "cutlass",   "compute_precision", "draw"};
  return kKeys;
}

std::string Field(const std::string& prefix, std::string_view key) {
  return prefix.empty() ? std::string(key) : prefix + "." + std::string(key);
}

std::string Indexed(const std::string& prefix, size_t i) { return prefix + "[" + std::to_string(i) + "]"; }

int LineOf(const toml::node& n) { return std::max(1, static_cast<int>(n.source().begin.line)); }

std::string Quote(std::string_view s) { return "\"" + std::string(s) + "\""; }

std::string FormatNumber(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

std::string Describe(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::string:
      return "string " + Quote(n.as_string()->get());
    case toml::node_type::integer:
      return "integer " + std::to_string(n.as_integer()->get());
    case toml::node_type::floating_point:
      return "float " + FormatNumber(n.as_floating_point()->get());
    case toml::node_type::boolean:
      return n.as_boolean()->get() ? "boolean true" : "boolean false";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::table:
      return "a table";
    case toml::node_type::date:
    case toml::node_type::time:
    case toml::node_type::date_time:
      return "a date/time";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

bool IsIdentifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

bool IsPlainName(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
}

std::optional<std::string> ReadString(const toml::node& n, const std::string& field, Diagnostics& d) {
  if (const auto* s = n.as_string()) return s->get();
  d.Add(LineOf(n), field, "expected a string, got " + Describe(n), "put the value in quotes");
  return std::nullopt;
}

std::optional<double> ReadNumber(const toml::node& n, const std::string& field, Diagnostics& d, bool allow_nonfinite) {
  std::optional<double> v;
  if (const auto* i = n.as_integer()) v = static_cast<double>(i->get());
  if (const auto* f = n.as_floating_point()) v = f->get();
  if (!v) {
    d.Add(LineOf(n), field, "expected a number, got " + Describe(n), "write a number, e.g. 1.0");
    return std::nullopt;
  }
  if (!allow_nonfinite && !std::isfinite(*v)) {
    d.Add(LineOf(n), field, "expected a finite number, got " + FormatNumber(*v), "write a finite number");
    return std::nullopt;
  }
  return v;
}

std::optional<int64_t> ReadInteger(const toml::node& n, const std::string& field, Diagnostics& d) {
  if (const auto* i = n.as_integer()) return i->get();
  d.Add(LineOf(n), field, "expected an integer, got " + Describe(n),
        "write a whole number without quotes or a decimal point, e.g. 1024");
  return std::nullopt;
}

std::optional<bool> ReadBool(const toml::node& n, const std::string& field, Diagnostics& d) {
  if (const auto* b = n.as_boolean()) return b->get();
  d.Add(LineOf(n), field, "expected a boolean, got " + Describe(n), "write true or false");
  return std::nullopt;
}

const toml::table* ReadTable(const toml::node& n, const std::string& field, Diagnostics& d) {
  if (const auto* t = n.as_table()) return t;
  d.Add(LineOf(n), field, "expected a table, got " + Describe(n), "write it as a table, e.g. { key = value, ... }");
  return nullptr;
}

std::optional<DType> ReadDType(const toml::node& n, const std::string& field, Diagnostics& d) {
  auto name = ReadString(n, field, d);
  if (!name) return std::nullopt;
  auto t = ParseDType(*name);
  if (!t) d.Add(LineOf(n), field, "unknown dtype " + Quote(*name), "use one of " + DTypeNameList());
  return t;
}

std::vector<const toml::table*> ReadTableArray(const toml::node& n, const std::string& key, Diagnostics& d) {
  std::vector<const toml::table*> tables;
  const auto* arr = n.as_array();
  if (!arr) {
    d.Add(LineOf(n), key, "expected an array of tables, got " + Describe(n),
          "declare each entry under its own [[" + key + "]] header");
    return tables;
  }
  for (size_t i = 0; i < arr->size(); ++i) {
    const toml::node& el = *arr->get(i);
    const auto* t = el.as_table();
    if (!t) {
      d.Add(LineOf(el), Indexed(key, i), "expected a table, got " + Describe(el),
            "declare each entry under its own [[" + key + "]] header");
    }
    tables.push_back(t);
  }
  return tables;
}

const toml::node* Require(const toml::table& t, std::string_view key, const std::string& prefix, const std::string& fix,
                          Diagnostics& d) {
  const toml::node* n = t.get(key);
  if (!n) d.Add(LineOf(t), Field(prefix, key), "required field is missing", fix);
  return n;
}

void RejectUnknownKeys(const toml::table& t, const std::string& prefix, const std::vector<std::string_view>& allowed,
                       Diagnostics& d) {
  std::vector<std::string> names(allowed.begin(), allowed.end());
  for (auto&& [key, value] : t) {
    std::string_view k = key.str();
    if (std::find(allowed.begin(), allowed.end(), k) != allowed.end()) continue;
    const auto& top = TopLevelKeys();
    bool is_top_level = std::find(top.begin(), top.end(), k) != top.end();
    std::string fix = !prefix.empty() && is_top_level
                          ? std::string(k) + " is a top-level key: move it above the first [table] header"
                          : "check the spelling; valid keys here are " + JoinNames(names);
    d.Add(static_cast<int>(key.source().begin.line), Field(prefix, k), "unknown key", fix);
  }
}

void CollectNames(const toml::table& root, std::string_view key, std::vector<Declared>* out) {
  const auto* arr = root.get_as<toml::array>(key);
  if (!arr) return;
  for (size_t i = 0; i < arr->size(); ++i) {
    const auto* t = arr->get(i)->as_table();
    if (!t) continue;
    const auto* name = t->get_as<std::string>("name");
    if (!name) continue;
    out->push_back({name->get(), Indexed(std::string(key), i), LineOf(*name)});
  }
}

void RejectDuplicates(const std::vector<Declared>& names, Diagnostics& d) {
  for (size_t i = 0; i < names.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (names[i].name != names[j].name) continue;
      d.Add(names[i].line, Field(names[i].field, "name"),
            "duplicate name " + Quote(names[i].name) + " (first declared as " + names[j].field + " on line " +
                std::to_string(names[j].line) + ")",
            "give each a distinct name");
      break;
    }
  }
}

}  // namespace kpilot::loader
