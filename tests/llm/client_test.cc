// ChatClient through the real curl transport against the real local server, in both wire formats.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "fake_llm_server.h"
#include "llm/llm.h"
#include "support/fake_clock.h"

namespace kpilot::llm {
namespace {

using nlohmann::json;
using testing::FakeLlmServer;
using testing::FakeReply;

constexpr const char* kKeyVariable = "KPILOT_LLM_TEST_KEY";
constexpr const char* kKey = "sk-test-Zq7RkP2mWv9XcT4bNh6Ld1Fs";

class RecordingSink final : public TranscriptSink {
 public:
  void Record(const Exchange& exchange) override {
    std::lock_guard lock(mu_);
    exchanges_.push_back(exchange);
  }
  std::vector<Exchange> exchanges() const {
    std::lock_guard lock(mu_);
    return exchanges_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<Exchange> exchanges_;
};

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

ChatRequest Ask(const std::string& text) {
  ChatRequest request;
  request.system = "You write CUDA kernels.";
  request.messages.push_back({"user", text, {}, ""});
  return request;
}

ToolSpec SearchCodeTool() {
  return {
      "search_code",
      "Search the CUTLASS/CuTe sources.",
      {{"type", "object"}, {"properties", {{"query", {{"type", "string"}}}}}, {"required", json::array({"query"})}}};
}

class ChatClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv(kKeyVariable, kKey, 1);
    config_.api_key_env = kKeyVariable;
    config_.connect_timeout_s = 2;
    config_.read_timeout_s = 10;
  }

  std::unique_ptr<ChatClient> Make(const std::string& spec) {
    Result<Endpoint> endpoint = ParseLlmSpec(spec);
    EXPECT_TRUE(endpoint.ok()) << endpoint.status().message();
    Result<std::unique_ptr<ChatClient>> client = MakeChatClient(*endpoint, config_, MakeCurlTransport(), sink_, clock_);
    EXPECT_TRUE(client.ok()) << client.status().message();
    return client.ok() ? std::move(client).value() : nullptr;
  }

  FakeLlmServer server_;
  LlmConfig config_;
  std::shared_ptr<RecordingSink> sink_ = std::make_shared<RecordingSink>();
  kpilot::testing::FakeClock clock_;  // the back-off between attempts is recorded, never slept
};

// ---- wire formats ------------------------------------------------------------------------------

TEST_F(ChatClientTest, OpenAICompatibleTextReply) {
  server_.Push(FakeReply::Code("__global__ void k() {}", "cuda"));
  auto client = Make(server_.OpenAISpec("qwen2.5-coder:7b"));
  ASSERT_TRUE(client);
  EXPECT_EQ(client->Describe(), "openai-compatible qwen2.5-coder:7b at " + server_.BaseUrl());

  Result<ChatReply> reply = client->Complete(Ask("make it fast"));
  ASSERT_TRUE(reply.ok()) << reply.status().message();
  EXPECT_TRUE(Contains(reply->text, "```cuda\n__global__ void k() {}\n```")) << reply->text;
  EXPECT_TRUE(reply->tool_calls.empty());
  EXPECT_EQ(reply->stop_reason, "stop");
  EXPECT_EQ(reply->attempts, 1);
  EXPECT_EQ(reply->usage.input_tokens, 100);
  EXPECT_EQ(reply->usage.output_tokens, 50);

  auto requests = server_.Requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].path, "/v1/chat/completions");
  EXPECT_EQ(requests[0].headers["authorization"], std::string("Bearer ") + kKey);
  EXPECT_EQ(requests[0].headers["content-type"], "application/json");
  const json& body = requests[0].json;
  EXPECT_EQ(body["model"], "qwen2.5-coder:7b");
  ASSERT_EQ(body["messages"].size(), 2u);
  EXPECT_EQ(body["messages"][0], json({{"role", "system"}, {"content", "You write CUDA kernels."}}));
  EXPECT_EQ(body["messages"][1], json({{"role", "user"}, {"content", "make it fast"}}));
  EXPECT_EQ(body["max_tokens"], config_.max_tokens);  // servers copying the format know max_tokens
  EXPECT_DOUBLE_EQ(body["temperature"].get<double>(), config_.temperature);
  EXPECT_FALSE(body.contains("tools"));
}

