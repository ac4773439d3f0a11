// ChatClient: one wire format plus retries, the concurrency limit, accounting and transcripts.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <random>
#include <semaphore>

#include <fmt/format.h>

#include "llm/wire.h"

namespace kpilot::llm {

namespace {

// Seconds a 429/503 asks us to wait: retry-after-ms (OpenAI) or Retry-After in seconds; the
// HTTP-date form of Retry-After is left to the backoff. < 0 when there is none.
double RetryAfterSeconds(const std::map<std::string, std::string>& headers) {
  auto number = [&](const char* name) -> double {
    const auto it = headers.find(name);
    if (it == headers.end()) return -1;
    char* end = nullptr;
    double value = std::strtod(it->second.c_str(), &end);
    if (end == it->second.c_str() || *end != '\0' || !std::isfinite(value) || value < 0) return -1;
    return value;
  };
  if (double ms = number("retry-after-ms"); ms >= 0) return ms / 1000;
  return number("retry-after");
}

bool Retryable(int status) { return status == 429 || status >= 500; }

class Client final : public ChatClient {
 public:
  Client(Endpoint endpoint, LlmConfig config, std::string api_key, std::unique_ptr<WireFormat> wire,
         std::shared_ptr<HttpTransport> transport, std::shared_ptr<TranscriptSink> sink, Clock& clock)
      : endpoint_(std::move(endpoint)),
        config_(std::move(config)),
        api_key_(std::move(api_key)),
        wire_(std::move(wire)),
        transport_(std::move(transport)),
        sink_(std::move(sink)),
        clock_(clock),
        slots_(std::max(config_.max_concurrency, 1)),
        rng_(std::random_device{}()) {}

  std::string Describe() const override {
    return fmt::format("{} {} at {}", ProviderName(endpoint_.provider), endpoint_.model, endpoint_.base_url);
  }

  Usage Spent() const override {
    std::lock_guard lock(mu_);
    return spent_;
  }

  Result<ChatReply> Complete(const ChatRequest& request) override {
    if (Status cap = CheckCap(); !cap.ok()) return cap;
    WireSettings settings{endpoint_.model, endpoint_.base_url, api_key_,
                          request.max_tokens > 0 ? request.max_tokens : config_.max_tokens,
                          request.temperature >= 0 ? request.temperature : config_.temperature};
    HttpRequest http = wire_->Build(request, settings);
    http.connect_timeout_s = config_.connect_timeout_s;
    http.read_timeout_s = config_.read_timeout_s;

    Exchange exchange;
    exchange.endpoint = Describe();
    exchange.request_json = http.body;
    const Clock::TimePoint start = clock_.Now();
    Result<ChatReply> result = Send(http, &exchange);
    exchange.seconds = std::chrono::duration<double>(clock_.Now() - start).count();
    if (result.ok()) {
      Account(&result->usage);
      exchange.usage = result->usage;
    } else {
      exchange.error = result.status().message();
    }
    if (sink_) {
      exchange.request_json = Redact(std::move(exchange.request_json), Secrets());
      exchange.response_json = Redact(std::move(exchange.response_json), Secrets());
      exchange.error = Redact(std::move(exchange.error), Secrets());
      sink_->Record(exchange);
    }
    return result;
  }

 private:
  std::vector<std::string> Secrets() const { return {api_key_}; }

  Status CheckCap() const {
    std::lock_guard lock(mu_);
    if (config_.max_cost_usd > 0 && spent_.cost_usd >= config_.max_cost_usd) {
      return Status::Unavailable(
          fmt::format("{}: the spending cap of ${:.2f} is reached (${:.4f} spent); raise it with --max-cost or "
                      "max_cost_usd in the LLM config",
                      Describe(), config_.max_cost_usd, spent_.cost_usd));
    }
    return Status::Ok();
  }

  // Fills the cost of `usage` from the configured prices and adds it to what was spent.
  void Account(Usage* usage) {
    const auto price = config_.prices.find(endpoint_.model);
    usage->priced = price != config_.prices.end();
    usage->cost_usd = usage->priced ? (usage->input_tokens * price->second.input_per_mtok +
                                       usage->output_tokens * price->second.output_per_mtok) /
                                          1e6
                                    : 0;
    std::lock_guard lock(mu_);
    spent_.input_tokens += usage->input_tokens;
    spent_.output_tokens += usage->output_tokens;
    spent_.cost_usd += usage->cost_usd;
    spent_.priced = spent_.priced && usage->priced;
  }

