// The walk with a test-double generator and measurement: accepted steps, rejection feedback in
// the next prompt, limits and stop reasons, the store record, and cards from the accepted steps;
// then bench/lineage/row_softmax's scripted replies through the real LLM client and the local
// server, gated with a measurement that passes everything (the H200 run times them for real).
#include <gtest/gtest.h>

#include <deque>
#include <map>

#include <fmt/format.h>

#include "card_check.h"
#include "core/fs.h"
#include "fake_llm_server.h"
#include "lineage/lineage.h"
#include "generate/drafting.h"
#include "task/loader.h"
#include "test_paths.h"

namespace kpilot::lineage {
namespace {

using nlohmann::json;

// A kernel whose mechanisms are one line each ("  use_register_tile();"), so citations and
// fingerprints follow the features.
std::string Kernel(const std::vector<std::string>& features, const std::string& tag = "") {
  std::string s =
      "#include <kpilot/kernel.h>\nKPILOT_EXPORT int kpilot_launch(const kpilot_tensor* in, int ni, "
      "const kpilot_tensor* out, int no, const kpilot_scalar* s, int ns, void* st) {\n  int x = 0;\n";
  for (const auto& f : features) {
    std::string name = f;
    for (auto& c : name)
      if (c == '-') c = '_';
    s += "  use_" + name + "(&x);\n";
  }
  return s + "  return x" + tag + ";\n}\n";
}

std::string Line(const std::string& feature) {
  std::string name = feature;
  for (auto& c : name)
    if (c == '-') c = '_';
  return "  use_" + name + "(&x);";
}

int LineNo(const std::string& text, const std::string& line) {
  for (int n = 1;; ++n) {
    auto l = LineOf(text, n);
    if (!l) return 0;
    if (*l == line) return n;
  }
}

std::string Fence(const std::string& lang, const std::string& body) {
  return "```" + lang + "\n" + body + (body.ends_with('\n') ? "" : "\n") + "```\n";
}

json Card(const std::string& id) {
  return {{"id", id},
          {"description", "What " + id + " does."},
          {"intent", "Add " + id + "."},
          {"preconditions", {{{"what", "a condition"}, {"why", "it fails without it"}}}},
          {"expected_effect", "faster"},
          {"risks", {"a risk"}},
          {"triggers", {{"findings", json::array()}, {"classes", {"compute-bound"}}}},
          {"recipe", {"Do it."}}};
}

std::string Propose(const std::string& feature, const std::vector<std::string>& before,
                    const std::vector<std::string>& after, const std::string& code, json card = nullptr) {
  json j = {{"mechanism", "the " + feature}, {"feature", feature},
            {"locus", "kpilot_launch"},      {"before_features", before},
            {"after_features", after},       {"card", card.is_null() ? Card(feature) : card}};
  return "Summary: remove " + feature + "\n" + Fence("json", j.dump()) + Fence("cpp", code);
}

std::string Cite(const std::string& feature, const std::string& before, const std::string& after) {
  json j = {{"removes", {feature}},
            {"citations", {{{"side", "before"}, {"line", LineNo(before, Line(feature))}, {"text", Line(feature)}}}},
            {"explanation", "gone"}};
  (void)after;
  return Fence("json", j.dump());
}

std::string Rebuild(const std::string& code) { return "Summary: rebuilt\n" + Fence("cpp", code); }

class ScriptedGenerator : public LineageGenerator {
 public:
  std::deque<std::string> replies;
  std::vector<GeneratorRequest> requests;
  Result<std::string> Ask(const GeneratorRequest& r) override {
    requests.push_back(r);
    if (replies.empty()) return Status::Unavailable("script exhausted");
    std::string s = replies.front();
    replies.pop_front();
    return s;
  }
  std::string Describe() const override { return "scripted"; }
};

// Times by source: ms[fingerprint] (1 ms when unknown); `wrong` sources are incorrect; `factor`
// multiplies the speedup of a call by its label ("a3_rebuilt_t2").
class TableMeasure : public LineageMeasure {
 public:
  std::map<std::string, double> ms;
  std::set<std::string> wrong;
  std::function<double(const std::string&)> factor = [](const std::string&) { return 1.0; };
  std::vector<std::string> labels;