TEST_F(ChatClientTest, OpenAIProperSendsMaxCompletionTokensAndTheRequestsOwnSettings) {
  server_.Push(FakeReply::Text("ok"));
  auto client = Make("llm:openai:gpt-4o@" + server_.BaseUrl());
  ASSERT_TRUE(client);
  ChatRequest request = Ask("hi");
  request.max_tokens = 123;
  request.temperature = 0;
  ASSERT_TRUE(client->Complete(request).ok());
  const json body = server_.Requests().at(0).json;
  EXPECT_EQ(body["max_completion_tokens"], 123);
  EXPECT_FALSE(body.contains("max_tokens"));
  EXPECT_EQ(body["temperature"], 0.0);
}

TEST_F(ChatClientTest, AnthropicTextReply) {
  server_.Push(FakeReply::Code("int x;").WithUsage(1200, 340));
  auto client = Make(server_.AnthropicSpec("claude-sonnet-4-5"));
  ASSERT_TRUE(client);
  Result<ChatReply> reply = client->Complete(Ask("make it fast"));
  ASSERT_TRUE(reply.ok()) << reply.status().message();
  EXPECT_TRUE(Contains(reply->text, "```cpp\nint x;\n```")) << reply->text;
  EXPECT_EQ(reply->stop_reason, "end_turn");
  EXPECT_EQ(reply->usage.input_tokens, 1200);
  EXPECT_EQ(reply->usage.output_tokens, 340);

  auto requests = server_.Requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].path, "/v1/messages");
  EXPECT_EQ(requests[0].headers["x-api-key"], kKey);
  EXPECT_EQ(requests[0].headers["anthropic-version"], "2023-06-01");
  EXPECT_EQ(requests[0].headers.count("authorization"), 0u);
  const json& body = requests[0].json;
  EXPECT_EQ(body["model"], "claude-sonnet-4-5");
  EXPECT_EQ(body["system"], "You write CUDA kernels.");  // top level, not a message
  ASSERT_EQ(body["messages"].size(), 1u);
  EXPECT_EQ(body["messages"][0]["role"], "user");
  EXPECT_EQ(body["messages"][0]["content"][0], json({{"type", "text"}, {"text", "make it fast"}}));
  EXPECT_EQ(body["max_tokens"], config_.max_tokens);
}

TEST_F(ChatClientTest, OpenAIToolCallRoundTrip) {
  server_.Push(FakeReply::ToolCalls({{"call_1", "search_code", {{"query", "cute::gemm"}}}}));
  server_.Push(FakeReply::Code("int y;"));
  auto client = Make(server_.OpenAISpec("m"));
  ASSERT_TRUE(client);

  ChatRequest request = Ask("write a CuTe GEMM");
  request.tools.push_back(SearchCodeTool());
  Result<ChatReply> first = client->Complete(request);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->stop_reason, "tool_calls");
  ASSERT_EQ(first->tool_calls.size(), 1u);
  EXPECT_EQ(first->tool_calls[0].id, "call_1");
  EXPECT_EQ(first->tool_calls[0].name, "search_code");
  EXPECT_EQ(first->tool_calls[0].arguments, json({{"query", "cute::gemm"}}));

  request.messages.push_back({"assistant", first->text, first->tool_calls, ""});
  request.messages.push_back({"tool", "include/cute/gemm.hpp:12: …", {}, "call_1"});
  Result<ChatReply> second = client->Complete(request);
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_TRUE(Contains(second->text, "int y;"));

  auto requests = server_.Requests();
  ASSERT_EQ(requests.size(), 2u);
  const json& tools = requests[0].json["tools"];
  ASSERT_EQ(tools.size(), 1u);
  EXPECT_EQ(tools[0]["type"], "function");
  EXPECT_EQ(tools[0]["function"]["name"], "search_code");
  EXPECT_EQ(tools[0]["function"]["parameters"], SearchCodeTool().parameters);
  const json& messages = requests[1].json["messages"];
  ASSERT_EQ(messages.size(), 4u);
  EXPECT_EQ(messages[2]["role"], "assistant");
  EXPECT_TRUE(messages[2]["content"].is_null());
  EXPECT_EQ(messages[2]["tool_calls"][0]["id"], "call_1");
  EXPECT_EQ(messages[2]["tool_calls"][0]["function"]["name"], "search_code");
  // Arguments travel as a JSON string in this format.
  EXPECT_EQ(json::parse(messages[2]["tool_calls"][0]["function"]["arguments"].get<std::string>()),
            json({{"query", "cute::gemm"}}));
  EXPECT_EQ(messages[3],
            json({{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "include/cute/gemm.hpp:12: …"}}));
}

