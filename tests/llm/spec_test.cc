#include <gtest/gtest.h>

#include "llm/llm.h"

namespace kpilot::llm {
namespace {

TEST(ParseLlmSpec, OpenAIDefaultsToTheOfficialEndpointAndKey) {
  Result<Endpoint> e = ParseLlmSpec("llm:openai:gpt-4o");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->provider, Provider::kOpenAI);
  EXPECT_EQ(e->model, "gpt-4o");
  EXPECT_EQ(e->base_url, "https://api.openai.com/v1");
  EXPECT_EQ(e->api_key_env, "OPENAI_API_KEY");
}

TEST(ParseLlmSpec, AnthropicDefaultsToTheOfficialEndpointAndKey) {
  Result<Endpoint> e = ParseLlmSpec("llm:anthropic:claude-sonnet-4-5");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->provider, Provider::kAnthropic);
  EXPECT_EQ(e->model, "claude-sonnet-4-5");
  EXPECT_EQ(e->base_url, "https://api.anthropic.com/v1");
  EXPECT_EQ(e->api_key_env, "ANTHROPIC_API_KEY");
}

TEST(ParseLlmSpec, ModelMayHoldColonsAndTheBaseUrlFollowsTheLastAtBeforeAScheme) {
  Result<Endpoint> e = ParseLlmSpec("llm:openai-compatible:qwen2.5-coder:7b@http://127.0.0.1:11434/v1/");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->provider, Provider::kOpenAICompatible);
  EXPECT_EQ(e->model, "qwen2.5-coder:7b");
  EXPECT_EQ(e->base_url, "http://127.0.0.1:11434/v1");  // trailing '/' dropped
  // Never the user's OpenAI key for some other server.
  EXPECT_EQ(e->api_key_env, "OPENAI_COMPATIBLE_API_KEY");
}

TEST(ParseLlmSpec, AnAtInsideTheModelIsPartOfTheModel) {
  Result<Endpoint> e = ParseLlmSpec("llm:openai-compatible:org@model:q4@v2@https://host.example/v1");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->model, "org@model:q4@v2");
  EXPECT_EQ(e->base_url, "https://host.example/v1");

  Result<Endpoint> no_url = ParseLlmSpec("llm:anthropic:claude@latest");
  ASSERT_TRUE(no_url.ok()) << no_url.status().message();
  EXPECT_EQ(no_url->model, "claude@latest");
  EXPECT_EQ(no_url->base_url, "https://api.anthropic.com/v1");
}

TEST(ParseLlmSpec, AnOfficialProviderMayPointAtAnotherBaseUrl) {
  Result<Endpoint> e = ParseLlmSpec("llm:openai:gpt-4o-mini@https://proxy.example/openai/v1");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->model, "gpt-4o-mini");
  EXPECT_EQ(e->base_url, "https://proxy.example/openai/v1");
}

void ExpectBad(const std::string& spec, const std::string& fix) {
  Result<Endpoint> e = ParseLlmSpec(spec);
  ASSERT_FALSE(e.ok()) << spec;
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(e.status().message().find(spec), std::string::npos) << e.status().message();
  EXPECT_NE(e.status().message().find(fix), std::string::npos) << e.status().message();
}

TEST(ParseLlmSpec, BadSpecsSayWhatToWrite) {
  ExpectBad("openai:gpt-4o", "starts with 'llm:'");
  ExpectBad("llm:openai", "expected llm:PROVIDER:MODEL");
  ExpectBad("llm:gemini:pro", "use openai, anthropic or openai-compatible");
  ExpectBad("llm:openai:", "the MODEL is empty");
  ExpectBad("llm:openai:@https://api.example/v1", "the MODEL is empty");
  ExpectBad("llm:openai-compatible:llama3", "append @http://HOST:PORT/v1");
  ExpectBad("llm:openai-compatible:llama3@127.0.0.1:8000", "must start with http:// or https://");
  ExpectBad("llm:openai-compatible:llama3@http://", "has no host");
}

}  // namespace
}  // namespace kpilot::llm
