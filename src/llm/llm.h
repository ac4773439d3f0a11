// Language models over HTTP: OpenAI Chat Completions, Anthropic Messages and any
// OpenAI-compatible server (vLLM, llama.cpp, Ollama …), with no SDK — libcurl underneath.
//
// The contract the LLM generator (src/generate/llm_generator.h) builds on:
//   - ParseLlmSpec: "llm:PROVIDER:MODEL[@BASE_URL]" → Endpoint;
//   - LoadLlmConfig: the TOML defaults (timeouts, retries, prices, spending cap, …);
//   - ChatClient: one provider-neutral chat call (text and tool calls) with retries, timeouts,
//     a concurrency limit, token and cost accounting, and every exchange archived, redacted;
//   - HttpTransport / TranscriptSink and the Clock the retries wait on (core/clock.h): the side
//     effects, each with a real implementation and a test double.
// Keys never appear in logs, the store or error messages (Redact).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/status.h"

namespace kpilot::llm {

enum class Provider { kOpenAI, kAnthropic, kOpenAICompatible };
std::string_view ProviderName(Provider p);  // "openai" | "anthropic" | "openai-compatible"

struct Endpoint {
  Provider provider = Provider::kOpenAI;
  std::string model;        // may contain ':' (e.g. "qwen2.5-coder:7b")
  std::string base_url;     // e.g. "https://api.openai.com/v1"; provider default when not given
  std::string api_key_env;  // OPENAI_API_KEY / ANTHROPIC_API_KEY / OPENAI_COMPATIBLE_API_KEY
                            // (never OPENAI_API_KEY: that key stays with OpenAI); the config's
                            // api_key_env overrides it in MakeChatClient
};

// "llm:PROVIDER:MODEL[@BASE_URL]": PROVIDER runs to the first ':', BASE_URL starts after the last
// '@' that is followed by "http://" or "https://", MODEL is what lies between. openai-compatible
// needs a BASE_URL. InvalidInput naming the spec, the part and the fix otherwise.
Result<Endpoint> ParseLlmSpec(const std::string& spec);

struct Prices {
  double input_per_mtok = 0;  // US dollars per million input tokens
  double output_per_mtok = 0;
};

// Defaults, overridable by a TOML file: --llm-config FILE, else ~/.config/kpilot/llm.toml
// (docs/llm.md lists every key). Never a file in the task folder: a downloaded task must not be
// able to widen code_roots or allowed_env.
struct LlmConfig {
  double connect_timeout_s = 10;
  double read_timeout_s = 300;
  int max_retries = 5;        // on 429, 5xx and network errors
  double backoff_base_s = 1;  // exponential: base·2^attempt, full jitter, capped
  double backoff_max_s = 60;
  int max_concurrency = 2;    // requests in flight per endpoint
  double max_cost_usd = 2.0;  // the default spending cap of a run (--max-cost raises it)
  int max_tokens = 8192;      // per reply
  double temperature = 0.7;
  std::string api_key_env;               // overrides the provider's variable name
  std::map<std::string, Prices> prices;  // by model name; unknown models cost 0 and say so
  std::vector<std::string> code_roots;   // trees search_code/read_file may read (CUTLASS first)
  std::string prompts_dir;               // user overrides of the prompt templates
  int tool_calls_per_proposal = 8;       // function-calling budget per proposal
  int reasks = 2;                        // re-asks on a reply without usable code
  int prompt_skills = 3;                 // skill cards shown in an llm: prompt (0: none; tools still list them)
  // The command: generator (src/generate/command_generator.h).
  std::vector<std::string> command_argv;  // argv array form of the command, when configured
  std::vector<std::string> allowed_env;   // variables passed through to the agent (others scrubbed)
  double command_timeout_s = 1800;
  // Evaluations each command: agent may ask kpilot's MCP server for while it drafts (its
  // workspace configures `kpilot mcp` for Claude Code and Codex); 0: no server is configured.
  int command_mcp_evaluations = 5;
};

// Reads `file` over the defaults. A bad file is InvalidInput naming the file, the line, the key
// and the fix ("llm.toml:3: max_retries: expected an integer, got string \"5\"; write e.g. …"),
// one line per problem; unknown keys are errors (a typo must not silently keep a default).
// Relative paths (code_roots, prompts_dir) are resolved against the file's folder.
Result<LlmConfig> LoadLlmConfig(const std::filesystem::path& file, LlmConfig defaults = {});

// ---- provider-neutral messages -----------------------------------------------------------------

struct ToolCall {
  std::string id;
  std::string name;
  // Always an object. Arguments a model wrote that are not a JSON object arrive as
  // {"_invalid_json": "<what it wrote>"}, so the caller can tell the model what went wrong.
  nlohmann::json arguments = nlohmann::json::object();
};

struct Message {
  std::string role;  // "user" | "assistant" | "tool"
  std::string content;
  std::vector<ToolCall> tool_calls;  // assistant messages that call tools
  std::string tool_call_id;          // tool results: the call answered
};

struct ToolSpec {
  std::string name;
  std::string description;
  nlohmann::json parameters = nlohmann::json::object();  // JSON Schema of the arguments
};

struct ChatRequest {
  std::string system;
  std::vector<Message> messages;
  std::vector<ToolSpec> tools;  // empty: no function calling
  int max_tokens = 0;           // 0: the config's
  double temperature = -1;      // < 0: the config's
};

struct Usage {
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  double cost_usd = 0;
  bool priced = true;  // false when the model has no configured price
};

struct ChatReply {
  std::string text;
  std::vector<ToolCall> tool_calls;
  std::string stop_reason;  // the provider's, e.g. "stop", "end_turn", "tool_use"
  Usage usage;
  int attempts = 1;  // HTTP attempts it took (retries + 1)
};

// ---- side effects ------------------------------------------------------------------------------

struct HttpRequest {
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  double connect_timeout_s = 10;
  double read_timeout_s = 300;  // replies are not streamed: the exchange is bounded by
                                // connect_timeout_s + read_timeout_s in all
};

struct HttpResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  // A response of any status; Unavailable on connection failures and timeouts.
  virtual Result<HttpResponse> Post(const HttpRequest& request) = 0;
};
std::shared_ptr<HttpTransport> MakeCurlTransport();