TEST_F(ChatClientTest, OpenAIToolArgumentsThatAreNotJsonArriveMarked) {
  server_.Push(FakeReply::Raw(R"({"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[
      {"id":"c","type":"function","function":{"name":"read_file","arguments":"{path: oops"}}]},
      "finish_reason":"tool_calls"}],"usage":null})"));
  auto client = Make(server_.OpenAISpec("m"));
  ASSERT_TRUE(client);
  Result<ChatReply> reply = client->Complete(Ask("x"));
  ASSERT_TRUE(reply.ok()) << reply.status().message();
  ASSERT_EQ(reply->tool_calls.size(), 1u);
  EXPECT_EQ(reply->tool_calls[0].arguments, json({{"_invalid_json", "{path: oops"}}));
  EXPECT_EQ(reply->usage.input_tokens, 0);
}

TEST_F(ChatClientTest, AnthropicToolCallRoundTripSendsAllResultsInOneUserTurn) {
  server_.Push(FakeReply::ToolCalls({{"toolu_1", "search_code", {{"query", "TiledMma"}}},
                                     {"toolu_2", "search_code", {{"query", "make_tiled_copy"}}}}));
  server_.Push(FakeReply::Code("int z;"));
  auto client = Make(server_.AnthropicSpec("claude-opus-4-1"));
  ASSERT_TRUE(client);

  ChatRequest request = Ask("write a CuTe GEMM");
  request.tools.push_back(SearchCodeTool());
  Result<ChatReply> first = client->Complete(request);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->stop_reason, "tool_use");
  ASSERT_EQ(first->tool_calls.size(), 2u);
  EXPECT_EQ(first->tool_calls[1].id, "toolu_2");
  EXPECT_EQ(first->tool_calls[1].arguments, json({{"query", "make_tiled_copy"}}));

  request.messages.push_back({"assistant", "Let me look.", first->tool_calls, ""});
  request.messages.push_back({"tool", "result one", {}, "toolu_1"});
  request.messages.push_back({"tool", "result two", {}, "toolu_2"});
  ASSERT_TRUE(client->Complete(request).ok());

  auto requests = server_.Requests();
  ASSERT_EQ(requests.size(), 2u);
  const json& tool = requests[0].json["tools"][0];
  EXPECT_EQ(tool["name"], "search_code");
  EXPECT_EQ(tool["input_schema"], SearchCodeTool().parameters);
  const json& messages = requests[1].json["messages"];
  ASSERT_EQ(messages.size(), 3u);
  EXPECT_EQ(messages[1]["role"], "assistant");
  EXPECT_EQ(messages[1]["content"][0], json({{"type", "text"}, {"text", "Let me look."}}));
  EXPECT_EQ(
      messages[1]["content"][1],
      json({{"type", "tool_use"}, {"id", "toolu_1"}, {"name", "search_code"}, {"input", {{"query", "TiledMma"}}}}));
  EXPECT_EQ(messages[2]["role"], "user");
  ASSERT_EQ(messages[2]["content"].size(), 2u);
  EXPECT_EQ(messages[2]["content"][0],
            json({{"type", "tool_result"}, {"tool_use_id", "toolu_1"}, {"content", "result one"}}));
  EXPECT_EQ(messages[2]["content"][1]["tool_use_id"], "toolu_2");
}

// ---- accounting --------------------------------------------------------------------------------