  void Time(const std::string& source, double t) { ms[CodeFingerprint(source)] = t; }
  Result<Comparison> Compare(const std::string& candidate, const std::string& baseline,
                             const std::string& label) override {
    labels.push_back(label);
    Comparison c;
    c.passed = !wrong.count(CodeFingerprint(candidate));
    c.verdict = c.passed ? "passed" : "incorrect";
    c.summary = c.passed ? "every output matched" : "c[3] differs";
    auto at = [&](const std::string& s) {
      auto it = ms.find(CodeFingerprint(s));
      return it == ms.end() ? 1.0 : it->second;
    };
    double base = baseline.empty() ? 10.0 : at(baseline);
    c.speedup = c.passed ? base / at(candidate) * factor(label) : 0;
    c.ci = {c.speedup * 0.98, c.speedup * 1.02};
    return c;
  }
  std::string Device() const override { return "test device"; }
  std::string Platform() const override { return "sm_90a"; }
};

class Events : public LineageProgress {
 public:
  std::vector<json> events;
  void Event(const json& e) override { events.push_back(e); }
};

class LineageWalkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto t = LoadTask(testing::SourceDir() / "examples" / "host" / "sgemm");
    ASSERT_TRUE(t.ok());
    task_ = *t;
    auto v = LoadFeatureVocabulary(testing::SourceDir() / "skills" / "README.md");
    ASSERT_TRUE(v.ok());
    vocab_ = *v;
    opt_.prompts_dir = testing::SourceDir() / "prompts";
    opt_.abi_header = "/* abi */";
    opt_.expert_name = "expert.cpp";
    opt_.trials = 3;
  }
  Result<LineageResult> Walk(Store* store = nullptr) {
    LineageWalk w(task_, vocab_, gen_, measure_, store, nullptr, events_);
    return w.Run(expert_, opt_);
  }
  Task task_;
  FeatureSet vocab_;
  ScriptedGenerator gen_;
  TableMeasure measure_;
  Events events_;
  LineageOptions opt_;
  const std::string expert_ = Kernel({"smem-tile", "register-tile", "unrolled-loops"});
  const std::string s1_ = Kernel({"smem-tile", "unrolled-loops"});
  const std::string s2_ = Kernel({"unrolled-loops"});
};

