// FakeLlmServer: cpp-httplib serving scripted replies in the OpenAI and Anthropic wire formats.
#include "fake_llm_server.h"

#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <thread>

#include "support/sync.h"

namespace kpilot::llm::testing {

namespace {

using nlohmann::json;

constexpr const char* kOpenAIPath = "/v1/chat/completions";
constexpr const char* kAnthropicPath = "/v1/messages";

json OpenAIBody(const FakeReply& r) {
  if (r.status != 200) {
    return {{"error", {{"message", r.error_message}, {"type", "fake_error"}, {"code", r.status}}}};
  }
  json message = {{"role", "assistant"},
                  {"content", r.text.empty() && !r.tool_calls.empty() ? json(nullptr) : json(r.text)}};
  if (!r.tool_calls.empty()) {
    json calls = json::array();
    for (const auto& c : r.tool_calls) {
      calls.push_back(
          {{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments.dump()}}}});
    }
    message["tool_calls"] = std::move(calls);
  }
  std::string stop = !r.stop_reason.empty() ? r.stop_reason : r.tool_calls.empty() ? "stop" : "tool_calls";
  return {{"id", "chatcmpl-fake"},
          {"object", "chat.completion"},
          {"model", "fake"},
          {"choices", json::array({{{"index", 0}, {"message", std::move(message)}, {"finish_reason", stop}}})},
          {"usage",
           {{"prompt_tokens", r.input_tokens},
            {"completion_tokens", r.output_tokens},
            {"total_tokens", r.input_tokens + r.output_tokens}}}};
}

json AnthropicBody(const FakeReply& r) {
  if (r.status != 200) {
    return {{"type", "error"}, {"error", {{"type", "fake_error"}, {"message", r.error_message}}}};
  }
  json content = json::array();
  if (!r.text.empty()) content.push_back({{"type", "text"}, {"text", r.text}});
  for (const auto& c : r.tool_calls) {
    content.push_back({{"type", "tool_use"}, {"id", c.id}, {"name", c.name}, {"input", c.arguments}});
  }
  std::string stop = !r.stop_reason.empty() ? r.stop_reason : r.tool_calls.empty() ? "end_turn" : "tool_use";
  return {{"id", "msg_fake"},
          {"type", "message"},
          {"role", "assistant"},
          {"model", "fake"},
          {"content", std::move(content)},
          {"stop_reason", stop},
          {"usage", {{"input_tokens", r.input_tokens}, {"output_tokens", r.output_tokens}}}};
}

}  // namespace

FakeReply FakeReply::Text(std::string text) {
  FakeReply r;
  r.text = std::move(text);
  return r;
}

FakeReply FakeReply::Code(const std::string& code, const std::string& lang) {
  return Text("Here is the candidate.\n\n```" + lang + "\n" + code + (code.ends_with('\n') ? "" : "\n") +
              "```\n\nIt should be faster.");
}

FakeReply FakeReply::ToolCalls(std::vector<Call> calls) {
  FakeReply r;
  r.tool_calls = std::move(calls);
  return r;
}

FakeReply FakeReply::Error(int status, std::string message) {
  FakeReply r;
  r.status = status;
  r.error_message = std::move(message);
  return r;
}

FakeReply FakeReply::Raw(std::string body, int status) {
  FakeReply r;
  r.status = status;
  r.raw_body = std::move(body);
  return r;
}

FakeReply&& FakeReply::WithRetryAfter(double seconds) && {
  char value[32];
  std::snprintf(value, sizeof(value), "%g", seconds);
  headers.emplace_back("Retry-After", value);
  return std::move(*this);
}

FakeReply&& FakeReply::WithDelay(double seconds) && {
  delay_s = seconds;
  return std::move(*this);
}

FakeReply&& FakeReply::WithUsage(int64_t input, int64_t output) && {
  input_tokens = input;
  output_tokens = output;
  return std::move(*this);
}

struct FakeLlmServer::Impl {
  httplib::Server server;
  std::thread thread;
  int port = 0;

  mutable std::mutex mu;
  std::condition_variable stopping_cv;  // wakes delayed replies when the server stops
  bool stopping = false;
  std::deque<FakeReply> script;
  std::function<FakeReply(const RecordedRequest&)> fallback;
  std::vector<RecordedRequest> requests;
  int in_flight = 0;
  int max_in_flight = 0;