TEST_F(ChatClientTest, CostsFollowTheConfiguredPricesAndAddUp) {
  config_.prices["priced-model"] = Prices{2.0, 10.0};
  server_.Push(FakeReply::Text("a").WithUsage(1000, 500));
  server_.Push(FakeReply::Text("b").WithUsage(3000, 100));
  auto client = Make(server_.OpenAISpec("priced-model"));
  ASSERT_TRUE(client);
  Result<ChatReply> a = client->Complete(Ask("1"));
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_TRUE(a->usage.priced);
  EXPECT_DOUBLE_EQ(a->usage.cost_usd, (1000 * 2.0 + 500 * 10.0) / 1e6);
  ASSERT_TRUE(client->Complete(Ask("2")).ok());
  Usage spent = client->Spent();
  EXPECT_EQ(spent.input_tokens, 4000);
  EXPECT_EQ(spent.output_tokens, 600);
  EXPECT_DOUBLE_EQ(spent.cost_usd, (4000 * 2.0 + 600 * 10.0) / 1e6);
  EXPECT_TRUE(spent.priced);
  auto exchanges = sink_->exchanges();
  ASSERT_EQ(exchanges.size(), 2u);
  EXPECT_DOUBLE_EQ(exchanges[1].usage.cost_usd, (3000 * 2.0 + 100 * 10.0) / 1e6);
}

TEST_F(ChatClientTest, AnUnpricedModelCostsZeroAndSaysSo) {
  config_.prices["other-model"] = Prices{2.0, 10.0};
  server_.Push(FakeReply::Text("a").WithUsage(1000, 500));
  auto client = Make(server_.AnthropicSpec("unpriced-model"));
  ASSERT_TRUE(client);
  Result<ChatReply> a = client->Complete(Ask("1"));
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_FALSE(a->usage.priced);
  EXPECT_EQ(a->usage.cost_usd, 0);
  EXPECT_FALSE(client->Spent().priced);
  EXPECT_EQ(client->Spent().input_tokens, 1000);
}

TEST_F(ChatClientTest, TheSpendingCapStopsCallsBeforeTheyAreSent) {
  config_.prices["m"] = Prices{10.0, 10.0};
  config_.max_cost_usd = 0.01;
  server_.Push(FakeReply::Text("a").WithUsage(1000, 1000));  // $0.02
  server_.Push(FakeReply::Text("b"));
  auto client = Make(server_.OpenAISpec("m"));
  ASSERT_TRUE(client);
  ASSERT_TRUE(client->Complete(Ask("1")).ok());
  Result<ChatReply> refused = client->Complete(Ask("2"));
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(Contains(refused.status().message(), "--max-cost")) << refused.status().message();
  EXPECT_EQ(server_.RequestCount(), 1u);
}

// ---- retries -----------------------------------------------------------------------------------

TEST_F(ChatClientTest, A429WaitsWhatRetryAfterSays) {
  server_.Push(FakeReply::Error(429, "Rate limit reached").WithRetryAfter(7));
  server_.Push(FakeReply::Text("done"));
  auto client = Make(server_.AnthropicSpec("m"));
  ASSERT_TRUE(client);
  Result<ChatReply> reply = client->Complete(Ask("x"));
  ASSERT_TRUE(reply.ok()) << reply.status().message();
  EXPECT_EQ(reply->text, "done");
  EXPECT_EQ(reply->attempts, 2);
  EXPECT_EQ(clock_.SleepSeconds(), std::vector<double>{7});
  EXPECT_EQ(server_.RequestCount(), 2u);
  auto exchanges = sink_->exchanges();
  ASSERT_EQ(exchanges.size(), 1u);  // one exchange per call, however many attempts
  EXPECT_EQ(exchanges[0].attempts, 2);
  EXPECT_EQ(exchanges[0].status, 200);
}

TEST_F(ChatClientTest, A500IsRetriedWithJitteredExponentialBackoff) {
  config_.backoff_base_s = 1;
  config_.backoff_max_s = 3;
  for (int i = 0; i < 4; ++i) server_.Push(FakeReply::Error(i % 2 ? 503 : 500, "overloaded"));
  server_.Push(FakeReply::Text("done"));
  auto client = Make(server_.OpenAISpec("m"));
  ASSERT_TRUE(client);
  Result<ChatReply> reply = client->Complete(Ask("x"));
  ASSERT_TRUE(reply.ok()) << reply.status().message();
  EXPECT_EQ(reply->attempts, 5);
  std::vector<double> sleeps = clock_.SleepSeconds();
  ASSERT_EQ(sleeps.size(), 4u);
  const double ceilings[] = {1, 2, 3, 3};  // base·2^attempt, capped at backoff_max_s
  for (size_t i = 0; i < sleeps.size(); ++i) {
    EXPECT_GE(sleeps[i], 0) << i;
    EXPECT_LE(sleeps[i], ceilings[i]) << i;
  }
}

