#include "generate/llm_generator.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "core/fs.h"
#include "core/sha256.h"
#include "generate/code_tools.h"
#include "generate/prompt.h"
#include "generate/reply.h"

namespace kpilot {
namespace {

constexpr const char* kRepeat =
    "the code is the same as the parent's or an earlier draft's (only comments or layout differ) — make a real change";

struct Templates {
  std::string system, propose, reask;
};

class LlmGenerator : public Generator {
 public:
  LlmGenerator(std::string name, const Task& task, std::shared_ptr<llm::ChatClient> client, LlmGeneratorOptions options,
               Templates templates, std::string abi_header)
      : name_(std::move(name)),
        task_(task),
        client_(std::move(client)),
        options_(std::move(options)),
        templates_(std::move(templates)),
        abi_header_(std::move(abi_header)) {}

  std::string name() const override { return name_; }

  GeneratorSpend Spent() const override {
    llm::Usage u = client_->Spent();
    return {requests_.load(), u.input_tokens, u.output_tokens, u.cost_usd, u.priced};
  }

  std::future<Result<std::vector<Draft>>> Propose(const ProposalContext& ctx) override {
    if (options_.transcripts) options_.transcripts->SetContext(ctx.run_id, ctx.parent_node);
    Repeats(ctx.parent_source);
    auto c = std::make_shared<ProposalContext>(ctx);
    return std::async(std::launch::async, [this, c]() -> Result<std::vector<Draft>> {
      std::vector<std::future<Result<Draft>>> each;
      for (int i = 0; i < std::max(1, c->k); ++i)
        each.push_back(std::async(std::launch::async, [this, c, i] {
          RunTranscripts::Scope scope(c->run_id, c->parent_node);  // requests for other parents run beside it
          return OneDraft(*c, i);
        }));
      std::vector<Draft> drafts;
      Status first_error = Status::Ok();
      for (auto& f : each) {
        Result<Draft> d = f.get();
        if (d.ok())
          drafts.push_back(std::move(d).value());
        else if (first_error.ok())
          first_error = d.status();
      }
      // A client error (bad key, endpoint down after its retries) fails the proposal only when
      // no draft came back at all; otherwise the others go on.
      if (drafts.empty() && !first_error.ok()) return first_error;
      return drafts;
    });
  }

 private:
  // True when `source` is the same code as one already seen (the parent, an earlier draft);
  // remembers it otherwise.
  bool Repeats(const std::string& source) {
    std::lock_guard<std::mutex> lock(seen_mu_);
    return !seen_.insert(Sha256Hex(CodeFingerprint(source))).second;
  }

  bool OverCap() const { return options_.max_cost_usd > 0 && client_->Spent().cost_usd >= options_.max_cost_usd; }

