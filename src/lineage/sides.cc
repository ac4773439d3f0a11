// The lineage walk's side effects: the generator over the LLM client or an agent command, and the
// measurement over the harness Evaluator.
#include <fmt/format.h>

#include "core/fs.h"
#include "lineage/lineage.h"

namespace kpilot::lineage {
namespace {

class LlmGenerator : public LineageGenerator {
 public:
  explicit LlmGenerator(std::shared_ptr<llm::ChatClient> client) : client_(std::move(client)) {}

  Result<std::string> Ask(const GeneratorRequest& r) override {
    llm::ChatRequest req;
    req.system = r.system;
    req.messages.push_back({"user", r.prompt, {}, ""});
    auto reply = client_->Complete(req);
    if (!reply.ok()) return reply.status();
    return reply->text;
  }
  std::string Describe() const override { return client_->Describe(); }
  llm::Usage Spent() const override { return client_->Spent(); }

 private:
  std::shared_ptr<llm::ChatClient> client_;
};

class CommandGenerator : public LineageGenerator {
 public:
  CommandGenerator(ProcessRunner& processes, CommandGeneratorOptions options)
      : processes_(processes), options_(std::move(options)) {}

  Result<std::string> Ask(const GeneratorRequest& r) override {
    auto dir = TempDir::Create("kpilot-lineage-agent-");
    if (!dir.ok()) return dir.status();
    if (options_.keep_workspaces) dir->Keep();
    std::string instructions =
        r.system + "\n\n" + r.prompt +
        "\n\nWrite your whole reply (the text with its fenced blocks) to REPLY.md in this folder.\n";
    KPILOT_RETURN_IF_ERROR(WriteFileAtomic(dir->path() / "INSTRUCTIONS.md", instructions));
    auto run = RunAgentCommand(processes_, options_, dir->path(), instructions, "REPLY.md");
    if (!run.ok()) return run.status();
    if (run->timed_out)
      return Status::Timeout(fmt::format("the agent ({}) timed out after {:.0f} s on a {} request",
                                         JoinCommandLine(options_.argv), options_.timeout_s, r.purpose));
    auto reply = ReadFile(dir->path() / "REPLY.md");
    return reply.ok() ? *reply : run->out;
  }
  std::string Describe() const override { return "the agent command " + JoinCommandLine(options_.argv); }

 private:
  ProcessRunner& processes_;
  CommandGeneratorOptions options_;
};

class HarnessMeasure : public LineageMeasure {
 public:
  HarnessMeasure(Evaluator& evaluator, const Task& task, EvalOptions options, std::string device, std::string platform)
      : evaluator_(evaluator),
        task_(task),
        options_(std::move(options)),
        device_(std::move(device)),
        platform_(std::move(platform)) {}

  Result<Comparison> Compare(const std::string& candidate, const std::string& baseline,
                             const std::string& label) override {
    auto dir = TempDir::Create("kpilot-lineage-");
    if (!dir.ok()) return dir.status();
    std::string ext = CandidateExtension(task_);
    std::filesystem::path cand = dir->path() / (label + ext);
    KPILOT_RETURN_IF_ERROR(WriteFileAtomic(cand, candidate));
    EvalOptions opt = options_;
    if (!baseline.empty()) {
      std::filesystem::path base = dir->path() / (label + "_baseline" + ext);
      KPILOT_RETURN_IF_ERROR(WriteFileAtomic(base, baseline));
      opt.baseline_source = base;
      opt.baseline_name = "pre-removal";
    }
    auto e = evaluator_.Evaluate(task_, cand, opt);
    if (!e.ok()) return e.status();
    Comparison c;
    c.passed = e->verdict.passed();
    c.verdict = std::string(VerdictName(e->verdict.kind));
    c.summary = e->verdict.summary;
    c.speedup = e->speedup_geomean;
    c.ci = e->speedup_geomean_ci;
    c.evaluation = ToJson(*e);
    return c;
  }
  std::string Device() const override { return device_; }
  std::string Platform() const override { return platform_; }

 private:
  Evaluator& evaluator_;
  const Task& task_;
  EvalOptions options_;
  std::string device_, platform_;
};

}  // namespace

std::unique_ptr<LineageGenerator> MakeLlmLineageGenerator(std::shared_ptr<llm::ChatClient> client) {
  return std::make_unique<LlmGenerator>(std::move(client));
}

std::unique_ptr<LineageGenerator> MakeCommandLineageGenerator(ProcessRunner& processes,
                                                              CommandGeneratorOptions options) {
  return std::make_unique<CommandGenerator>(processes, std::move(options));
}

Result<std::unique_ptr<LineageGenerator>> MakeLineageGenerator(const std::string& spec, const GeneratorSetup& setup,
                                                               std::shared_ptr<RunTranscripts> transcripts,
                                                               std::filesystem::path* prompts_override) {
  auto config = LoadGeneratorConfig(setup.llm_config);
  if (!config.ok()) return config.status();
  *prompts_override = config->prompts_dir;
  if (spec.rfind("llm:", 0) == 0) {
    auto endpoint = llm::ParseLlmSpec(spec);
    if (!endpoint.ok()) return endpoint.status();
    if (setup.max_cost_usd >= 0) config->max_cost_usd = setup.max_cost_usd;
    auto client = llm::MakeChatClient(*endpoint, *config, llm::MakeCurlTransport(), std::move(transcripts));
    if (!client.ok()) return client.status();
    return MakeLlmLineageGenerator(std::shared_ptr<llm::ChatClient>(std::move(client).value()));
  }
  if (spec.rfind("command:", 0) == 0) {
    auto o = CommandOptionsFromSpec(spec, *config);
    if (!o.ok()) return o.status();
    if (o->argv.empty())
      return Status::InvalidInput("--generator " + spec +
                                  ": no command — give one or set command_argv in the LLM config");
    if (FindOnPath(o->argv.front()).empty())
      return Status::NotFound("--generator " + spec + ": " + o->argv.front() +
                              " is not on PATH (nor an executable path)");
    o->transcripts = std::move(transcripts);
    o->sandbox_runner = setup.sandbox_runner;
    o->sandbox_hide = {setup.store_dir.string()};
    return MakeCommandLineageGenerator(SystemProcessRunner(), std::move(o).value());
  }
  return Status::InvalidInput(
      "--generator " + spec +
      ": kpilot lineage needs a generator that writes code: llm:PROVIDER:MODEL[@BASE_URL] or command:CMDLINE");
}

std::unique_ptr<LineageMeasure> MakeHarnessMeasure(Evaluator& evaluator, const Task& task, EvalOptions options,
                                                   std::string device, std::string platform) {
  return std::make_unique<HarnessMeasure>(evaluator, task, std::move(options), std::move(device), std::move(platform));
}

}  // namespace kpilot::lineage
