// Helpers both wire formats share.
#include "llm/wire.h"

namespace kpilot::llm {

namespace {

std::string Start(const std::string& body, size_t n) {
  if (body.empty()) return "an empty body";
  if (body.size() <= n) return "'" + body + "'";
  return "'" + body.substr(0, n) + "…'";
}

}  // namespace

Result<nlohmann::json> ParseJsonBody(const std::string& body, const std::string& what) {
  nlohmann::json json = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) {
    return Status::InvalidInput(what + " is not a JSON object: " + Start(body, 200) +
                                "; check that the base URL points at the API (…/v1), not a web page or proxy");
  }
  return json;
}

std::string StringField(const nlohmann::json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

int64_t IntField(const nlohmann::json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_number() ? it->get<int64_t>() : 0;
}

std::string ErrorMessageOf(const std::string& body) {
  nlohmann::json json = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!json.is_discarded() && json.is_object()) {
    const auto error = json.find("error");
    if (error != json.end()) {
      if (error->is_string()) return error->get<std::string>();
      if (error->is_object()) {
        const auto message = error->find("message");
        if (message != error->end() && message->is_string()) return message->get<std::string>();
      }
    }
    const auto message = json.find("message");
    if (message != json.end() && message->is_string()) return message->get<std::string>();
  }
  return Start(body, 300);
}

}  // namespace kpilot::llm
