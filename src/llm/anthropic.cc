// Anthropic Messages (https://docs.anthropic.com/en/api/messages): the system prompt is a
// top-level field, tool calls and their results are content blocks (tool_use, tool_result).
#include <utility>

#include "llm/wire.h"

namespace kpilot::llm {

namespace {

using nlohmann::json;

constexpr const char* kAnthropicVersion = "2023-06-01";

// Content blocks of one provider-neutral message, with the wire role it travels under: tool
// results travel in a user turn.
std::pair<std::string, json> BlocksOf(const Message& m) {
  json blocks = json::array();
  if (m.role == "tool") {
    blocks.push_back({{"type", "tool_result"}, {"tool_use_id", m.tool_call_id}, {"content", m.content}});
    return {"user", std::move(blocks)};
  }
  // The API refuses empty text blocks.
  if (!m.content.empty()) blocks.push_back({{"type", "text"}, {"text", m.content}});
  for (const ToolCall& call : m.tool_calls) {
    blocks.push_back({{"type", "tool_use"}, {"id", call.id}, {"name", call.name}, {"input", call.arguments}});
  }
  return {m.role, std::move(blocks)};
}

class AnthropicWire final : public WireFormat {
 public:
  HttpRequest Build(const ChatRequest& request, const WireSettings& settings) const override {
    // Consecutive turns of one role merge into one message: the results of all the tool calls of
    // an assistant turn must come back together in the next user turn.
    json messages = json::array();
    for (const Message& m : request.messages) {
      auto [role, blocks] = BlocksOf(m);
      if (!messages.empty() && messages.back()["role"] == role) {
        for (json& block : blocks) messages.back()["content"].push_back(std::move(block));
      } else {
        messages.push_back({{"role", role}, {"content", std::move(blocks)}});
      }
    }
    json body = {{"model", settings.model},
                 {"max_tokens", settings.max_tokens},
                 {"temperature", settings.temperature},
                 {"messages", std::move(messages)}};
    if (!request.system.empty()) body["system"] = request.system;
    if (!request.tools.empty()) {
      json tools = json::array();
      for (const ToolSpec& tool : request.tools) {
        tools.push_back({{"name", tool.name}, {"description", tool.description}, {"input_schema", tool.parameters}});
      }
      body["tools"] = std::move(tools);
    }
    HttpRequest http;
    http.url = settings.base_url + "/messages";
    http.headers.emplace_back("Content-Type", "application/json");
    http.headers.emplace_back("anthropic-version", kAnthropicVersion);
    if (!settings.api_key.empty()) http.headers.emplace_back("x-api-key", settings.api_key);
    http.body = body.dump();
    return http;
  }

  Result<ChatReply> Parse(const std::string& body) const override {
    Result<json> parsed = ParseJsonBody(body, "the messages reply");
    if (!parsed.ok()) return parsed.status();
    const json& root = *parsed;
    const auto content = root.find("content");
    if (content == root.end() || !content->is_array()) {
      return Status::InvalidInput("the messages reply has no content array: " + body.substr(0, 200));
    }
    ChatReply reply;
    for (const json& block : *content) {
      if (!block.is_object()) continue;
      const std::string type = StringField(block, "type");
      if (type == "text") {
        if (!reply.text.empty()) reply.text += "\n";
        reply.text += StringField(block, "text");
      } else if (type == "tool_use") {
        ToolCall call;
        call.id = StringField(block, "id");
        call.name = StringField(block, "name");
        if (const auto input = block.find("input"); input != block.end() && input->is_object()) {
          call.arguments = *input;
        }
        reply.tool_calls.push_back(std::move(call));
      }
      // Other blocks (thinking, …) carry nothing the caller uses.
    }
    reply.stop_reason = StringField(root, "stop_reason");
    if (const auto usage = root.find("usage"); usage != root.end() && usage->is_object()) {
      reply.usage.input_tokens = IntField(*usage, "input_tokens");
      reply.usage.output_tokens = IntField(*usage, "output_tokens");
    }
    return reply;
  }
};

}  // namespace

std::unique_ptr<WireFormat> MakeAnthropicWire() { return std::make_unique<AnthropicWire>(); }

}  // namespace kpilot::llm
