// ParseLlmSpec: "llm:PROVIDER:MODEL[@BASE_URL]" → Endpoint.
#include <string_view>

#include "llm/llm.h"

namespace kpilot::llm {

namespace {

constexpr std::string_view kPrefix = "llm:";
constexpr std::string_view kExample =
    "e.g. llm:openai:gpt-4o, llm:anthropic:claude-sonnet-4-5 or "
    "llm:openai-compatible:qwen2.5-coder:7b@http://127.0.0.1:11434/v1";

Status Bad(const std::string& spec, const std::string& what) {
  return Status::InvalidInput("--generator '" + spec + "': " + what + " (" + std::string(kExample) + ")");
}

bool StartsWithUrlScheme(std::string_view s) { return s.starts_with("http://") || s.starts_with("https://"); }

struct ProviderInfo {
  Provider provider;
  std::string_view name;
  std::string_view base_url;     // "" when the user must give one
  std::string_view api_key_env;  // the variable the key is read from
};

// Not OPENAI_API_KEY for openai-compatible: a user's OpenAI key must not travel to some other
// server unasked.
constexpr ProviderInfo kProviders[] = {
    {Provider::kOpenAI, "openai", "https://api.openai.com/v1", "OPENAI_API_KEY"},
    {Provider::kAnthropic, "anthropic", "https://api.anthropic.com/v1", "ANTHROPIC_API_KEY"},
    {Provider::kOpenAICompatible, "openai-compatible", "", "OPENAI_COMPATIBLE_API_KEY"},
};

const ProviderInfo& InfoOf(Provider p) {
  for (const ProviderInfo& info : kProviders) {
    if (info.provider == p) return info;
  }
  return kProviders[0];
}

}  // namespace

std::string_view ProviderName(Provider p) { return InfoOf(p).name; }

Result<Endpoint> ParseLlmSpec(const std::string& spec) {
  std::string_view rest(spec);
  if (!rest.starts_with(kPrefix)) return Bad(spec, "an LLM generator starts with 'llm:'");
  rest.remove_prefix(kPrefix.size());

  size_t colon = rest.find(':');
  if (colon == std::string_view::npos) {
    return Bad(spec, "expected llm:PROVIDER:MODEL, with PROVIDER one of openai, anthropic, openai-compatible");
  }
  std::string_view provider = rest.substr(0, colon);
  rest.remove_prefix(colon + 1);

  const ProviderInfo* info = nullptr;
  for (const ProviderInfo& candidate : kProviders) {
    if (candidate.name == provider) info = &candidate;
  }
  if (info == nullptr) {
    return Bad(spec, "unknown provider '" + std::string(provider) + "'; use openai, anthropic or openai-compatible");
  }
  Endpoint endpoint;
  endpoint.provider = info->provider;

  // BASE_URL starts after the last '@' followed by a URL scheme: a model name may hold '@'.
  std::string_view model = rest;
  std::string base_url;
  for (size_t at = rest.rfind('@'); at != std::string_view::npos; at = rest.rfind('@', at - 1)) {
    if (StartsWithUrlScheme(rest.substr(at + 1))) {
      model = rest.substr(0, at);
      base_url = std::string(rest.substr(at + 1));
      break;
    }
    if (at == 0) break;
  }
  if (model.empty()) return Bad(spec, "the MODEL is empty; name the model after the provider");
  if (!base_url.empty()) {
    size_t host_start = base_url.find("://") + 3;
    if (host_start >= base_url.size() || base_url[host_start] == '/') {
      return Bad(spec, "the BASE_URL '" + base_url + "' has no host");
    }
    while (base_url.ends_with('/')) base_url.pop_back();
  } else {
    if (rest.find('@') != std::string_view::npos && endpoint.provider == Provider::kOpenAICompatible) {
      return Bad(spec, "the BASE_URL after '@' must start with http:// or https://");
    }
    base_url = std::string(info->base_url);
    if (base_url.empty()) {
      return Bad(spec, "openai-compatible needs the server's base URL: append @http://HOST:PORT/v1");
    }
  }
  endpoint.model = std::string(model);
  endpoint.base_url = std::move(base_url);
  endpoint.api_key_env = std::string(info->api_key_env);
  return endpoint;
}

}  // namespace kpilot::llm
