// FakeLlmServer: a real HTTP server on 127.0.0.1 (cpp-httplib, an OS-chosen port) that speaks
// both wire formats kpilot's LLM clients use, replying from a script. For tests of src/llm and
// for end-to-end tests of the LLM generator (kpilot optimize --generator llm:…).
//
//   kpilot::llm::testing::FakeLlmServer server;            // listening once constructed
//   server.Push(FakeReply::Code("extern \"C\" int kpilot_launch(...) {...}"));
//   server.Push(FakeReply::Error(429, "slow down").WithRetryAfter(3));
//   server.Push(FakeReply::ToolCalls({{"call_1", "search_code", {{"query", "cute::gemm"}}}}));
//   std::string spec = server.OpenAISpec("fake-model");     //
//   llm:openai-compatible:fake-model@http://127.0.0.1:PORT/v1 …run the client or `kpilot optimize … --generator
//   <spec>`… EXPECT_EQ(server.Requests()[0].headers.at("authorization"), "Bearer sk-test…");
//
// Routes: POST /v1/chat/completions (OpenAI) and POST /v1/messages (Anthropic). Each request
// takes the next scripted reply, rendered in the format of the route it came to; when the script
// is empty, the fallback (SetFallback) answers, and without one the server answers 500 "script
// exhausted" — a test that makes more calls than it scripted fails loudly.
//
// Thread-safe: requests are served concurrently (cpp-httplib's pool, 8+ threads); every method
// may be called from any thread. The destructor stops the server and waits for its threads; a
// reply still waiting out its delay is cut short.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace kpilot::llm::testing {

// One scripted reply, independent of the wire format.
struct FakeReply {
  int status = 200;
  // A 200 reply: the assistant's text and tool calls, usage and stop reason. The stop reason ""
  // becomes "stop"/"end_turn", or "tool_calls"/"tool_use" when there are tool calls.
  std::string text;
  struct Call {
    std::string id;
    std::string name;
    nlohmann::json arguments = nlohmann::json::object();
  };
  std::vector<Call> tool_calls;
  int64_t input_tokens = 100;
  int64_t output_tokens = 50;
  std::string stop_reason;
  // An error reply (status != 200): the message, sent in the provider's error shape.
  std::string error_message;
  // When set, sent verbatim as the body instead of any rendering (malformed JSON, odd shapes).
  std::optional<std::string> raw_body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra response headers
  double delay_s = 0;  // wait this long before answering (a slow model, a read timeout)

  // Plain text.
  static FakeReply Text(std::string text);
  // A reply holding `code` in one fenced block (```lang … ```), with a sentence around it.
  static FakeReply Code(const std::string& code, const std::string& lang = "cpp");
  // Tool calls (and no text).
  static FakeReply ToolCalls(std::vector<Call> calls);
  // An error status with the provider's error body.
  static FakeReply Error(int status, std::string message);
  // A body sent as is, with a status (default 200): e.g. Raw("{not json").
  static FakeReply Raw(std::string body, int status = 200);

  FakeReply&& WithRetryAfter(double seconds) &&;  // adds a Retry-After header (seconds)
  FakeReply&& WithDelay(double seconds) &&;
  FakeReply&& WithUsage(int64_t input_tokens, int64_t output_tokens) &&;
};

// One request as the server received it.
struct RecordedRequest {
  std::string path;                            // "/v1/chat/completions" or "/v1/messages"
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  nlohmann::json json;  // the body parsed; null when it is not JSON
};

// Reads a script of replies: a JSON array (or {"replies": [...]}) whose entries are objects with
//   "text"       the reply's text,
//   "text_file"  a file whose text is appended,
//   "code_file"  a file appended as one fenced block (```cuda for .cu, ```cpp otherwise, or "lang"),
//   "status", "error"   an error reply instead (status != 200),
//   "note"       ignored (what the entry is for).
// File names are relative to the script's folder. Appends to *replies; false with *error naming
// the file and the entry when something cannot be read.
bool LoadFakeScript(const std::filesystem::path& script, std::vector<FakeReply>* replies, std::string* error);

class FakeLlmServer {
 public:
  // Binds 127.0.0.1 on a port the OS picks and starts serving; aborts the test binary (with a
  // message) if it cannot bind.
  FakeLlmServer();
  ~FakeLlmServer();
  FakeLlmServer(const FakeLlmServer&) = delete;
  FakeLlmServer& operator=(const FakeLlmServer&) = delete;

  int port() const;
  std::string BaseUrl() const;                                // "http://127.0.0.1:PORT/v1"
  std::string OpenAISpec(const std::string& model) const;     // "llm:openai-compatible:MODEL@BASE"
  std::string AnthropicSpec(const std::string& model) const;  // "llm:anthropic:MODEL@BASE"

  // Appends to the script (FIFO).
  void Push(FakeReply reply);
  // Answers requests once the script is empty (e.g. cycle through kernels in an end-to-end test).
  // Called without the server's lock held; may be called concurrently.
  void SetFallback(std::function<FakeReply(const RecordedRequest&)> fallback);
  size_t Pending() const;  // scripted replies not yet sent

  std::vector<RecordedRequest> Requests() const;  // every request, in arrival order
  size_t RequestCount() const;
  int MaxConcurrent() const;  // the most requests the server was handling at one time

  // Stops listening (the port closes: later requests fail to connect). Idempotent.
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kpilot::llm::testing