TEST_F(LineageWalkTest, AcceptsStepsFeedsBackRejectionsAndReversesThemIntoCards) {
  measure_.Time(expert_, 1);
  measure_.Time(s1_, 2);
  measure_.Time(s2_, 5);
  std::string broken = Kernel({"smem-tile", "unrolled-loops"}, " + 1");
  measure_.wrong.insert(CodeFingerprint(broken));
  const FeatureSet all = {"smem-tile", "register-tile", "unrolled-loops"};
  std::vector<std::string> e = {"register-tile", "smem-tile", "unrolled-loops"};
  std::vector<std::string> a1 = {"smem-tile", "unrolled-loops"};
  gen_.replies = {
      Propose("register-tile", e, a1, broken),               // 1: incorrect
      Propose("register-tile", e, {"unrolled-loops"}, s2_),  // 2: two removed
      Propose("register-tile", e, a1, s1_),
      Cite("register-tile", expert_, s1_),
      Rebuild(expert_),  // 3: accepted
      Propose("smem-tile", a1, {"unrolled-loops"}, s2_),
      Cite("smem-tile", s1_, s2_),
      Rebuild(s1_),                                                               // 4: accepted
      "Summary: only the naive loop is left\n```json\n{\"naive\": true}\n```\n",  // 5: naive
  };
  auto r = Walk();
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->stop_reason, "naive");
  EXPECT_NE(r->stop_detail.find("the generator says"), std::string::npos);
  ASSERT_EQ(r->steps.size(), 2u);
  ASSERT_EQ(r->attempts.size(), 5u);
  EXPECT_EQ(r->attempts[0].stage, "measure");
  EXPECT_NE(r->attempts[0].reason.find("incorrect"), std::string::npos);
  EXPECT_EQ(r->attempts[1].stage, "declaration");
  EXPECT_NE(r->attempts[1].reason.find("several mechanisms"), std::string::npos);
  // Each rejection is in the next proposal prompt; an acceptance clears them.
  ASSERT_GE(gen_.requests.size(), 3u);
  EXPECT_EQ(gen_.requests[0].prompt.find("Rejected attempts"), std::string::npos);
  EXPECT_NE(gen_.requests[1].prompt.find("c[3] differs"), std::string::npos);
  EXPECT_NE(gen_.requests[2].prompt.find("c[3] differs"), std::string::npos);
  EXPECT_NE(gen_.requests[2].prompt.find("several mechanisms removed"), std::string::npos);
  EXPECT_EQ(gen_.requests[2].purpose, "propose");
  EXPECT_EQ(gen_.requests[3].purpose, "cite");
  EXPECT_EQ(gen_.requests[4].purpose, "rebuild");
  EXPECT_EQ(gen_.requests[5].prompt.find("Rejected attempts"), std::string::npos);
  EXPECT_NE(gen_.requests[5].prompt.find("removed `register-tile`"), std::string::npos) << "the accepted steps so far";
  // The rebuild sees the simpler kernel and the draft card, never the expert.
  EXPECT_NE(gen_.requests[4].prompt.find("provides: [\"register-tile\"]"), std::string::npos)
      << gen_.requests[4].prompt;
  EXPECT_NE(gen_.requests[4].prompt.find("use_smem_tile"), std::string::npos);
  EXPECT_EQ(gen_.requests[4].prompt.find(expert_), std::string::npos);
  // Evidence: the effect is after/before time, and the round trip ran 3 trials.
  EXPECT_DOUBLE_EQ(r->steps[0].effect, 2.0);
  EXPECT_DOUBLE_EQ(r->steps[1].effect, 2.5);
  EXPECT_EQ(r->steps[0].round_trip.size(), 3u);
  EXPECT_EQ(r->expert_features, all);
  EXPECT_EQ(r->naive_features, FeatureSet{"unrolled-loops"});

  Provenance pv{"sgemm", "test device", "sm_90a", "kpilot test", 0, "cuda"};
  auto cards = CardsFromSteps(r->steps, pv);
  ASSERT_EQ(cards.size(), 2u);
  EXPECT_EQ(cards[0].id, "smem-tile");
  EXPECT_EQ(cards[1].id, "register-tile");
  EXPECT_EQ(CheckCardChain(cards, r->naive_features, r->expert_features), "");
  EXPECT_EQ(cards[1].front["requires"], nlohmann::ordered_json({"smem-tile", "unrolled-loops"}));
}

TEST_F(LineageWalkTest, RoundTripNeedsTheMinimumInEveryTrial) {
  measure_.Time(expert_, 1);
  measure_.Time(s1_, 2);
  std::vector<std::string> e = {"register-tile", "smem-tile", "unrolled-loops"};
  std::vector<std::string> a1 = {"smem-tile", "unrolled-loops"};
  // Attempt 1: trials at 0.995, 0.98, 0.995 → rejected; attempt 2: 0.995 in all → accepted.
  measure_.factor = [](const std::string& label) {
    if (label == "a1_rebuilt_t2") return 0.98;
    return label.find("rebuilt") != std::string::npos ? 0.995 : 1.0;
  };
  gen_.replies = {Propose("register-tile", e, a1, s1_), Cite("register-tile", expert_, s1_), Rebuild(expert_),
                  Propose("register-tile", e, a1, s1_), Cite("register-tile", expert_, s1_), Rebuild(expert_),
                  "```json\n{\"naive\": true}\n```"};
  auto r = Walk();
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->attempts.size(), 3u);
  EXPECT_EQ(r->attempts[0].stage, "round-trip");
  EXPECT_NE(r->attempts[0].reason.find("0.980"), std::string::npos) << r->attempts[0].reason;
  EXPECT_NE(r->attempts[0].reason.find("trial 2 of 3"), std::string::npos);
  EXPECT_TRUE(r->attempts[1].accepted);
  ASSERT_EQ(r->steps.size(), 1u);
  EXPECT_EQ(r->steps[0].round_trip, (std::vector<double>{0.995, 0.995, 0.995}));
  EXPECT_NE(gen_.requests[3].prompt.find("trial 2 of 3"), std::string::npos) << "the round-trip failure is fed back";
}