// One archived exchange, already redacted.
struct Exchange {
  std::string endpoint;  // Endpoint described, no key
  std::string request_json;
  std::string response_json;  // the last attempt's body
  int status = 0;
  int attempts = 0;
  double seconds = 0;
  Usage usage;
  std::string error;  // "" when it succeeded
};

class TranscriptSink {
 public:
  virtual ~TranscriptSink() = default;
  virtual void Record(const Exchange& exchange) = 0;
};

// ---- the client --------------------------------------------------------------------------------

class ChatClient {
 public:
  virtual ~ChatClient() = default;
  // One chat call. Retries 429, 5xx and network errors (timeouts included) with exponential
  // backoff and full jitter, honouring Retry-After (seconds) and retry-after-ms; other 4xx fail at
  // once with the provider's message (redacted): InvalidInput. Out of retries: Unavailable. A 2xx
  // body that is not the provider's reply shape (malformed JSON, …): Unavailable quoting its start.
  // Once Spent().cost_usd reaches LlmConfig::max_cost_usd (> 0), every call is Unavailable
  // naming --max-cost, before anything is sent. At most max_concurrency calls of this client
  // are on the wire at once; a call waiting out a backoff holds no slot.
  virtual Result<ChatReply> Complete(const ChatRequest& request) = 0;
  // "openai gpt-4o at https://api.openai.com/v1": what the run states up front.
  virtual std::string Describe() const = 0;
  // Tokens and dollars spent so far by this client (all calls, thread-safe).
  virtual Usage Spent() const = 0;
};

// The key is read from the environment here; Unavailable naming the variable when it is unset
// (openai-compatible servers may run without one). The back-off between attempts is waited out
// on `clock` (borrowed: it must outlive the client), which also times each exchange.
Result<std::unique_ptr<ChatClient>> MakeChatClient(const Endpoint& endpoint, const LlmConfig& config,
                                                   std::shared_ptr<HttpTransport> transport,
                                                   std::shared_ptr<TranscriptSink> sink, Clock& clock = SystemClock());

// `text` with every secret, and anything shaped like an API key or an Authorization / x-api-key
// header value, replaced by "[redacted]".
std::string Redact(std::string text, const std::vector<std::string>& secrets);

}  // namespace kpilot::llm
