// LoadLlmConfig: the TOML file of LLM defaults. Every key maps to one LlmConfig field; a key the
// table does not know is an error, so a typo never silently keeps a default.
#include <toml++/toml.h>

#include <cmath>
#include <limits>
#include <optional>
#include <variant>

#include <fmt/format.h>

#include "core/fs.h"
#include "llm/llm.h"

namespace kpilot::llm {

namespace {

namespace fs = std::filesystem;

// One problem of the file, as "FILE:LINE: KEY: what; fix".
class Problems {
 public:
  explicit Problems(std::string file) : file_(std::move(file)) {}
  void Add(const toml::node& at, const std::string& key, const std::string& what, const std::string& fix) {
    lines_.push_back(fmt::format("{}:{}: {}: {}; {}", file_, at.source().begin.line, key, what, fix));
  }
  void AddLine(int64_t line, const std::string& what, const std::string& fix) {
    lines_.push_back(fmt::format("{}:{}: {}; {}", file_, line, what, fix));
  }
  bool empty() const { return lines_.empty(); }
  std::string Joined() const {
    std::string out;
    for (const std::string& line : lines_) out += (out.empty() ? "" : "\n") + line;
    return out;
  }

 private:
  std::string file_;
  std::vector<std::string> lines_;
};

std::string Describe(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::string:
      return "string \"" + n.as_string()->get() + "\"";
    case toml::node_type::integer:
      return "integer " + std::to_string(n.as_integer()->get());
    case toml::node_type::floating_point:
      return fmt::format("float {}", n.as_floating_point()->get());
    case toml::node_type::boolean:
      return n.as_boolean()->get() ? "true" : "false";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::table:
      return "a table";
    default:
      return "a date or time";
  }
}

struct Real {
  double LlmConfig::*field;
  double min;
  double max;
  bool min_exclusive;
};
struct Integer {
  int LlmConfig::*field;
  int min;
};
struct Text {
  std::string LlmConfig::*field;
  bool is_path;  // resolved against the config file's folder
};
struct TextList {
  std::vector<std::string> LlmConfig::*field;
  bool is_path;
};
using Field = std::variant<Real, Integer, Text, TextList>;

constexpr double kInf = std::numeric_limits<double>::infinity();

const std::map<std::string, Field>& Fields() {
  static const std::map<std::string, Field> fields = {
      {"connect_timeout_s", Real{&LlmConfig::connect_timeout_s, 0, kInf, true}},
      {"read_timeout_s", Real{&LlmConfig::read_timeout_s, 0, kInf, true}},
      {"max_retries", Integer{&LlmConfig::max_retries, 0}},
      {"backoff_base_s", Real{&LlmConfig::backoff_base_s, 0, kInf, false}},
      {"backoff_max_s", Real{&LlmConfig::backoff_max_s, 0, kInf, false}},
      {"max_concurrency", Integer{&LlmConfig::max_concurrency, 1}},
      {"max_cost_usd", Real{&LlmConfig::max_cost_usd, 0, kInf, false}},
      {"max_tokens", Integer{&LlmConfig::max_tokens, 1}},
      {"temperature", Real{&LlmConfig::temperature, 0, 2, false}},
      {"api_key_env", Text{&LlmConfig::api_key_env, false}},
      {"code_roots", TextList{&LlmConfig::code_roots, true}},
      {"prompts_dir", Text{&LlmConfig::prompts_dir, true}},
      {"tool_calls_per_proposal", Integer{&LlmConfig::tool_calls_per_proposal, 0}},
      {"reasks", Integer{&LlmConfig::reasks, 0}},
      {"prompt_skills", Integer{&LlmConfig::prompt_skills, 0}},
      {"command_argv", TextList{&LlmConfig::command_argv, false}},
      {"allowed_env", TextList{&LlmConfig::allowed_env, false}},
      {"command_timeout_s", Real{&LlmConfig::command_timeout_s, 0, kInf, true}},
      {"command_mcp_evaluations", Integer{&LlmConfig::command_mcp_evaluations, 0}},
  };
  return fields;
}

std::string KnownKeys() {
  std::string out;
  for (const auto& [key, field] : Fields()) out += key + ", ";
  return out + "[prices.\"MODEL\"]";
}

std::optional<double> NumberOf(const toml::node& n) {
  if (const auto* i = n.as_integer()) return static_cast<double>(i->get());
  if (const auto* f = n.as_floating_point()) return f->get();
  return std::nullopt;
}

std::string Resolve(const std::string& path, bool is_path, const fs::path& dir) {
  if (!is_path || path.empty() || fs::path(path).is_absolute()) return path;
  return (dir / path).lexically_normal().string();
}

class Reader {
 public:
  Reader(LlmConfig* config, Problems* problems, fs::path dir)
      : config_(config), problems_(problems), dir_(std::move(dir)) {}

  void Read(const std::string& key, const toml::node& n, const Real& f) {
    std::optional<double> v = NumberOf(n);
    if (!v || !std::isfinite(*v)) {
      problems_->Add(n, key, "expected a number, got " + Describe(n), fmt::format("write e.g. {} = 30", key));
      return;
    }
    bool low = f.min_exclusive ? *v <= f.min : *v < f.min;
    if (low || *v > f.max) {
      std::string range = f.max == kInf ? fmt::format("{} {}", f.min_exclusive ? ">" : ">=", f.min)
                                        : fmt::format("in [{}, {}]", f.min, f.max);
      problems_->Add(n, key, fmt::format("{} is out of range", *v), "use a value " + range);
      return;
    }
    config_->*f.field = *v;
  }