TEST_F(LineageWalkTest, StopsAtTheRejectionLimit) {
  opt_.max_rejections = 2;
  std::vector<std::string> e = {"register-tile", "smem-tile", "unrolled-loops"};
  gen_.replies = {Propose("register-tile", e, {"smem-tile", "unrolled-loops"}, expert_), "no json at all"};
  auto r = Walk();
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->stop_reason, "max-rejections");
  ASSERT_EQ(r->attempts.size(), 2u);
  EXPECT_EQ(r->attempts[0].stage, "code");
  EXPECT_NE(r->attempts[0].reason.find("nothing removed"), std::string::npos);
  EXPECT_EQ(r->attempts[1].stage, "parse");
  EXPECT_TRUE(r->steps.empty());
  EXPECT_EQ(gen_.requests.size(), 2u) << "nothing is measured or confirmed for those";
  EXPECT_EQ(measure_.labels, std::vector<std::string>{"expert"});
}

TEST_F(LineageWalkTest, StopsAtTheStepLimitAndRecordsEverythingInTheStore) {
  opt_.max_steps = 1;
  opt_.trials = 1;
  std::vector<std::string> e = {"register-tile", "smem-tile", "unrolled-loops"};
  gen_.replies = {Propose("register-tile", e, {"smem-tile", "unrolled-loops"}, s1_),
                  Fence("json", json{{"removes", {"register-tile"}},
                                     {"citations", {{{"side", "before"}, {"line", 2}, {"text", "nope"}}}}}
                                    .dump()),
                  Propose("register-tile", e, {"smem-tile", "unrolled-loops"}, s1_),
                  Cite("register-tile", expert_, s1_), Rebuild(expert_)};
  auto dir = TempDir::Create("kpilot-lineage-store-");
  ASSERT_TRUE(dir.ok());
  auto store = Store::Open(dir->path());
  ASSERT_TRUE(store.ok());
  auto r = Walk(store->get());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->stop_reason, "max-steps");
  ASSERT_EQ(r->attempts.size(), 2u);
  EXPECT_EQ(r->attempts[0].stage, "cite");
  EXPECT_NE(r->attempts[0].reason.find("does not match the code"), std::string::npos);
  auto run = (*store)->GetRun(r->run_id);
  ASSERT_TRUE(run.ok() && run->has_value());
  EXPECT_EQ((*run)->status, "finished");
  EXPECT_EQ((*run)->stop_reason, "max-steps");
  EXPECT_EQ(json::parse((*run)->config_json)["command"], "lineage");
  auto events = (*store)->ListRunEvents(r->run_id);
  ASSERT_TRUE(events.ok());
  std::vector<std::string> kinds;
  for (const auto& ev : *events) kinds.push_back(ev.kind);
  EXPECT_EQ(kinds, (std::vector<std::string>{"expert", "reject", "accept", "stop"}));
  auto reject = json::parse((*events)[1].payload_json);
  EXPECT_EQ(reject["stage"], "cite");
  EXPECT_EQ(reject["declaration"]["feature"], "register-tile");
  auto source = (*store)->GetBlob(reject["source"].get<std::string>());
  ASSERT_TRUE(source.ok());
  EXPECT_EQ(*source, s1_);
  auto nodes = (*store)->ListRunNodes(r->run_id);
  ASSERT_TRUE(nodes.ok());
  ASSERT_EQ(nodes->size(), 2u);
  EXPECT_EQ((*nodes)[1].summary, "without register-tile");
}