TEST_F(ChatClientTest, ANetworkErrorIsRetriedThenFailsAfterMaxRetries) {
  config_.max_retries = 2;
  auto client = Make(server_.OpenAISpec("m"));
  ASSERT_TRUE(client);
  server_.Stop();  // the port closes: connections are refused
  Result<ChatReply> reply = client->Complete(Ask("x"));
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(Contains(reply.status().message(), "after 3 attempts")) << reply.status().message();
  EXPECT_TRUE(Contains(reply.status().message(), "check that the server runs")) << reply.status().message();
  EXPECT_EQ(clock_.SleepSeconds().size(), 2u);
  auto exchanges = sink_->exchanges();
  ASSERT_EQ(exchanges.size(), 1u);
  EXPECT_FALSE(exchanges[0].error.empty());
}

TEST_F(ChatClientTest, ASlowReplyHitsTheReadTimeout) {
  // The transport bounds the whole exchange by connect + read timeout.
  config_.connect_timeout_s = 0.5;
  config_.read_timeout_s = 0.3;
  config_.max_retries = 1;
  server_.Push(FakeReply::Text("late").WithDelay(5));
  server_.Push(FakeReply::Text("late too").WithDelay(5));
  auto client = Make(server_.OpenAISpec("m"));
  ASSERT_TRUE(client);
  auto start = std::chrono::steady_clock::now();
  Result<ChatReply> reply = client->Complete(Ask("x"));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(reply.ok());
  EXPECT_TRUE(Contains(reply.status().message(), "timed out")) << reply.status().message();
  EXPECT_TRUE(Contains(reply.status().message(), "read_timeout_s")) << reply.status().message();
  EXPECT_EQ(server_.RequestCount(), 2u);  // a timeout is retried like any network error
  EXPECT_LT(seconds, 3);                  // 2 × 0.8 s, far below the 5 s the server would take
}

TEST_F(ChatClientTest, MalformedJsonIsAClearErrorAndNotRetried) {
  server_.Push(FakeReply::Raw("{\"choices\": [oops"));
  auto client = Make(server_.AnthropicSpec("m"));
  ASSERT_TRUE(client);
  Result<ChatReply> reply = client->Complete(Ask("x"));
  ASSERT_FALSE(reply.ok());
  EXPECT_TRUE(Contains(reply.status().message(), "is not a JSON object")) << reply.status().message();
  EXPECT_TRUE(Contains(reply.status().message(), "{\"choices\": [oops")) << reply.status().message();
  EXPECT_EQ(server_.RequestCount(), 1u);

  server_.Push(FakeReply::Raw("{\"id\": \"x\"}"));
  auto openai = Make(server_.OpenAISpec("m"));
  Result<ChatReply> shapeless = openai->Complete(Ask("x"));
  ASSERT_FALSE(shapeless.ok());
  EXPECT_TRUE(Contains(shapeless.status().message(), "no choices[0]")) << shapeless.status().message();
}

TEST_F(ChatClientTest, A401FailsAtOnceWithTheProvidersMessageRedacted) {
  server_.Push(FakeReply::Error(401, std::string("Incorrect API key provided: ") + kKey + "."));
  auto client = Make(server_.OpenAISpec("m"));
  ASSERT_TRUE(client);
  Result<ChatReply> reply = client->Complete(Ask("x"));
  ASSERT_FALSE(reply.ok());
  const std::string& message = reply.status().message();
  EXPECT_EQ(reply.status().code(), StatusCode::kInvalidInput);
  EXPECT_TRUE(Contains(message, "HTTP 401: Incorrect API key provided: [redacted]")) << message;
  EXPECT_TRUE(Contains(message, kKeyVariable)) << message;  // where to fix it
  EXPECT_FALSE(Contains(message, kKey)) << message;
  EXPECT_EQ(server_.RequestCount(), 1u);
  EXPECT_TRUE(clock_.SleepSeconds().empty());
}