  void Handle(const httplib::Request& req, httplib::Response& res) {
    RecordedRequest recorded;
    recorded.path = req.path;
    for (const auto& [name, value] : req.headers) {
      std::string lower = name;
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      recorded.headers[lower] = value;
    }
    recorded.body = req.body;
    recorded.json = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
    if (recorded.json.is_discarded()) recorded.json = nullptr;

    std::optional<FakeReply> reply;
    std::function<FakeReply(const RecordedRequest&)> fallback_copy;
    {
      std::lock_guard lock(mu);
      requests.push_back(recorded);
      max_in_flight = std::max(max_in_flight, ++in_flight);
      if (!script.empty()) {
        reply = std::move(script.front());
        script.pop_front();
      } else {
        fallback_copy = fallback;
      }
    }
    if (!reply) {
      reply = fallback_copy ? fallback_copy(recorded)
                            : FakeReply::Error(500, "fake LLM server: script exhausted (push more replies)");
    }
    if (reply->delay_s > 0) {
      std::unique_lock lock(mu);
      stopping_cv.wait_for(lock, std::chrono::duration<double>(reply->delay_s), [&] { return stopping; });
    }
    res.status = reply->status;
    for (const auto& [name, value] : reply->headers) res.set_header(name, value);
    std::string body = reply->raw_body              ? *reply->raw_body
                       : req.path == kAnthropicPath ? AnthropicBody(*reply).dump()
                                                    : OpenAIBody(*reply).dump();
    res.set_content(body, "application/json");
    std::lock_guard lock(mu);
    --in_flight;
  }
};

FakeLlmServer::FakeLlmServer() : impl_(std::make_unique<Impl>()) {
  auto handler = [this](const httplib::Request& req, httplib::Response& res) { impl_->Handle(req, res); };
  impl_->server.Post(kOpenAIPath, handler);
  impl_->server.Post(kAnthropicPath, handler);
  impl_->port = impl_->server.bind_to_any_port("127.0.0.1");
  if (impl_->port <= 0) {
    std::fprintf(stderr, "FakeLlmServer: cannot bind a port on 127.0.0.1\n");
    std::abort();
  }
  // The socket listens from bind on: connections queue until the thread accepts them.
  impl_->thread = std::thread([this] { impl_->server.listen_after_bind(); });
  // stop() before the thread marks the server running would be lost; wait for it (httplib
  // signals nothing when it starts).
  kpilot::testing::WaitUntil([this] { return impl_->server.is_running(); }, std::chrono::seconds(5));
}

FakeLlmServer::~FakeLlmServer() { Stop(); }

void FakeLlmServer::Stop() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->stopping_cv.notify_all();
  if (impl_->thread.joinable()) {
    impl_->server.stop();
    impl_->thread.join();
  }
}

int FakeLlmServer::port() const { return impl_->port; }

std::string FakeLlmServer::BaseUrl() const { return "http://127.0.0.1:" + std::to_string(impl_->port) + "/v1"; }

std::string FakeLlmServer::OpenAISpec(const std::string& model) const {
  return "llm:openai-compatible:" + model + "@" + BaseUrl();
}

std::string FakeLlmServer::AnthropicSpec(const std::string& model) const {
  return "llm:anthropic:" + model + "@" + BaseUrl();
}

void FakeLlmServer::Push(FakeReply reply) {
  std::lock_guard lock(impl_->mu);
  impl_->script.push_back(std::move(reply));
}

void FakeLlmServer::SetFallback(std::function<FakeReply(const RecordedRequest&)> fallback) {
  std::lock_guard lock(impl_->mu);
  impl_->fallback = std::move(fallback);
}

size_t FakeLlmServer::Pending() const {
  std::lock_guard lock(impl_->mu);
  return impl_->script.size();
}

std::vector<RecordedRequest> FakeLlmServer::Requests() const {
  std::lock_guard lock(impl_->mu);
  return impl_->requests;
}

size_t FakeLlmServer::RequestCount() const {
  std::lock_guard lock(impl_->mu);
  return impl_->requests.size();
}

int FakeLlmServer::MaxConcurrent() const {
  std::lock_guard lock(impl_->mu);
  return impl_->max_in_flight;
}

}  // namespace kpilot::llm::testing
