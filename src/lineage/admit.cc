// Optional admission of mined cards: each card is applied to a held-out task's start by the
// walk's generator and gated by the harness (correct, and faster with its paired CI above 1).
#include <fmt/format.h>

#include "core/fs.h"
#include "lineage/lineage.h"
#include "lineage/util.h"

namespace kpilot::lineage {
namespace {

using internal::Fenced;
using internal::Today;
using nlohmann::json;

std::string CardLanguage(const SkillCard& c) {
  const auto& langs = c.front.at("scope").at("languages");
  return langs.empty() ? "" : langs.front().get<std::string>();
}

std::string Put(Store* store, const std::string& text) {
  if (!store || text.empty()) return "";
  auto b = store->PutBlob(text);
  return b.ok() ? *b : "";
}

}  // namespace

AdmissionDecision JudgeAdmission(const Comparison& c, const std::string& start_name) {
  AdmissionDecision d;
  if (!c.passed) {
    d.reason = "the kernel with the card applied is " + c.verdict + ": " + c.summary;
    return d;
  }
  std::string measured =
      fmt::format("paired speedup {:.3f}x [{:.3f}, {:.3f}] (95% CI) over {}", c.speedup, c.ci.lo, c.ci.hi, start_name);
  d.admitted = c.ci.lo > 1.0;
  d.reason = d.admitted ? measured : measured + ": the CI is not above 1, so the card did not make the kernel faster";
  return d;
}

Result<std::vector<Admission>> AdmitCards(const std::vector<SkillCard>& cards, const Task& held_out,
                                          const std::string& start, LineageGenerator& generator,
                                          LineageMeasure& measure, const AdmissionOptions& o, Store* store,
                                          int64_t run_id, RunTranscripts* transcripts, LineageProgress& progress) {
  const std::string lang = held_out.backend == Backend::kCuda ? "cuda" : "cpp";
  for (const auto& c : cards)
    if (CardLanguage(c) != lang)
      return Status::InvalidInput("--admit-on: task " + held_out.name + " is a " + lang + " task, but card " + c.id +
                                  " is for " + CardLanguage(c) + "; admit cards on a task of their language");
  ProposalContext ctx;
  ctx.task = &held_out;
  PromptOptions po;
  po.abi_header = o.abi_header;
  SetCandidateCutlass(held_out, &po);
  PromptVars v = BuildPromptVars(held_out, ctx, po);
  v["start_name"] = o.start_name;
  v["start_source"] = Fenced(lang, start);
  v["card"] = "";
  std::string system_t, admit_t;
  for (auto [name, out] : {std::pair{"lineage/admit_system.md", &system_t}, std::pair{"lineage/admit.md", &admit_t}}) {
    auto text = LoadPromptTemplate(name, o.prompts_override, o.prompts_dir);
    if (!text.ok()) return text.status();
    auto probe = RenderPrompt(*text, v, name);  // an unknown placeholder fails here, before any request
    if (!probe.ok()) return probe.status();
    *out = *text;
  }
  auto system = RenderPrompt(system_t, v, "lineage/admit_system.md");
  if (!system.ok()) return system.status();

  std::vector<Admission> out;
  int n = 0;
  for (const auto& c : cards) {
    ++n;
    if (transcripts && run_id > 0) transcripts->SetContext(run_id, 1000 + n);
    progress.Event({{"event", "admit"}, {"card", c.id}, {"task", held_out.name}});
    Admission a;
    a.card_id = c.id;
    v["card"] = Fenced("markdown", RenderSkillCard(c));
    auto prompt = RenderPrompt(admit_t, v, "lineage/admit.md");
    if (!prompt.ok()) return prompt.status();
    auto reply = generator.Ask({"admit", *system, *prompt});
    if (!reply.ok()) return reply.status().WithContext("the generator's admit call for card " + c.id);
    ExtractedCandidate applied = ExtractCandidate(*reply);
    if (applied.source.empty()) {
      a.stage = "generate";
      a.reason = "the reply has no kernel: " + applied.problem;
    } else {
      a.source = applied.source;
      auto cmp = measure.Compare(applied.source, start, fmt::format("admit{}_{}", n, c.id));
      if (!cmp.ok()) return cmp.status();
      a.comparison = *cmp;
      AdmissionDecision d = JudgeAdmission(*cmp, o.start_name);
      a.admitted = d.admitted;
      a.stage = d.admitted ? "admitted" : "measure";
      a.reason = d.reason;
    }
    if (store && run_id > 0) {
      const Comparison& m = a.comparison;
      json payload = {{"card", a.card_id},
                      {"task", held_out.name},
                      {"start", o.start_name},
                      {"admitted", a.admitted},
                      {"stage", a.stage},
                      {"reason", a.reason},
                      {"comparison",
                       {{"passed", m.passed},
                        {"verdict", m.verdict},
                        {"summary", m.summary},
                        {"speedup", m.speedup},
                        {"ci", {m.ci.lo, m.ci.hi}}}},
                      {"evaluation", m.evaluation.is_null() ? "" : Put(store, m.evaluation.dump(2))},
                      {"source", Put(store, a.source)}};
      auto seq = store->AddRunEvent(run_id, "admission", payload.dump());
      if (!seq.ok()) return seq.status();
    }
    progress.Event({{"event", "admission"},
                    {"card", a.card_id},
                    {"admitted", a.admitted},
                    {"stage", a.stage},
                    {"reason", a.reason}});
    out.push_back(std::move(a));
  }
  return out;
}

void AddAdmissionEvidence(SkillCard& card, const Admission& a, const Provenance& pv, const std::string& start_name) {
  nlohmann::ordered_json entry = {
      {"provenance",
       {{"source", "kpilot lineage --admit-on"},
        {"task", pv.task},
        {"device", pv.device},
        {"platform", pv.platform},
        {"date", Today()},
        {"kpilot_version", pv.kpilot_version},
        {"run", pv.run_id},
        {"from", start_name}}},
      {"admitted", a.admitted},
      {"verdict", a.comparison.verdict.empty() ? std::string("no kernel") : a.comparison.verdict},
      {"reason", a.reason}};
  if (a.comparison.passed) {
    entry["paired_speedup"] = a.comparison.speedup;
    entry["ci"] = {a.comparison.ci.lo, a.comparison.ci.hi};
  }
  card.front["effect"]["measured"].push_back(entry);
}

}  // namespace kpilot::lineage
