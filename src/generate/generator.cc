#include "generate/generator.h"

#include <cstdlib>
#include <iostream>

#include "generate/command_generator.h"
#include "generate/llm_generator.h"
#include "generate/params_generator.h"
#include "generate/folder_generator.h"
#include "generate/transcripts.h"
#include "toolchain/toolchain.h"

namespace kpilot {
namespace {

std::ostream& Notices(const GeneratorSetup& setup) { return setup.notices ? *setup.notices : std::cerr; }

}  // namespace

Result<llm::LlmConfig> LoadGeneratorConfig(const std::string& file) {
  if (!file.empty()) return llm::LoadLlmConfig(file);
  std::filesystem::path user;
  if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x)
    user = std::filesystem::path(x) / "kpilot" / "llm.toml";
  else if (const char* h = std::getenv("HOME"); h && *h)
    user = std::filesystem::path(h) / ".config" / "kpilot" / "llm.toml";
  if (!user.empty() && std::filesystem::exists(user)) return llm::LoadLlmConfig(user);
  return llm::LlmConfig{};
}

Result<std::unique_ptr<Generator>> MakeGenerator(const std::string& spec, const Task& task,
                                                 const GeneratorSetup& setup) {
  if (spec == "params") {
    if (task.params.empty()) {
      return Status::InvalidInput("generator \"params\": task " + task.name +
                                  " has no tunable params — declare [params] in task.toml "
                                  "(e.g. BLOCK = [128, 256, 512]) or use folder:DIR");
    }
    return MakeParamsGenerator(task);
  }
  if (spec.rfind("folder:", 0) == 0) return MakeFolderGenerator(spec, task);
  if (spec.rfind("llm:", 0) == 0) {
    auto endpoint = llm::ParseLlmSpec(spec);
    if (!endpoint.ok()) return endpoint.status();
    auto config = LoadGeneratorConfig(setup.llm_config);
    if (!config.ok()) return config.status();
    // Without configured trees, the CUTLASS/CuTe headers and examples of the venv's nvidia-cutlass
    // wheel (scripts/setup-venv.sh installs it) are what search_code and read_file may read.
    if (config->code_roots.empty()) config->code_roots = FindCutlassTrees(DefaultToolSearch());
    // --max-cost overrides the config's cap, in the client too.
    if (setup.max_cost_usd >= 0) config->max_cost_usd = setup.max_cost_usd;
    auto transcripts = std::make_shared<RunTranscripts>(setup.transcripts);
    auto client = llm::MakeChatClient(*endpoint, *config, llm::MakeCurlTransport(), transcripts);
    if (!client.ok()) return client.status();
    LlmGeneratorOptions o;
    o.config = *config;
    o.raw_metrics = setup.raw_metrics;
    o.max_cost_usd = config->max_cost_usd;
    o.include_dir = setup.include_dir;
    o.prompts_dir = setup.prompts_dir;
    o.transcripts = transcripts;
    std::shared_ptr<llm::ChatClient> shared = std::move(client).value();
    std::string disclosure = LlmDisclosure(shared->Describe(), o);
    auto p = MakeLlmGenerator(spec, task, shared, std::move(o));
    if (p.ok()) Notices(setup) << disclosure;
    return p;
  }
  if (spec.rfind("command:", 0) == 0) {
    auto config = LoadGeneratorConfig(setup.llm_config);
    if (!config.ok()) return config.status();
    auto options = CommandOptionsFromSpec(spec, *config);
    if (!options.ok()) return options.status();
    CommandGeneratorOptions o = std::move(options).value();
    o.raw_metrics = setup.raw_metrics;
    o.include_dir = setup.include_dir;
    o.prompts_dir = setup.prompts_dir;
    o.transcripts = std::make_shared<RunTranscripts>(setup.transcripts);
    o.sandbox_runner = setup.sandbox_runner;
    o.mcp_server = setup.kpilot;
    if (!setup.store_dir.empty()) o.agent_stores = setup.store_dir / "agent-sessions";
    if (!setup.store_dir.empty()) o.sandbox_hide.push_back(setup.store_dir.string());
    o.sandbox_hide.push_back(task.dir.string());
    std::string disclosure = o.argv.empty() ? "" : CommandDisclosure(o);
    auto p = MakeCommandGenerator(spec, task, SystemProcessRunner(), std::move(o));
    if (p.ok()) Notices(setup) << disclosure;
    return p;
  }
  return Status::InvalidInput("unknown generator \"" + spec +
                              "\" — choose params, folder:DIR, llm:PROVIDER:MODEL[@BASE_URL] or command:CMDLINE");
}

}  // namespace kpilot
