// LoadFakeScript: scripted replies from a JSON file (fake_llm_server --script, lineage tests).
#include <fstream>
#include <sstream>

#include "fake_llm_server.h"

namespace kpilot::llm::testing {

namespace {

bool Slurp(const std::filesystem::path& path, std::string* text, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = "cannot read " + path.string();
    return false;
  }
  std::ostringstream s;
  s << in.rdbuf();
  *text = s.str();
  return true;
}

}  // namespace

bool LoadFakeScript(const std::filesystem::path& script, std::vector<FakeReply>* replies, std::string* error) {
  std::string text;
  if (!Slurp(script, &text, error)) return false;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_object() && j.contains("replies")) j = j["replies"];
  if (!j.is_array()) {
    *error = script.string() + ": expected a JSON array of replies (or {\"replies\": [...]})";
    return false;
  }
  std::filesystem::path dir = script.parent_path();
  for (size_t i = 0; i < j.size(); ++i) {
    const nlohmann::json& e = j[i];
    std::string where = script.string() + ": reply " + std::to_string(i + 1);
    if (!e.is_object()) {
      *error = where + ": expected an object";
      return false;
    }
    if (e.contains("status") && e["status"].get<int>() != 200) {
      replies->push_back(FakeReply::Error(e["status"].get<int>(), e.value("error", "scripted error")));
      continue;
    }
    std::string reply = e.value("text", "");
    if (e.contains("text_file")) {
      std::string t;
      if (!Slurp(dir / e["text_file"].get<std::string>(), &t, error)) {
        *error = where + ": " + *error;
        return false;
      }
      reply += t;
    }
    if (e.contains("code_file")) {
      std::string file = e["code_file"].get<std::string>(), code;
      if (!Slurp(dir / file, &code, error)) {
        *error = where + ": " + *error;
        return false;
      }
      std::string lang = e.value("lang", file.ends_with(".cu") ? "cuda" : "cpp");
      if (!reply.empty() && !reply.ends_with('\n')) reply += '\n';
      reply += "\n```" + lang + "\n" + code + (code.ends_with('\n') ? "" : "\n") + "```\n";
    }
    if (reply.empty()) {
      *error = where + ": no text, text_file or code_file";
      return false;
    }
    replies->push_back(FakeReply::Text(reply));
  }
  return true;
}

}  // namespace kpilot::llm::testing