  Result<Draft> OneDraft(const ProposalContext& ctx, int index) {
    PromptOptions po;
    po.raw_metrics = options_.raw_metrics;
    po.draft = index;
    po.abi_header = abi_header_;
    SetCandidateCutlass(task_, &po);
    po.max_skills = static_cast<size_t>(std::max(0, options_.config.prompt_skills));
    CodeToolsOptions to;
    for (const auto& r : options_.config.code_roots) to.roots.emplace_back(r);
    to.raw_metrics = options_.raw_metrics;
    CodeTools tools(to, &ctx);
    po.tools = options_.config.tool_calls_per_proposal > 0;
    PromptVars vars = BuildPromptVars(task_, ctx, po);
    auto system = RenderPrompt(templates_.system, vars, "system.md");
    if (!system.ok()) return system.status();
    auto user = RenderPrompt(templates_.propose, vars, "propose.md");
    if (!user.ok()) return user.status();

    llm::ChatRequest req;
    req.system = *system;
    req.messages.push_back({"user", *user, {}, ""});
    if (po.tools) req.tools = tools.Specs();
    int tool_calls_left = options_.config.tool_calls_per_proposal;
    int reasks_left = std::max(0, options_.config.reasks);
    std::vector<std::string> problems;
    std::optional<std::vector<std::string>> named_skills;  // from the accepted answer
    Draft d;
    d.source_name = fmt::format("llm_n{}_d{}{}", ctx.parent_node, index, CandidateExtension(task_));
    d.params = ctx.parent_params;
    std::string model = name_.substr(name_.find(':') + 1);
    auto fail = [&](const std::string& last) {
      if (!last.empty()) problems.push_back(last);
      std::string all;
      for (size_t i = 0; i < problems.size(); ++i) all += (i ? "; " : "") + problems[i];
      d.failure = all;
      d.summary = fmt::format("{}: no usable candidate after {} request(s)", model, problems.size());
      return d;
    };
    // Rejected answers (no code, several files, ABI): each uses one re-ask.
    auto reject = [&](const std::string& problem) -> bool {
      problems.push_back(problem);
      if (reasks_left-- <= 0) return false;
      vars["problem"] = problem;
      auto text = RenderPrompt(templates_.reask, vars, "reask.md");
      req.messages.push_back({"user", text.ok() ? *text : problem, {}, ""});
      return true;
    };
    for (;;) {
      if (OverCap()) return fail(fmt::format("spending cap reached (US${:.2f}, --max-cost)", options_.max_cost_usd));
      ++requests_;
      auto reply = client_->Complete(req);
      if (!reply.ok()) {
        // Another draft in flight may have reached the cap first: the client refuses then.
        if (OverCap()) return fail(fmt::format("spending cap reached (US${:.2f}, --max-cost)", options_.max_cost_usd));
        if (problems.empty()) return reply.status();
        return fail("request failed: " + reply.status().message());
      }
      req.messages.push_back({"assistant", reply->text, reply->tool_calls, ""});
      if (!reply->tool_calls.empty()) {
        std::string submitted, submit_problem, summary, finding;
        std::optional<std::vector<std::string>> applied;
        bool over_budget = false;
        for (const auto& call : reply->tool_calls) {
          std::string answer;
          if (call.name == "submit_candidate") {
            std::string src = call.arguments.value("source", "");
            std::string problem = src.empty() ? "submit_candidate had no source" : AbiProblem(src);
            if (problem.empty() && submitted.empty()) {
              submitted = src;
              summary = call.arguments.value("summary", "");
              finding = call.arguments.value("finding", "");
              if (auto a = call.arguments.find("applied_skills"); a != call.arguments.end() && a->is_array()) {
                std::string listed;
                for (const auto& id : *a)
                  if (id.is_string()) listed += id.get<std::string>() + "\n";
                applied = SkillIdList(listed);
              }
              answer = "received";
            } else {
              submit_problem = problem.empty() ? "several files submitted" : problem;
              answer = "error: " + submit_problem;
            }
          } else if (tool_calls_left <= 0) {
            over_budget = true;
            answer = "error: the tool-call budget of this draft is spent — answer now with the candidate file";
          } else {
            --tool_calls_left;
            answer = tools.Call(call.name, call.arguments);
          }
          req.messages.push_back({"tool", answer, {}, call.id});
        }
        if (!submitted.empty() && submit_problem.empty() && Repeats(submitted)) {
          submit_problem = kRepeat;
          submitted.clear();
        }
        if (!submitted.empty() && submit_problem.empty()) {
          d.source = submitted;
          d.summary = summary.empty() ? SummaryLine(reply->text) : summary;
          d.targeted_finding = finding;
          named_skills = applied ? applied : AppliedSkillsLine(reply->text);
          break;
        }
        if (!submit_problem.empty()) {
          if (!reject(submit_problem)) return fail("");
          continue;
        }
        if (over_budget) {
          // Calling tools past the budget counts as an answer without code.
          problems.push_back("kept calling tools after the budget of " +
                             std::to_string(options_.config.tool_calls_per_proposal) + " calls");
          if (reasks_left-- <= 0) return fail("");
        }
        continue;
      }
      ExtractedCandidate got = ExtractCandidate(reply->text);
      if (got.problem.empty() && Repeats(got.source)) got.problem = kRepeat;
      if (got.problem.empty()) {
        d.source = got.source;
        d.summary = got.summary;
        d.targeted_finding = got.finding;
        named_skills = AppliedSkillsLine(reply->text);
        break;
      }
      if (!reject(got.problem)) return fail("");
    }
    // Only a finding the parent has counts as targeted.
    bool known = std::any_of(ctx.findings.begin(), ctx.findings.end(),
                             [&](const Finding& f) { return f.id == d.targeted_finding; });
    if (!known) d.targeted_finding.clear();
    // The accepted answer's "Applied skills:" line, else the latest earlier reply's (a re-asked
    // model often repeats only the code); only offered cards are kept.
    for (auto m = req.messages.rbegin(); !named_skills && m != req.messages.rend(); ++m)
      if (m->role == "assistant") named_skills = AppliedSkillsLine(m->content);
    AppliedSkills applied =
        FilterAppliedSkills(named_skills.value_or(std::vector<std::string>{}), OfferedSkillIds(ctx));
    d.skills_applied = applied.kept;
    d.summary = model + ": " + (d.summary.empty() ? "rewrite" : d.summary);
    if (!problems.empty())
      d.summary += fmt::format(" (after {} re-ask{}: {})", problems.size(), problems.size() > 1 ? "s" : "",
                               problems.back().substr(0, 120));
    d.summary += DroppedSkillsNote(applied.dropped);
    return d;
  }