  void Read(const std::string& key, const toml::node& n, const Integer& f) {
    const auto* i = n.as_integer();
    if (i == nullptr) {
      problems_->Add(n, key, "expected an integer, got " + Describe(n),
                     fmt::format("write e.g. {} = {}", key, f.min + 1));
      return;
    }
    if (i->get() < f.min || i->get() > std::numeric_limits<int>::max()) {
      problems_->Add(n, key, fmt::format("{} is out of range", i->get()), fmt::format("use an integer >= {}", f.min));
      return;
    }
    config_->*f.field = static_cast<int>(i->get());
  }

  void Read(const std::string& key, const toml::node& n, const Text& f) {
    const auto* s = n.as_string();
    if (s == nullptr) {
      problems_->Add(n, key, "expected a string, got " + Describe(n), fmt::format("write e.g. {} = \"…\"", key));
      return;
    }
    config_->*f.field = Resolve(s->get(), f.is_path, dir_);
  }

  void Read(const std::string& key, const toml::node& n, const TextList& f) {
    const auto* a = n.as_array();
    if (a == nullptr) {
      problems_->Add(n, key, "expected an array of strings, got " + Describe(n),
                     fmt::format("write e.g. {} = [\"…\", \"…\"]", key));
      return;
    }
    std::vector<std::string> values;
    for (size_t i = 0; i < a->size(); ++i) {
      const toml::node& e = *a->get(i);
      const auto* s = e.as_string();
      if (s == nullptr) {
        problems_->Add(e, fmt::format("{}[{}]", key, i), "expected a string, got " + Describe(e), "quote it");
        return;
      }
      values.push_back(Resolve(s->get(), f.is_path, dir_));
    }
    config_->*f.field = std::move(values);
  }

  void ReadPrices(const toml::node& n) {
    const auto* table = n.as_table();
    if (table == nullptr) {
      problems_->Add(n, "prices", "expected a table, got " + Describe(n),
                     "write [prices.\"MODEL\"] with input_per_mtok and output_per_mtok");
      return;
    }
    for (auto&& [model_key, model_node] : *table) {
      std::string model(model_key.str());
      std::string where = "prices.\"" + model + "\"";
      const auto* entry = model_node.as_table();
      if (entry == nullptr) {
        problems_->Add(model_node, where, "expected a table, got " + Describe(model_node),
                       "write " + where + " = { input_per_mtok = 2.5, output_per_mtok = 10 }");
        continue;
      }
      Prices prices;
      bool ok = true;
      for (auto&& [k, v] : *entry) {
        std::string name(k.str());
        double* target = name == "input_per_mtok"    ? &prices.input_per_mtok
                         : name == "output_per_mtok" ? &prices.output_per_mtok
                                                     : nullptr;
        if (target == nullptr) {
          problems_->Add(v, where + "." + name, "unknown key",
                         "use input_per_mtok and output_per_mtok (US $ per million tokens)");
          ok = false;
          continue;
        }
        std::optional<double> d = NumberOf(v);
        if (!d || !std::isfinite(*d) || *d < 0) {
          problems_->Add(v, where + "." + name, "expected a number >= 0, got " + Describe(v),
                         "write the price in US $ per million tokens, e.g. 2.5");
          ok = false;
          continue;
        }
        *target = *d;
      }
      if (ok) config_->prices[model] = prices;
    }
  }

 private:
  LlmConfig* config_;
  Problems* problems_;
  fs::path dir_;
};

}  // namespace

Result<LlmConfig> LoadLlmConfig(const fs::path& file, LlmConfig defaults) {
  Result<std::string> text = ReadFile(file);
  if (!text.ok()) return text.status();
  Problems problems(file.string());
  toml::table root;
  try {
    root = toml::parse(*text, std::string_view(file.string()));
  } catch (const toml::parse_error& e) {
    problems.AddLine(e.source().begin.line, std::string(e.description()),
                     fmt::format("fix the TOML at column {} (see https://toml.io)", e.source().begin.column));
    return Status::InvalidInput(problems.Joined());
  }
  LlmConfig config = std::move(defaults);
  Reader reader(&config, &problems, fs::absolute(file).parent_path());
  for (auto&& [key_node, node] : root) {
    std::string key(key_node.str());
    if (key == "prices") {
      reader.ReadPrices(node);
      continue;
    }
    const auto field = Fields().find(key);
    if (field == Fields().end()) {
      problems.Add(node, key, "unknown key", "the keys are " + KnownKeys() + " (docs/llm.md)");
      continue;
    }
    std::visit([&](const auto& f) { reader.Read(key, node, f); }, field->second);
  }
  if (config.backoff_max_s < config.backoff_base_s) {
    problems.AddLine(
        1, fmt::format("backoff_max_s ({}) is below backoff_base_s ({})", config.backoff_max_s, config.backoff_base_s),
        "raise backoff_max_s or lower backoff_base_s");
  }
  if (!problems.empty()) return Status::InvalidInput(problems.Joined());
  return config;
}

}  // namespace kpilot::llm
