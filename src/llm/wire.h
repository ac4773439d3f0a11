// The two wire formats behind ChatClient: OpenAI Chat Completions and Anthropic Messages.
// Internal to src/llm. Each is pure: a ChatRequest in, an HTTP request out; a reply body in, a
// ChatReply (or the provider's error message) out. The client adds retries, limits and accounting.
#pragma once

#include <memory>
#include <string>

#include "llm/llm.h"

namespace kpilot::llm {

// What a request looks like once its defaults (max_tokens, temperature) are resolved.
struct WireSettings {
  std::string model;
  std::string base_url;  // no trailing '/'
  std::string api_key;   // "" sends no key header
  int max_tokens = 0;
  double temperature = 0;
};

class WireFormat {
 public:
  virtual ~WireFormat() = default;
  // The POST to send, timeouts left at their defaults (the client sets them).
  virtual HttpRequest Build(const ChatRequest& request, const WireSettings& settings) const = 0;
  // A 2xx body → reply (usage tokens filled, cost left to the client). InvalidInput naming what
  // is missing when the body is not JSON or not the provider's reply shape.
  virtual Result<ChatReply> Parse(const std::string& body) const = 0;
};

std::unique_ptr<WireFormat> MakeOpenAIWire(Provider provider);  // openai or openai-compatible
std::unique_ptr<WireFormat> MakeAnthropicWire();

// Parses `body` as a JSON object; InvalidInput quoting the body's start otherwise.
Result<nlohmann::json> ParseJsonBody(const std::string& body, const std::string& what);
// `object[key]` when it is a string (a number), else "" (0): replies from servers that copy a
// format leave fields out or null, and nlohmann's value() throws on a null.
std::string StringField(const nlohmann::json& object, const char* key);
int64_t IntField(const nlohmann::json& object, const char* key);
// The "error.message" of an error body (both providers use it), else the body's first 300 bytes.
std::string ErrorMessageOf(const std::string& body);

}  // namespace kpilot::llm