  std::string name_;
  const Task& task_;
  std::shared_ptr<llm::ChatClient> client_;
  LlmGeneratorOptions options_;
  Templates templates_;
  std::string abi_header_;
  std::atomic<int64_t> requests_{0};
  std::mutex seen_mu_;
  std::set<std::string> seen_;  // fingerprints of the parents and drafts so far
};

}  // namespace

std::string LlmDisclosure(const std::string& describe, const LlmGeneratorOptions& o) {
  std::string s = "kpilot: the llm generator sends to " + describe +
                  ": the task (task.toml, its description), the reference source, the candidate ABI header, "
                  "each parent candidate's source with its verdict, profile findings and the run's search memory";
  if (o.raw_metrics) s += ", and raw metrics (--raw-metrics)";
  s += "; the skill cards retrieved for each parent";
  if (!o.config.code_roots.empty() && o.config.tool_calls_per_proposal > 0) {
    s += "; through its tools, whatever the model asks to read from";
    for (const auto& r : o.config.code_roots) s += " " + r;
  }
  s += fmt::format(". Spending cap: US${:.2f} (--max-cost).\n", o.max_cost_usd);
  return s;
}

Result<std::unique_ptr<Generator>> MakeLlmGenerator(const std::string& name, const Task& task,
                                                    std::shared_ptr<llm::ChatClient> client,
                                                    LlmGeneratorOptions options) {
  Templates t;
  std::filesystem::path override_dir = options.config.prompts_dir;
  for (auto [file, dst] : {std::pair{"system.md", &t.system}, {"propose.md", &t.propose}, {"reask.md", &t.reask}}) {
    auto text = LoadPromptTemplate(file, override_dir, options.prompts_dir);
    if (!text.ok()) return text.status();
    *dst = *text;
  }
  // Check every placeholder now, before any request.
  ProposalContext probe;
  probe.task = &task;
  PromptVars vars = BuildPromptVars(task, probe, {});
  vars["problem"] = "";
  for (auto [file, text] : {std::pair{"system.md", &t.system}, {"propose.md", &t.propose}, {"reask.md", &t.reask}}) {
    auto r =
        RenderPrompt(*text, vars,
                     (override_dir.empty() || !std::filesystem::exists(override_dir / file) ? options.prompts_dir / file
                                                                                            : override_dir / file)
                         .string());
    if (!r.ok()) return r.status();
  }
  auto abi = ReadFile(options.include_dir / "kpilot" / "kernel.h");
  if (!abi.ok()) return abi.status().WithContext("the candidate ABI header for the llm generator");
  return std::unique_ptr<Generator>(
      new LlmGenerator(name, task, std::move(client), std::move(options), std::move(t), *abi));
}

}  // namespace kpilot