TEST_F(ChatClientTest, A404NamesTheModelAndBaseUrl) {
  server_.Push(FakeReply::Error(404, "model 'nope' not found"));
  auto client = Make(server_.AnthropicSpec("nope"));
  ASSERT_TRUE(client);
  Result<ChatReply> reply = client->Complete(Ask("x"));
  ASSERT_FALSE(reply.ok());
  EXPECT_TRUE(Contains(reply.status().message(), "model 'nope' not found")) << reply.status().message();
  EXPECT_TRUE(Contains(reply.status().message(), "check the model name and the base URL"));
}

// ---- redaction ---------------------------------------------------------------------------------

TEST_F(ChatClientTest, TheKeyIsSentButNeverArchived) {
  // A model (or a proxy) that echoes the key back in its reply and in an error.
  server_.Push(FakeReply::Text(std::string("your key is ") + kKey));
  server_.Push(FakeReply::Error(500, std::string("upstream rejected Bearer ") + kKey));
  server_.Push(FakeReply::Error(500, "again"));
  config_.max_retries = 1;
  for (const std::string& spec : {server_.OpenAISpec("m"), server_.AnthropicSpec("m")}) {
    auto client = Make(spec);
    ASSERT_TRUE(client);
    Result<ChatReply> reply = client->Complete(Ask(spec));
    if (!reply.ok()) {
      EXPECT_FALSE(Contains(reply.status().message(), kKey)) << reply.status().message();
    }
  }
  auto requests = server_.Requests();
  ASSERT_GE(requests.size(), 2u);
  EXPECT_EQ(requests[0].headers["authorization"], std::string("Bearer ") + kKey);  // it is sent
  EXPECT_EQ(requests[1].headers["x-api-key"], kKey);
  auto exchanges = sink_->exchanges();
  ASSERT_EQ(exchanges.size(), 2u);
  for (const Exchange& e : exchanges) {
    for (const std::string* field : {&e.endpoint, &e.request_json, &e.response_json, &e.error}) {
      EXPECT_FALSE(Contains(*field, kKey)) << *field;
    }
  }
  EXPECT_TRUE(Contains(exchanges[0].response_json, "your key is [redacted]")) << exchanges[0].response_json;
  EXPECT_TRUE(Contains(exchanges[1].error, "HTTP 500")) << exchanges[1].error;
}

TEST_F(ChatClientTest, AMissingKeyNamesTheVariable) {
  unsetenv("KPILOT_LLM_TEST_ABSENT_KEY");
  config_.api_key_env = "KPILOT_LLM_TEST_ABSENT_KEY";
  Result<Endpoint> endpoint = ParseLlmSpec("llm:anthropic:claude-sonnet-4-5");
  ASSERT_TRUE(endpoint.ok());
  auto client = MakeChatClient(*endpoint, config_, MakeCurlTransport(), sink_, clock_);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(Contains(client.status().message(), "export KPILOT_LLM_TEST_ABSENT_KEY=")) << client.status().message();
}

TEST_F(ChatClientTest, AnOpenAICompatibleServerMayRunWithoutAKey) {
  config_.api_key_env = "KPILOT_LLM_TEST_ABSENT_KEY";
  unsetenv("KPILOT_LLM_TEST_ABSENT_KEY");
  server_.Push(FakeReply::Text("ok"));
  auto client = Make(server_.OpenAISpec("local"));
  ASSERT_TRUE(client);
  ASSERT_TRUE(client->Complete(Ask("x")).ok());
  EXPECT_EQ(server_.Requests().at(0).headers.count("authorization"), 0u);
}

// ---- concurrency -------------------------------------------------------------------------------

TEST_F(ChatClientTest, AtMostMaxConcurrencyRequestsAreInFlight) {
  config_.max_concurrency = 2;
  constexpr int kCalls = 6;
  for (int i = 0; i < kCalls; ++i) server_.Push(FakeReply::Text("r").WithDelay(0.25));
  auto client = Make(server_.OpenAISpec("m"));
  ASSERT_TRUE(client);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < kCalls; ++i) {
    threads.emplace_back([&] { ok += client->Complete(Ask("x")).ok() ? 1 : 0; });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), kCalls);
  EXPECT_EQ(server_.RequestCount(), static_cast<size_t>(kCalls));
  EXPECT_EQ(server_.MaxConcurrent(), 2);  // the limit, and reached: the calls did overlap
}

}  // namespace
}  // namespace kpilot::llm