  // Full jitter: uniform in [0, min(max, base·2^attempt)] (AWS architecture blog, "Exponential
  // Backoff and Jitter"), so clients that failed together do not retry together.
  double Backoff(int attempt) {
    double ceiling = std::min(config_.backoff_max_s, config_.backoff_base_s * std::ldexp(1.0, std::min(attempt, 30)));
    std::lock_guard lock(mu_);
    return std::uniform_real_distribution<double>(0, std::max(ceiling, 0.0))(rng_);
  }

  // The attempts of one call. Fills the exchange's last status, body and attempt count.
  Result<ChatReply> Send(const HttpRequest& http, Exchange* exchange) {
    std::string last_error;
    for (int attempt = 0;; ++attempt) {
      exchange->attempts = attempt + 1;
      Result<HttpResponse> response = [&] {
        slots_.acquire();
        Result<HttpResponse> r = transport_->Post(http);
        slots_.release();
        return r;
      }();
      double wait = -1;
      if (!response.ok()) {
        last_error = response.status().message();
      } else {
        exchange->status = response->status;
        exchange->response_json = response->body;
        if (response->status >= 200 && response->status < 300) {
          Result<ChatReply> reply = wire_->Parse(response->body);
          if (!reply.ok()) {
            return Status::Unavailable(Redact(Describe() + ": " + reply.status().message(), Secrets()));
          }
          reply->attempts = attempt + 1;
          return reply;
        }
        std::string message = fmt::format("HTTP {}: {}", response->status, ErrorMessageOf(response->body));
        if (!Retryable(response->status)) {
          return Status::InvalidInput(
              Redact(fmt::format("{}: {}{}", Describe(), message, Hint(response->status)), Secrets()));
        }
        last_error = std::move(message);
        wait = RetryAfterSeconds(response->headers);
      }
      if (attempt >= config_.max_retries) {
        return Status::Unavailable(
            Redact(fmt::format("{}: {} (after {} attempt{}; max_retries = {})", Describe(), last_error, attempt + 1,
                               attempt == 0 ? "" : "s", config_.max_retries),
                   Secrets()));
      }
      clock_.SleepFor(std::chrono::duration_cast<Clock::Duration>(
          std::chrono::duration<double>(wait >= 0 ? wait : Backoff(attempt))));
    }
  }

  std::string Hint(int status) const {
    switch (status) {
      case 401:
      case 403:
        return fmt::format("; check the key in ${}", endpoint_.api_key_env);
      case 404:
        return "; check the model name and the base URL (it usually ends in /v1)";
      default:
        return "";
    }
  }

  const Endpoint endpoint_;
  const LlmConfig config_;
  const std::string api_key_;
  const std::unique_ptr<WireFormat> wire_;
  const std::shared_ptr<HttpTransport> transport_;
  const std::shared_ptr<TranscriptSink> sink_;
  Clock& clock_;
  std::counting_semaphore<> slots_;

  mutable std::mutex mu_;  // guards spent_ and rng_
  Usage spent_;
  std::mt19937_64 rng_;
};

}  // namespace

Result<std::unique_ptr<ChatClient>> MakeChatClient(const Endpoint& endpoint, const LlmConfig& config,
                                                   std::shared_ptr<HttpTransport> transport,
                                                   std::shared_ptr<TranscriptSink> sink, Clock& clock) {
  if (!transport) return Status::Internal("MakeChatClient: no HTTP transport");
  Endpoint resolved = endpoint;
  if (!config.api_key_env.empty()) resolved.api_key_env = config.api_key_env;
  std::string key;
  if (!resolved.api_key_env.empty()) {
    const char* value = std::getenv(resolved.api_key_env.c_str());
    if (value != nullptr) key = value;
  }
  if (key.empty() && resolved.provider != Provider::kOpenAICompatible) {
    return Status::Unavailable(
        fmt::format("{} needs an API key: export {}=… (or name another variable with api_key_env in the LLM config)",
                    ProviderName(resolved.provider), resolved.api_key_env.empty() ? "THE_KEY" : resolved.api_key_env));
  }
  std::unique_ptr<WireFormat> wire =
      resolved.provider == Provider::kAnthropic ? MakeAnthropicWire() : MakeOpenAIWire(resolved.provider);
  return std::unique_ptr<ChatClient>(std::make_unique<Client>(
      std::move(resolved), config, std::move(key), std::move(wire), std::move(transport), std::move(sink), clock));
}

}  // namespace kpilot::llm