TEST_F(LineageWalkTest, MineWritesAdmittedCardsToOutAndTheRejectedOnesApart) {
  measure_.Time(expert_, 1);
  measure_.Time(s1_, 2);
  measure_.Time(s2_, 5);
  // The held-out start, and what the generator makes of it with each card: twice as fast with
  // smem-tile (admitted), half as fast with register-tile (rejected).
  const std::string start = Kernel({"unrolled-loops"}, " + 2");
  const std::string with_smem = Kernel({"smem-tile", "unrolled-loops"}, " + 2");
  const std::string with_register = Kernel({"register-tile", "unrolled-loops"}, " + 2");
  measure_.Time(start, 4);
  measure_.Time(with_smem, 2);
  measure_.Time(with_register, 8);
  std::vector<std::string> e = {"register-tile", "smem-tile", "unrolled-loops"};
  std::vector<std::string> a1 = {"smem-tile", "unrolled-loops"};
  gen_.replies = {
      Propose("register-tile", e, a1, s1_),
      Cite("register-tile", expert_, s1_),
      Rebuild(expert_),
      Propose("smem-tile", a1, {"unrolled-loops"}, s2_),
      Cite("smem-tile", s1_, s2_),
      Rebuild(s1_),
      "Summary: only the naive loop is left\n```json\n{\"naive\": true}\n```\n",
      Rebuild(with_smem),      // admission of the first card (smem-tile, the last removal)
      Rebuild(with_register),  // and of the second
  };
  auto dir = TempDir::Create("kpilot-lineage-mine-");
  ASSERT_TRUE(dir.ok());
  auto store = Store::Open(dir->path() / "store");
  ASSERT_TRUE(store.ok());
  HeldOutTask held{task_, start, "start.cpp"};
  MiningOptions mo;
  mo.walk = opt_;
  mo.out = dir->path() / "skills";
  mo.held_out = &held;
  mo.held_out_measure = &measure_;
  LineageWalk walk(task_, vocab_, gen_, measure_, store->get(), nullptr, events_);
  auto m = walk.Mine(expert_, mo);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->walk.steps.size(), 2u);
  ASSERT_EQ(m->admissions.size(), 2u);
  EXPECT_TRUE(m->admissions[0].admitted) << m->admissions[0].reason;
  EXPECT_EQ(m->admissions[1].stage, "measure");
  EXPECT_EQ(m->written, (std::vector<std::filesystem::path>{mo.out / "smem-tile" / "SKILL.md"}));
  EXPECT_EQ(m->rejected, (std::vector<std::filesystem::path>{mo.out / "rejected" / "register-tile" / "SKILL.md"}));
  for (const auto& p : {m->written[0], m->rejected[0]}) EXPECT_TRUE(std::filesystem::exists(p)) << p;
  // The card's own evidence names the held-out measurement.
  auto text = ReadFile(m->written[0]);
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("kpilot lineage --admit-on"), std::string::npos);
  EXPECT_EQ(m->admission["start"], "start.cpp");
  EXPECT_NE(m->admission["cards"][1]["path"].get<std::string>().find("rejected"), std::string::npos);
  // Every validation problem is reported as it is found, and the run records where the cards went.
  size_t reported = 0;
  for (const auto& ev : events_.events) reported += ev.value("event", "") == "card_problem";
  EXPECT_EQ(reported, m->card_problems.size());
  auto events = (*store)->ListRunEvents(m->walk.run_id);
  ASSERT_TRUE(events.ok());
  ASSERT_FALSE(events->empty());
  EXPECT_EQ(events->back().kind, "cards");
  auto cards = json::parse(events->back().payload_json);
  EXPECT_EQ(cards["cards"], json({m->written[0].string()}));
  EXPECT_EQ(cards["rejected"], json({m->rejected[0].string()}));
  EXPECT_EQ(cards["admission"], m->admission);
}

TEST_F(LineageWalkTest, AHeldOutTaskMustBeAnotherTaskOfTheSameBackend) {
  auto same = LoadHeldOutTask(task_, task_.dir.string(), "");
  ASSERT_FALSE(same.ok());
  EXPECT_NE(same.status().message().find("the mined task itself"), std::string::npos) << same.status().message();
  auto other = LoadHeldOutTask(task_, (testing::SourceDir() / "examples" / "host" / "saxpy").string(), "");
  ASSERT_TRUE(other.ok()) << other.status().message();
  EXPECT_EQ(other->start_name, other->task.reference.path.filename().string());
  auto cuda = LoadHeldOutTask(task_, (testing::SourceDir() / "examples" / "cuda" / "sgemm").string(), "");
  ASSERT_FALSE(cuda.ok());
  EXPECT_NE(cuda.status().message().find("task of their backend"), std::string::npos) << cuda.status().message();
}

TEST_F(LineageWalkTest, StopsWhenTheKernelIsTheReference) {
  auto ref = ReadFile(task_.reference.path);
  ASSERT_TRUE(ref.ok());
  const std::string expert = Kernel({"register-tile"});
  gen_.replies = {Propose("register-tile", {"register-tile"}, {}, *ref), Cite("register-tile", expert, *ref),
                  Rebuild(expert)};
  LineageWalk w(task_, vocab_, gen_, measure_, nullptr, nullptr, events_);
  auto r = w.Run(expert, opt_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->stop_reason, "naive");
  EXPECT_NE(r->stop_detail.find("the task's reference"), std::string::npos);
}

