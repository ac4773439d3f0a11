#include <gtest/gtest.h>

#include "core/fs.h"
#include "llm/llm.h"

namespace kpilot::llm {
namespace {

class LoadLlmConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<TempDir> dir = TempDir::Create("kpilot-llm-config-");
    ASSERT_TRUE(dir.ok()) << dir.status().message();
    dir_ = std::make_unique<TempDir>(std::move(dir).value());
  }
  std::filesystem::path Write(const std::string& text) {
    std::filesystem::path file = dir_->path() / "llm.toml";
    EXPECT_TRUE(WriteFileAtomic(file, text).ok());
    return file;
  }
  std::unique_ptr<TempDir> dir_;
};

TEST_F(LoadLlmConfigTest, ReadsEveryKeyOverTheDefaults) {
  auto file = Write(R"(
connect_timeout_s = 5
read_timeout_s = 120.5
max_retries = 3
backoff_base_s = 0.5
backoff_max_s = 30
max_concurrency = 4
max_cost_usd = 10
max_tokens = 4096
temperature = 0.2
api_key_env = "MY_LLM_KEY"
code_roots = ["cutlass/include", "/opt/cute"]
prompts_dir = "prompts"
tool_calls_per_proposal = 12
reasks = 1
prompt_skills = 5
command_argv = ["codex", "exec", "--full-auto", "-"]
allowed_env = ["PATH", "HOME"]
command_timeout_s = 600

[prices."gpt-4o"]
input_per_mtok = 2.5
output_per_mtok = 10

[prices]
"claude-sonnet-4-5" = { input_per_mtok = 3, output_per_mtok = 15 }
)");
  Result<LlmConfig> c = LoadLlmConfig(file);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->connect_timeout_s, 5);
  EXPECT_EQ(c->read_timeout_s, 120.5);
  EXPECT_EQ(c->max_retries, 3);
  EXPECT_EQ(c->backoff_base_s, 0.5);
  EXPECT_EQ(c->backoff_max_s, 30);
  EXPECT_EQ(c->max_concurrency, 4);
  EXPECT_EQ(c->max_cost_usd, 10);
  EXPECT_EQ(c->max_tokens, 4096);
  EXPECT_EQ(c->temperature, 0.2);
  EXPECT_EQ(c->api_key_env, "MY_LLM_KEY");
  ASSERT_EQ(c->code_roots.size(), 2u);
  EXPECT_EQ(c->code_roots[0], (dir_->path() / "cutlass/include").string());  // relative to the file
  EXPECT_EQ(c->code_roots[1], "/opt/cute");
  EXPECT_EQ(c->prompts_dir, (dir_->path() / "prompts").string());
  EXPECT_EQ(c->tool_calls_per_proposal, 12);
  EXPECT_EQ(c->reasks, 1);
  EXPECT_EQ(c->prompt_skills, 5);
  EXPECT_EQ(c->command_argv, (std::vector<std::string>{"codex", "exec", "--full-auto", "-"}));
  EXPECT_EQ(c->allowed_env, (std::vector<std::string>{"PATH", "HOME"}));
  EXPECT_EQ(c->command_timeout_s, 600);
  ASSERT_EQ(c->prices.count("gpt-4o"), 1u);
  EXPECT_EQ(c->prices.at("gpt-4o").input_per_mtok, 2.5);
  EXPECT_EQ(c->prices.at("gpt-4o").output_per_mtok, 10);
  EXPECT_EQ(c->prices.at("claude-sonnet-4-5").output_per_mtok, 15);
}

TEST_F(LoadLlmConfigTest, KeysNotInTheFileKeepTheGivenDefaults) {
  LlmConfig defaults;
  defaults.max_retries = 9;
  defaults.prices["m"] = Prices{1, 2};
  Result<LlmConfig> c = LoadLlmConfig(Write("max_tokens = 100\n"), defaults);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->max_tokens, 100);
  EXPECT_EQ(c->max_retries, 9);
  EXPECT_EQ(c->prices.at("m").output_per_mtok, 2);
}

void ExpectError(const Result<LlmConfig>& c, const std::string& where, const std::string& fix) {
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(c.status().message().find(where), std::string::npos) << c.status().message();
  EXPECT_NE(c.status().message().find(fix), std::string::npos) << c.status().message();
}

TEST_F(LoadLlmConfigTest, AnUnknownKeyIsAnErrorWithItsLine) {
  auto file = Write("max_tokens = 100\nmax_retry = 3\n");
  ExpectError(LoadLlmConfig(file), file.string() + ":2: max_retry: unknown key", "max_retries");
}

TEST_F(LoadLlmConfigTest, AWrongTypeNamesFileLineKeyAndFix) {
  auto file = Write("\n\nmax_retries = \"5\"\n");
  ExpectError(LoadLlmConfig(file), file.string() + ":3: max_retries: expected an integer, got string \"5\"",
              "write e.g. max_retries =");
}

TEST_F(LoadLlmConfigTest, OutOfRangeValuesAreErrors) {
  auto file = Write("max_concurrency = 0\ntemperature = 3.5\nread_timeout_s = 0\n");
  Result<LlmConfig> c = LoadLlmConfig(file);
  ExpectError(c, ":1: max_concurrency: 0 is out of range", "use an integer >= 1");
  ExpectError(c, ":2: temperature: 3.5 is out of range", "use a value in [0, 2]");
  ExpectError(c, ":3: read_timeout_s: 0 is out of range", "use a value > 0");
}

TEST_F(LoadLlmConfigTest, BadPricesAreErrors) {
  auto file = Write("[prices.\"gpt-4o\"]\ninput_per_mtok = -1\noutput_per_mtk = 10\n");
  Result<LlmConfig> c = LoadLlmConfig(file);
  ExpectError(c, ":2: prices.\"gpt-4o\".input_per_mtok: expected a number >= 0", "US $ per million tokens");
  ExpectError(c, ":3: prices.\"gpt-4o\".output_per_mtk: unknown key", "use input_per_mtok and output_per_mtok");
}

TEST_F(LoadLlmConfigTest, ATomlSyntaxErrorNamesTheLine) {
  auto file = Write("max_tokens = 100\nmax_retries = = 3\n");
  ExpectError(LoadLlmConfig(file), file.string() + ":2:", "fix the TOML at column");
}

TEST_F(LoadLlmConfigTest, AMissingFileIsNotFound) {
  Result<LlmConfig> c = LoadLlmConfig(dir_->path() / "absent.toml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace kpilot::llm
