// The backward walk: propose a removal, gate it, record every attempt as it happens.
#include <chrono>
#include <cmath>
#include <ctime>

#include <fmt/format.h>

#include "core/fs.h"
#include "core/sha256.h"
#include "lineage/lineage.h"
#include "lineage/util.h"

namespace kpilot::lineage {
namespace {

using internal::Fenced;
using internal::Today;
using nlohmann::json;

std::string List(const FeatureSet& s) {
  std::string out;
  for (const auto& f : s) out += (out.empty() ? "" : ", ") + f;
  return out.empty() ? "(none)" : out;
}

std::string Numbered(const std::string& text) {
  std::string out;
  int n = 1;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    out += fmt::format("{:4}| {}\n", n++, text.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

json ComparisonJson(const Comparison& c) {
  return {{"passed", c.passed},
          {"verdict", c.verdict},
          {"summary", c.summary},
          {"speedup", c.speedup},
          {"ci", {c.ci.lo, c.ci.hi}}};
}

json DeclarationJson(const Proposal& p) {
  json j = {{"naive", p.naive},
            {"mechanism", p.mechanism},
            {"feature", p.feature},
            {"locus", p.locus},
            {"summary", p.summary},
            {"before_features", p.before_features},
            {"after_features", p.after_features}};
  if (p.reference_features) j["reference_features"] = *p.reference_features;
  return j;
}

// The prompts, loaded and checked once before anything is sent.
struct Templates {
  std::string system, propose, cite, rebuild;
};

Result<Templates> LoadTemplates(const LineageOptions& o, const PromptVars& probe) {
  Templates t;
  std::pair<const char*, std::string*> files[] = {{"lineage/system.md", &t.system},
                                                  {"lineage/propose.md", &t.propose},
                                                  {"lineage/cite.md", &t.cite},
                                                  {"lineage/rebuild.md", &t.rebuild}};
  for (auto& [name, out] : files) {
    auto text = LoadPromptTemplate(name, o.prompts_override, o.prompts_dir);
    if (!text.ok()) return text.status();
    auto r = RenderPrompt(*text, probe, name);  // an unknown placeholder fails here, before any request
    if (!r.ok()) return r.status();
    *out = *text;
  }
  return t;
}

}  // namespace

LineageWalk::LineageWalk(const Task& task, const FeatureSet& vocabulary, LineageGenerator& generator,
                         LineageMeasure& measure, Store* store, RunTranscripts* transcripts, LineageProgress& progress)
    : task_(task),
      vocabulary_(vocabulary),
      generator_(generator),
      measure_(measure),
      store_(store),
      transcripts_(transcripts),
      progress_(progress) {}

namespace {

// One walk's state; LineageWalk::Run drives it.
class Walk {
 public:
  Walk(const Task& task, const FeatureSet& vocabulary, LineageGenerator& generator, LineageMeasure& measure,
       Store* store, RunTranscripts* transcripts, LineageProgress& progress, const LineageOptions& o)
      : task_(task),
        vocabulary_(vocabulary),
        gen_(generator),
        measure_(measure),
        store_(store),
        transcripts_(transcripts),
        progress_(progress),
        o_(o) {}

  Result<LineageResult> Run(const std::string& expert) {
    PromptVars base = BaseVars();
    auto templates = LoadTemplates(o_, AllVars(base));
    if (!templates.ok()) return templates.status();
    t_ = *templates;
    lang_ = task_.backend == Backend::kCuda ? "cuda" : "cpp";
    KPILOT_RETURN_IF_ERROR(StartRun());
    Event({{"event", "start"}, {"task", task_.name}, {"expert", o_.expert_name}, {"generator", gen_.Describe()}});
    auto e = measure_.Compare(expert, "", "expert");
    if (!e.ok()) return Fail(e.status());
    res_.expert = *e;
    KPILOT_RETURN_IF_ERROR(Record("expert", {{"comparison", ComparisonJson(*e)}, {"evaluation", Blob(e->evaluation)}}));
    Event({{"event", "expert"}, {"verdict", e->verdict}, {"speedup", e->speedup}, {"summary", e->summary}});
    if (!e->passed)
      return Fail(Status::InvalidInput("the expert " + o_.expert_name + " does not pass the harness (" + e->verdict +
                                       ": " + e->summary + "); kpilot lineage starts from a correct kernel"));
    current_ = expert;
    current_name_ = o_.expert_name;
    KPILOT_RETURN_IF_ERROR(Node(0, -1, expert, o_.expert_name, "expert", e->speedup));
    auto ref = ReadFile(task_.reference.path);
    if (ref.ok()) reference_fp_ = CodeFingerprint(*ref);

    while (true) {
      if (static_cast<int>(res_.steps.size()) >= o_.max_steps) {
        Stop("max-steps", fmt::format("{} accepted steps (--max-steps)", res_.steps.size()));
        break;
      }
      if (consecutive_ >= o_.max_rejections) {
        Stop("max-rejections", fmt::format("{} attempts in a row rejected (--max-rejections)", consecutive_));
        break;
      }
      auto done = Attempt(base);
      if (!done.ok()) return Fail(done.status());
      if (*done) break;
    }
    res_.naive_features = features_.value_or(FeatureSet{});
    res_.spent = gen_.Spent();
    if (store_ && res_.run_id > 0) {
      RunRecord r;
      r.id = res_.run_id;
      r.status = "finished";
      r.stop_reason = res_.stop_reason;
      r.best_speedup = res_.expert.speedup;
      r.best_node = 0;
      KPILOT_RETURN_IF_ERROR(store_->UpdateRun(r));
    }
    return res_;
  }

 private:
  PromptVars BaseVars() const {
    ProposalContext ctx;
    ctx.task = &task_;
    PromptOptions po;
    po.abi_header = o_.abi_header;
    SetCandidateCutlass(task_, &po);
    PromptVars v = BuildPromptVars(task_, ctx, po);
    std::string vocab;
    for (const auto& f : vocabulary_) vocab += "`" + f + "` ";
    v["vocabulary"] = vocab;
    return v;
  }

  // Every placeholder the lineage templates may use, with the task's values and empty state.
  static PromptVars AllVars(PromptVars v) {
    for (const char* k : {"current_name", "current_source", "current_features", "steps", "rejections", "feature",
                          "mechanism", "locus", "before_name", "after_name", "before_numbered", "after_numbered",
                          "simple_name", "simple_source", "draft_card"})
      v.emplace(k, "");
    return v;
  }

  // One attempt; true when the walk stops.
  Result<bool> Attempt(const PromptVars& base) {
    ++attempt_no_;
    if (transcripts_ && res_.run_id > 0) transcripts_->SetContext(res_.run_id, attempt_no_);
    lineage::Attempt a;
    a.step = static_cast<int>(res_.steps.size()) + 1;
    a.attempt = attempt_no_;
    Event({{"event", "propose"}, {"step", a.step}, {"attempt", a.attempt}});
    PromptVars v = AllVars(base);
    v["current_name"] = current_name_;
    v["current_source"] = Fenced(lang_, current_);
    v["current_features"] = features_
                                ? "Its features (the state after the last accepted step): " + List(*features_) + "\n"
                                : "Its features are not known yet: declare them in before_features.\n";
    std::string steps;
    for (const auto& s : res_.steps)
      steps += fmt::format("{}. removed `{}` ({}) at {}\n", s.index, s.proposal.feature, s.proposal.mechanism,
                           s.proposal.locus);
    v["steps"] = steps.empty() ? "" : "## Removed so far (accepted steps)\n\n" + steps + "\n";
    std::string rej;
    for (const auto& r : rejections_) rej += "- " + r + "\n";
    v["rejections"] = rej.empty() ? "" : "## Rejected attempts on this kernel — do not repeat them\n\n" + rej + "\n";
    auto reply = Ask("propose", t_.propose, v);
    if (!reply.ok()) return reply.status();
    auto p = ParseProposal(*reply);
    if (!p.ok()) return Reject(a, "parse", "unusable reply: " + p.status().message());
    a.proposal = *p;
    if (p->naive) {
      Stop("naive", "the generator says the kernel is the operator's naive form" +
                        (p->summary.empty() ? std::string() : " (" + p->summary + ")"));
      a.stage = "naive";
      KPILOT_RETURN_IF_ERROR(RecordAttempt(a, ""));
      res_.attempts.push_back(a);
      return true;
    }
    if (p->reference_features) reference_features_ = p->reference_features;
    std::string why = CheckDeclaration(*p, vocabulary_, features_, o_.known_findings);
    if (!why.empty()) return Reject(a, "declaration", why);
    if (CodeFingerprint(p->source) == CodeFingerprint(current_))
      return Reject(a, "code",
                    "nothing removed: the code is the same as the current kernel (comments and layout aside)");
    std::string after_name = fmt::format("step{}_without_{}{}", a.step, p->feature, CandidateExtension(task_));
    auto simplified = measure_.Compare(p->source, current_, fmt::format("a{}_simplified", a.attempt));
    if (!simplified.ok()) return simplified.status();
    a.simplified = *simplified;
    if (!simplified->passed)
      return Reject(a, "measure", "the simplified kernel is " + simplified->verdict + ": " + simplified->summary);
    Event({{"event", "simplified"}, {"attempt", a.attempt}, {"feature", p->feature}, {"speedup", simplified->speedup}});

    v["feature"] = p->feature;
    v["mechanism"] = p->mechanism;
    v["locus"] = p->locus;
    v["before_name"] = current_name_;
    v["after_name"] = after_name;
    v["before_numbered"] = Fenced("text", Numbered(current_));
    v["after_numbered"] = Fenced("text", Numbered(p->source));
    auto cite_reply = Ask("cite", t_.cite, v);
    if (!cite_reply.ok()) return cite_reply.status();
    auto cites = ParseCitations(*cite_reply);
    if (!cites.ok()) return Reject(a, "cite", "the confirming call's reply is unusable: " + cites.status().message());
    why = CheckCitations(*cites, p->feature, current_, p->source);
    if (!why.empty()) return Reject(a, "cite", why);

    Step step = MakeStep(a.step, *p, *simplified, after_name);
    auto draft = CardsFromSteps({step}, Prov());
    v["simple_name"] = after_name;
    v["simple_source"] = Fenced(lang_, p->source);
    v["draft_card"] = Fenced("markdown", RenderSkillCard(draft.front()));
    auto rebuild_reply = Ask("rebuild", t_.rebuild, v);
    if (!rebuild_reply.ok()) return rebuild_reply.status();
    ExtractedCandidate rebuilt = ExtractCandidate(*rebuild_reply);
    if (rebuilt.source.empty()) return Reject(a, "round-trip", "the rebuild gave no kernel: " + rebuilt.problem);
    a.rebuilt_source = rebuilt.source;
    std::vector<double> ratios;
    for (int t = 0; t < std::max(1, o_.trials); ++t) {
      auto c = measure_.Compare(rebuilt.source, current_, fmt::format("a{}_rebuilt_t{}", a.attempt, t + 1));
      if (!c.ok()) return c.status();
      a.round_trip.push_back(*c);
      if (!c->passed) return Reject(a, "round-trip", "the rebuilt kernel is " + c->verdict + ": " + c->summary);
      ratios.push_back(c->speedup);
    }
    RoundTripDecision rt = JudgeRoundTrip(ratios, o_.round_trip_min);
    if (!rt.passed) return Reject(a, "round-trip", rt.reason);

    a.stage = "accepted";
    a.accepted = true;
    step.round_trip = ratios;
    KPILOT_RETURN_IF_ERROR(RecordAttempt(a, ""));
    res_.attempts.push_back(a);
    if (res_.steps.empty()) res_.expert_features = p->before_features;
    res_.steps.push_back(step);
    current_ = p->source;
    current_name_ = after_name;
    features_ = p->after_features;
    rejections_.clear();
    consecutive_ = 0;
    KPILOT_RETURN_IF_ERROR(Node(step.index, step.index - 1, current_, after_name, "without " + p->feature, 0));
    Event({{"event", "accepted"},
           {"step", step.index},
           {"feature", p->feature},
           {"effect", step.effect},
           {"ci", {step.effect_ci.lo, step.effect_ci.hi}},
           {"round_trip", ratios}});
    if (!reference_fp_.empty() && CodeFingerprint(current_) == reference_fp_) {
      Stop("naive", "the kernel is now the task's reference (comments and layout aside)");
      return true;
    }
    if (reference_features_ &&
        std::includes(reference_features_->begin(), reference_features_->end(), features_->begin(), features_->end())) {
      Stop("naive",
           "the kernel's features {" + List(*features_) + "} are the reference's {" + List(*reference_features_) + "}");
      return true;
    }
    return false;
  }

  Step MakeStep(int index, const Proposal& p, const Comparison& simplified, const std::string& after_name) {
    Step s;
    s.index = index;
    s.proposal = p;
    s.before_source = current_;
    s.before_name = current_name_;
    s.after_name = after_name;
    // The simplified kernel was timed as the candidate against the pre-removal one: its speedup is
    // before/after time; the mechanism's effect is the inverse (its CI bounds swap).
    s.effect = simplified.speedup > 0 ? 1 / simplified.speedup : 0;
    s.effect_ci = {simplified.ci.hi > 0 ? 1 / simplified.ci.hi : 0, simplified.ci.lo > 0 ? 1 / simplified.ci.lo : 0};
    s.date = Today();
    return s;
  }

  Provenance Prov() const {
    Provenance pv;
    pv.task = task_.name;
    pv.device = measure_.Device();
    pv.platform = measure_.Platform();
    pv.kpilot_version = o_.kpilot_version;
    pv.run_id = res_.run_id;
    pv.language = lang_;
    return pv;
  }

  Result<std::string> Ask(const std::string& purpose, const std::string& tmpl, const PromptVars& v) {
    auto system = RenderPrompt(t_.system, v, "lineage/system.md");
    if (!system.ok()) return system.status();
    auto prompt = RenderPrompt(tmpl, v, "lineage/" + purpose + ".md");
    if (!prompt.ok()) return prompt.status();
    auto reply = gen_.Ask({purpose, *system, *prompt});
    if (!reply.ok()) return reply.status().WithContext("the generator's " + purpose + " call");
    return reply;
  }

  Result<bool> Reject(lineage::Attempt& a, const std::string& stage, const std::string& reason) {
    a.stage = stage;
    a.reason = reason;
    ++consecutive_;
    std::string what = a.proposal.feature.empty() ? "" : "removing " + a.proposal.feature + ": ";
    rejections_.push_back(fmt::format("attempt {} ({}rejected at {}): {}", a.attempt, what, stage, reason));
    KPILOT_RETURN_IF_ERROR(RecordAttempt(a, reason));
    res_.attempts.push_back(a);
    Event({{"event", "rejected"},
           {"attempt", a.attempt},
           {"stage", stage},
           {"reason", reason},
           {"consecutive", consecutive_}});
    return false;
  }

  void Stop(const std::string& reason, const std::string& detail) {
    res_.stop_reason = reason;
    res_.stop_detail = detail;
    Event({{"event", "stop"}, {"reason", reason}, {"detail", detail}, {"steps", res_.steps.size()}});
    if (store_ && res_.run_id > 0)
      (void)store_->AddRunEvent(res_.run_id, "stop", json{{"reason", reason}, {"detail", detail}}.dump());
  }

  Status StartRun() {
    if (!store_) return Status::Ok();
    RunRecord r;
    r.task_name = task_.name;
    r.task_dir = task_.dir.string();
    r.config_json = json{{"command", "lineage"},
                         {"expert", o_.expert_name},
                         {"generator", o_.generator_spec},
                         {"max_steps", o_.max_steps},
                         {"max_rejections", o_.max_rejections},
                         {"trials", o_.trials},
                         {"round_trip_min", o_.round_trip_min},
                         {"kpilot_version", o_.kpilot_version}}
                        .dump();
    r.status = "running";
    auto id = store_->CreateRun(r);
    if (!id.ok()) return id.status();
    res_.run_id = *id;
    return Status::Ok();
  }

  Status Fail(Status s) {
    if (store_ && res_.run_id > 0) {
      (void)store_->AddRunEvent(res_.run_id, "error", json{{"message", s.message()}}.dump());
      RunRecord r;
      r.id = res_.run_id;
      r.status = "failed";
      r.stop_reason = "error";
      (void)store_->UpdateRun(r);
    }
    return s;
  }

  std::string Blob(const json& j) { return j.is_null() || !store_ ? "" : Put(j.dump(2)); }
  std::string Put(const std::string& text) {
    if (!store_ || text.empty()) return "";
    auto b = store_->PutBlob(text);
    return b.ok() ? *b : "";
  }

  Status Record(const std::string& kind, const json& payload) {
    if (!store_ || res_.run_id <= 0) return Status::Ok();
    auto seq = store_->AddRunEvent(res_.run_id, kind, payload.dump());
    return seq.ok() ? Status::Ok() : seq.status();
  }

  Status RecordAttempt(const lineage::Attempt& a, const std::string& reason) {
    if (!store_) return Status::Ok();
    json rt = json::array();
    for (const auto& c : a.round_trip)
      rt.push_back({{"comparison", ComparisonJson(c)}, {"evaluation", Blob(c.evaluation)}});
    json payload = {
        {"step", a.step},
        {"attempt", a.attempt},
        {"stage", a.stage},
        {"accepted", a.accepted},
        {"reason", reason},
        {"declaration", DeclarationJson(a.proposal)},
        {"source", Put(a.proposal.source)},
        {"simplified", {{"comparison", ComparisonJson(a.simplified)}, {"evaluation", Blob(a.simplified.evaluation)}}},
        {"rebuilt_source", Put(a.rebuilt_source)},
        {"round_trip", rt}};
    return Record(a.accepted ? "accept" : (a.stage == "naive" ? "naive" : "reject"), payload);
  }

  Status Node(int64_t node, int64_t parent, const std::string& source, const std::string& name,
              const std::string& summary, double speedup) {
    if (!store_ || res_.run_id <= 0) return Status::Ok();
    RunNodeRecord n;
    n.run_id = res_.run_id;
    n.node = node;
    n.parent = parent;
    n.source_name = name;
    n.source_blob = Put(source);
    n.params_json = "{}";
    n.summary = summary;
    n.verdict = "passed";
    n.speedup = speedup;
    return store_->AddRunNode(n);
  }

  void Event(json e) { progress_.Event(e); }

  const Task& task_;
  const FeatureSet& vocabulary_;
  LineageGenerator& gen_;
  LineageMeasure& measure_;
  Store* store_;
  RunTranscripts* transcripts_;
  LineageProgress& progress_;
  const LineageOptions& o_;
  Templates t_;
  std::string lang_;
  LineageResult res_;
  std::string current_, current_name_, reference_fp_;
  std::optional<FeatureSet> features_, reference_features_;
  std::vector<std::string> rejections_;
  int consecutive_ = 0;
  int attempt_no_ = 0;
};

}  // namespace

Result<LineageResult> LineageWalk::Run(const std::string& expert_source, const LineageOptions& options) {
  Walk w(task_, vocabulary_, generator_, measure_, store_, transcripts_, progress_, options);
  return w.Run(expert_source);
}

}  // namespace kpilot::lineage