TEST_F(LineageWalkTest, AnExpertThatFailsIsAnError) {
  measure_.wrong.insert(CodeFingerprint(expert_));
  auto r = Walk();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("does not pass the harness"), std::string::npos);
  EXPECT_TRUE(gen_.requests.empty());
}

TEST_F(LineageWalkTest, AGeneratorFailureEndsTheWalk) {
  auto r = Walk();  // no replies scripted
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("script exhausted"), std::string::npos);
}

TEST_F(LineageWalkTest, ABadTemplateOverrideIsAnErrorBeforeAnyRequest) {
  auto dir = TempDir::Create("kpilot-lineage-prompts-");
  ASSERT_TRUE(dir.ok());
  ASSERT_TRUE(WriteFileAtomic(dir->path() / "lineage" / "cite.md", "line\n{{befor_numbered}}\n").ok());
  opt_.prompts_override = dir->path();
  auto r = Walk();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("lineage/cite.md:2: unknown placeholder {{befor_numbered}}"), std::string::npos)
      << r.status().message();
  EXPECT_TRUE(gen_.requests.empty());
}

// bench/lineage/row_softmax: the scripted replies of the H200 check, served by the local server and
// read through the real LLM client, must pass every part of the gate that does not need the GPU.
TEST(LineageBenchScript, RowSoftmaxScriptPassesTheGate) {
  std::filesystem::path bench = testing::SourceDir() / "bench" / "lineage" / "row_softmax";
  std::vector<llm::testing::FakeReply> replies;
  std::string error;
  ASSERT_TRUE(llm::testing::LoadFakeScript(bench / "script.json", &replies, &error)) << error;
  llm::testing::FakeLlmServer server;
  for (auto& r : replies) server.Push(r);
  auto endpoint = llm::ParseLlmSpec(server.OpenAISpec("scripted"));
  ASSERT_TRUE(endpoint.ok());
  llm::LlmConfig config;
  config.max_retries = 0;
  auto client = llm::MakeChatClient(*endpoint, config, llm::MakeCurlTransport(), nullptr);
  ASSERT_TRUE(client.ok()) << client.status().message();
  auto gen = MakeLlmLineageGenerator(std::shared_ptr<llm::ChatClient>(std::move(client).value()));
  auto task = LoadTask(testing::SourceDir() / "examples" / "cuda" / "row_softmax");
  ASSERT_TRUE(task.ok());
  auto vocab = LoadFeatureVocabulary(testing::SourceDir() / "skills" / "README.md");
  ASSERT_TRUE(vocab.ok());
  auto expert =
      ReadFile(testing::SourceDir() / "examples" / "cuda" / "row_softmax" / "candidates" / "lineage_expert.cu");
  ASSERT_TRUE(expert.ok());
  TableMeasure measure;  // everything passes at 1.0
  Events events;
  LineageOptions o;
  o.prompts_dir = testing::SourceDir() / "prompts";
  o.expert_name = "lineage_expert.cu";
  o.trials = 1;
  LineageWalk w(*task, *vocab, *gen, measure, nullptr, nullptr, events);
  auto r = w.Run(*expert, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  for (const auto& a : r->attempts) EXPECT_TRUE(a.accepted) << a.attempt << " " << a.stage << ": " << a.reason;
  EXPECT_EQ(r->stop_reason, "naive") << r->stop_detail;
  EXPECT_GE(r->steps.size(), 2u);
  EXPECT_EQ(server.Pending(), 0u) << "every scripted reply was used";
  Provenance pv{"row_softmax", "test", "sm_90a", "kpilot test", 0, "cuda"};
  auto cards = CardsFromSteps(r->steps, pv);
  EXPECT_EQ(CheckCardChain(cards, r->naive_features, r->expert_features), "");
  auto dir = TempDir::Create("kpilot-lineage-bench-cards-");
  ASSERT_TRUE(dir.ok());
  ASSERT_TRUE(WriteCards(cards, dir->path()).ok());
  auto library = testing::SkillLibraryProblems(dir->path());
  EXPECT_TRUE(library.empty()) << ::testing::PrintToString(library);
  if (!testing::HavePyYaml()) GTEST_SKIP() << "python3 with PyYAML is needed for bench/skills_check.py";
  auto problems = testing::SkillsCheckProblems(dir->path());
  EXPECT_TRUE(problems.empty()) << ::testing::PrintToString(problems);
}

}  // namespace
}  // namespace kpilot::lineage
