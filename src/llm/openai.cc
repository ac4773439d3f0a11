// OpenAI Chat Completions (https://platform.openai.com/docs/api-reference/chat), the format every
// OpenAI-compatible server (vLLM, llama.cpp, Ollama, LM Studio, …) also speaks.
#include <utility>

#include "llm/wire.h"

namespace kpilot::llm {

namespace {

using nlohmann::json;

json MessageJson(const Message& m) {
  if (m.role == "tool") {
    return {{"role", "tool"}, {"tool_call_id", m.tool_call_id}, {"content", m.content}};
  }
  json out = {{"role", m.role}};
  if (m.tool_calls.empty()) {
    out["content"] = m.content;
    return out;
  }
  out["content"] = m.content.empty() ? json(nullptr) : json(m.content);
  json calls = json::array();
  for (const ToolCall& call : m.tool_calls) {
    calls.push_back({{"id", call.id},
                     {"type", "function"},
                     {"function", {{"name", call.name}, {"arguments", call.arguments.dump()}}}});
  }
  out["tool_calls"] = std::move(calls);
  return out;
}

// Arguments arrive as a JSON string; a model may write one that does not parse. It is kept, so
// the caller can tell the model what was wrong, as {"_invalid_json": "<the text>"}.
json ArgumentsOf(const json& function) {
  const auto args = function.find("arguments");
  if (args == function.end() || args->is_null()) return json::object();
  if (args->is_object()) return *args;
  if (!args->is_string()) return {{"_invalid_json", args->dump()}};
  const std::string& text = args->get_ref<const std::string&>();
  if (text.empty()) return json::object();
  json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) return {{"_invalid_json", text}};
  return parsed;
}

class OpenAIWire final : public WireFormat {
 public:
  explicit OpenAIWire(Provider provider) : provider_(provider) {}

  HttpRequest Build(const ChatRequest& request, const WireSettings& settings) const override {
    json messages = json::array();
    if (!request.system.empty()) messages.push_back({{"role", "system"}, {"content", request.system}});
    for (const Message& m : request.messages) messages.push_back(MessageJson(m));
    json body = {{"model", settings.model}, {"messages", std::move(messages)}, {"temperature", settings.temperature}};
    // OpenAI's own API deprecated max_tokens (reasoning models refuse it); servers that copy the
    // format mostly know only max_tokens.
    body[provider_ == Provider::kOpenAI ? "max_completion_tokens" : "max_tokens"] = settings.max_tokens;
    if (!request.tools.empty()) {
      json tools = json::array();
      for (const ToolSpec& tool : request.tools) {
        tools.push_back(
            {{"type", "function"},
             {"function", {{"name", tool.name}, {"description", tool.description}, {"parameters", tool.parameters}}}});
      }
      body["tools"] = std::move(tools);
    }
    HttpRequest http;
    http.url = settings.base_url + "/chat/completions";
    http.headers.emplace_back("Content-Type", "application/json");
    if (!settings.api_key.empty()) http.headers.emplace_back("Authorization", "Bearer " + settings.api_key);
    http.body = body.dump();
    return http;
  }

  Result<ChatReply> Parse(const std::string& body) const override {
    Result<json> parsed = ParseJsonBody(body, "the chat/completions reply");
    if (!parsed.ok()) return parsed.status();
    const json& root = *parsed;
    const auto choices = root.find("choices");
    if (choices == root.end() || !choices->is_array() || choices->empty() || !(*choices)[0].is_object()) {
      return Status::InvalidInput("the chat/completions reply has no choices[0]: " + body.substr(0, 200));
    }
    const json& choice = (*choices)[0];
    const auto message = choice.find("message");
    if (message == choice.end() || !message->is_object()) {
      return Status::InvalidInput("the chat/completions reply has no choices[0].message: " + body.substr(0, 200));
    }
    ChatReply reply;
    if (const auto content = message->find("content"); content != message->end() && content->is_string()) {
      reply.text = content->get<std::string>();
    }
    if (const auto calls = message->find("tool_calls"); calls != message->end() && calls->is_array()) {
      for (const json& call : *calls) {
        if (!call.is_object()) continue;
        ToolCall tc;
        tc.id = StringField(call, "id");
        if (const auto fn = call.find("function"); fn != call.end() && fn->is_object()) {
          tc.name = StringField(*fn, "name");
          tc.arguments = ArgumentsOf(*fn);
        }
        reply.tool_calls.push_back(std::move(tc));
      }
    }
    reply.stop_reason = StringField(choice, "finish_reason");
    if (const auto usage = root.find("usage"); usage != root.end() && usage->is_object()) {
      reply.usage.input_tokens = IntField(*usage, "prompt_tokens");
      reply.usage.output_tokens = IntField(*usage, "completion_tokens");
    }
    return reply;
  }

 private:
  Provider provider_;
};

}  // namespace

std::unique_ptr<WireFormat> MakeOpenAIWire(Provider provider) { return std::make_unique<OpenAIWire>(provider); }

}  // namespace kpilot::llm
