// The llm generator over a scripted ChatClient double: prompts, re-asks, failures remembered,
// the tool loop and its budget, parallel drafts, the spending cap, transcripts.
#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "core/fs.h"
#include "generate/llm_generator.h"
#include "session/session.h"
#include "store/store.h"
#include "task/loader.h"
#include "generator_test_util.h"
#include "test_paths.h"

namespace kpilot {
namespace {

namespace fs = std::filesystem;

const std::string& kKernel = testing::kMinimalKernel;

// Another correct file: the same ABI, different code.
std::string Variant(int i) { return kKernel + "int variant_" + std::to_string(i) + " = 0;\n"; }

std::string Fenced(const std::string& summary, const std::string& code) {
  return "Summary: " + summary + "\n```cpp\n" + code + "```\n";
}

// Replies in order (shared by all threads); every request is kept.
class ScriptedClient : public llm::ChatClient {
 public:
  explicit ScriptedClient(std::deque<Result<llm::ChatReply>> replies, double cost_per_call = 0)
      : replies_(std::move(replies)), cost_(cost_per_call) {}
  Result<llm::ChatReply> Complete(const llm::ChatRequest& r) override {
    std::lock_guard<std::mutex> lock(mu_);
    requests.push_back(r);
    spent_.input_tokens += 100;
    spent_.output_tokens += 10;
    spent_.cost_usd += cost_;
    if (replies_.empty()) return Text("no more scripted replies");
    auto next = replies_.front();
    replies_.pop_front();
    return next;
  }
  std::string Describe() const override { return "scripted fake at http://127.0.0.1:1"; }
  llm::Usage Spent() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return spent_;
  }
  static llm::ChatReply Text(const std::string& t) {
    llm::ChatReply r;
    r.text = t;
    r.stop_reason = "stop";
    return r;
  }
  static llm::ChatReply Tools(std::vector<llm::ToolCall> calls) {
    llm::ChatReply r;
    r.tool_calls = std::move(calls);
    r.stop_reason = "tool_calls";
    return r;
  }
  std::vector<llm::ChatRequest> requests;

 private:
  mutable std::mutex mu_;
  std::deque<Result<llm::ChatReply>> replies_;
  llm::Usage spent_;
  double cost_;
};

class LlmGeneratorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto t = LoadTask(testing::SourceDir() / "examples" / "host" / "saxpy");
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    task_ = *t;
    ctx_ = testing::ParentContext(task_, Variant(0));
    ctx_.parent_speedup = 1.2;
    options_.include_dir = testing::SourceDir() / "include";
    options_.prompts_dir = testing::SourceDir() / "prompts";
    options_.config.tool_calls_per_proposal = 0;
  }
  std::vector<Draft> Propose(std::shared_ptr<ScriptedClient> client) {
    auto p = MakeLlmGenerator("llm:openai:fake", task_, client, options_);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    if (!p.ok()) return {};
    auto r = (*p)->Propose(ctx_).get();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : std::vector<Draft>{};
  }
  Task task_;
  ProposalContext ctx_;
  LlmGeneratorOptions options_;
};

TEST_F(LlmGeneratorTest, OneReplyOneDraftWithTheParentsParams) {
  auto client = std::make_shared<ScriptedClient>(std::deque<Result<llm::ChatReply>>{
      ScriptedClient::Text("Finding: scalar-global-loads\n" + Fenced("float4 loads", kKernel))});
  auto drafts = Propose(client);
  ASSERT_EQ(drafts.size(), 1u);
  EXPECT_EQ(drafts[0].source, kKernel);
  EXPECT_EQ(drafts[0].failure, "");
  EXPECT_EQ(drafts[0].summary, "openai:fake: float4 loads");
  EXPECT_EQ(drafts[0].targeted_finding, "scalar-global-loads");
  EXPECT_EQ(drafts[0].params, ctx_.parent_params);
  EXPECT_EQ(fs::path(drafts[0].source_name).extension(), ".cpp");
  ASSERT_EQ(client->requests.size(), 1u);
  const auto& req = client->requests[0];
  EXPECT_NE(req.system.find("ONE complete candidate"), std::string::npos);
  EXPECT_NE(req.messages[0].content.find("use wider loads"), std::string::npos);
  EXPECT_NE(req.messages[0].content.find("kpilot_abi_version"), std::string::npos) << "the ABI header is sent";
  EXPECT_TRUE(req.tools.empty()) << "no tool budget, no tools";
}

TEST_F(LlmGeneratorTest, NoCodeIsReaskedThenTheCandidateIsTaken) {
  options_.config.reasks = 2;
  auto client = std::make_shared<ScriptedClient>(std::deque<Result<llm::ChatReply>>{
      ScriptedClient::Text("I would unroll."), ScriptedClient::Text(Fenced("unrolled", kKernel))});
  auto drafts = Propose(client);
  ASSERT_EQ(drafts.size(), 1u);
  EXPECT_EQ(drafts[0].source, kKernel);
  EXPECT_NE(drafts[0].summary.find("after 1 re-ask"), std::string::npos) << drafts[0].summary;
  ASSERT_EQ(client->requests.size(), 2u);
  const auto& second = client->requests[1].messages;
  ASSERT_EQ(second.size(), 3u);  // prompt, the bad reply, the re-ask
  EXPECT_EQ(second[1].role, "assistant");
  EXPECT_NE(second[2].content.find("no fenced code block"), std::string::npos);
}

TEST_F(LlmGeneratorTest, SeveralFilesAreReasked) {
  options_.config.reasks = 1;
  auto client = std::make_shared<ScriptedClient>(std::deque<Result<llm::ChatReply>>{
      ScriptedClient::Text(Fenced("a", kKernel) + Fenced("b", kKernel)), ScriptedClient::Text(Fenced("one", kKernel))});
  auto drafts = Propose(client);
  ASSERT_EQ(drafts.size(), 1u);
  EXPECT_EQ(drafts[0].failure, "");
  EXPECT_NE(client->requests[1].messages.back().content.find("several files"), std::string::npos);
}

TEST_F(LlmGeneratorTest, EveryFailureReasonIsKeptWhenReasksRunOut) {
  options_.config.reasks = 2;
  auto client = std::make_shared<ScriptedClient>(std::deque<Result<llm::ChatReply>>{
      ScriptedClient::Text("prose only"), ScriptedClient::Text("```cpp\nint main() {}\n```\n"),
      ScriptedClient::Text(Fenced("a", kKernel) + Fenced("b", kKernel)),
      ScriptedClient::Text(Fenced("late", kKernel))});
  auto drafts = Propose(client);
  ASSERT_EQ(drafts.size(), 1u);
  EXPECT_EQ(drafts[0].source, "");
  EXPECT_NE(drafts[0].failure.find("no fenced code block"), std::string::npos) << drafts[0].failure;
  EXPECT_NE(drafts[0].failure.find("does not define kpilot_launch"), std::string::npos);
  EXPECT_NE(drafts[0].failure.find("several files"), std::string::npos);
  EXPECT_EQ(client->requests.size(), 3u) << "one request and two re-asks, no more";
}

TEST_F(LlmGeneratorTest, ToolLoopAnswersCallsAndEnforcesTheBudget) {
  auto dir = TempDir::Create("kpilot-llm-tools-");
  ASSERT_TRUE(dir.ok());
  ASSERT_TRUE(
      WriteFileAtomic(dir->path() / "cutlass" / "cute" / "tensor.hpp", "struct Tensor { int layout; };\n").ok());
  ASSERT_TRUE(WriteFileAtomic(dir->path() / "secret.txt", "TOP SECRET\n").ok());
  options_.config.code_roots = {(dir->path() / "cutlass").string()};
  options_.config.tool_calls_per_proposal = 2;
  options_.config.reasks = 0;
  llm::ToolCall search{"c1", "search_code", {{"query", "layout"}}};
  llm::ToolCall escape{"c2", "read_file", {{"path", "cutlass/../secret.txt"}}};
  llm::ToolCall third{"c3", "get_profile", nlohmann::json::object()};
  auto client = std::make_shared<ScriptedClient>(std::deque<Result<llm::ChatReply>>{
      ScriptedClient::Tools({search, escape}), ScriptedClient::Tools({third}), ScriptedClient::Text("still no code")});
  auto drafts = Propose(client);
  ASSERT_EQ(drafts.size(), 1u);
  ASSERT_EQ(client->requests.size(), 2u) << "the call past the budget counts as a reply without code; no re-asks left";
  EXPECT_FALSE(client->requests[0].tools.empty());
  const auto& msgs = client->requests[1].messages;
  ASSERT_EQ(msgs.size(), 4u);  // prompt, tool calls, two tool results
  EXPECT_EQ(msgs[2].role, "tool");
  EXPECT_EQ(msgs[2].tool_call_id, "c1");
  EXPECT_NE(msgs[2].content.find("cutlass/cute/tensor.hpp:1:"), std::string::npos) << msgs[2].content;
  EXPECT_EQ(msgs[3].content.rfind("error:", 0), 0u);
  EXPECT_EQ(msgs[3].content.find("TOP SECRET"), std::string::npos);
  EXPECT_NE(drafts[0].failure.find("kept calling tools after the budget of 2"), std::string::npos) << drafts[0].failure;
}

TEST_F(LlmGeneratorTest, ACandidateMayComeAsAToolCall) {
  options_.config.tool_calls_per_proposal = 4;
  llm::ToolCall submit{"s1", "submit_candidate", {{"source", kKernel}, {"summary", "tiled"}, {"finding", "made-up"}}};
  auto client = std::make_shared<ScriptedClient>(std::deque<Result<llm::ChatReply>>{ScriptedClient::Tools({submit})});
  auto drafts = Propose(client);
  ASSERT_EQ(drafts.size(), 1u);
  EXPECT_EQ(drafts[0].source, kKernel);
  EXPECT_EQ(drafts[0].summary, "openai:fake: tiled");
  EXPECT_EQ(drafts[0].targeted_finding, "") << "a finding the parent does not have is not targeted";
}

TEST_F(LlmGeneratorTest, KDraftsAreAskedInParallelWithDistinctPrompts) {
  ctx_.k = 3;
  auto client = std::make_shared<ScriptedClient>(std::deque<Result<llm::ChatReply>>{
      ScriptedClient::Text(Fenced("a", Variant(1))), ScriptedClient::Text(Fenced("b", Variant(2))),
      ScriptedClient::Text(Fenced("c", Variant(3)))});
  auto drafts = Propose(client);
  ASSERT_EQ(drafts.size(), 3u);
  std::set<std::string> prompts, names;
  for (const auto& r : client->requests) prompts.insert(r.messages[0].content);
  for (const auto& d : drafts) names.insert(d.source_name);
  EXPECT_EQ(prompts.size(), 3u) << "each draft is told its index";
  EXPECT_EQ(names.size(), 3u);
}

TEST_F(LlmGeneratorTest, RepeatingTheParentOrAnEarlierDraftIsReasked) {
  options_.config.reasks = 2;
  auto client = std::make_shared<ScriptedClient>(std::deque<Result<llm::ChatReply>>{
      ScriptedClient::Text(Fenced("same", "// only a comment\n" + Variant(0))),
      ScriptedClient::Text(Fenced("new", kKernel)), ScriptedClient::Text(Fenced("again", kKernel)),
      ScriptedClient::Text(Fenced("other", Variant(5)))});
  auto p = MakeLlmGenerator("llm:openai:fake", task_, client, options_);
  ASSERT_TRUE(p.ok());
  auto first = (*p)->Propose(ctx_).get();
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->size(), 1u);
  EXPECT_EQ((*first)[0].source, kKernel);
  EXPECT_NE(client->requests[1].messages.back().content.find("same as the parent"), std::string::npos);
  auto second = (*p)->Propose(ctx_).get();
  ASSERT_TRUE(second.ok());
  EXPECT_EQ((*second)[0].source, Variant(5)) << "an earlier draft is not sent twice";
}

TEST_F(LlmGeneratorTest, ClientErrorsFailTheProposalWhenNothingCameBack) {
  auto client = std::make_shared<ScriptedClient>(std::deque<Result<llm::ChatReply>>{
      Result<llm::ChatReply>(Status::Unavailable("openai: 401 invalid key [redacted]"))});
  auto p = MakeLlmGenerator("llm:openai:fake", task_, client, options_);
  ASSERT_TRUE(p.ok());
  auto r = (*p)->Propose(ctx_).get();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("401"), std::string::npos);
}

TEST_F(LlmGeneratorTest, TheSpendingCapStopsRequests) {
  options_.max_cost_usd = 0.25;
  options_.config.reasks = 5;
  auto client = std::make_shared<ScriptedClient>(
      std::deque<Result<llm::ChatReply>>{ScriptedClient::Text("no"), ScriptedClient::Text("no"),
                                         ScriptedClient::Text("no"), ScriptedClient::Text("no"),
                                         ScriptedClient::Text("no")},
      0.1);
  auto p = MakeLlmGenerator("llm:openai:fake", task_, client, options_);
  ASSERT_TRUE(p.ok());
  auto r = (*p)->Propose(ctx_).get();
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 1u);
  EXPECT_NE((*r)[0].failure.find("spending cap reached"), std::string::npos) << (*r)[0].failure;
  EXPECT_EQ(client->requests.size(), 3u) << "0.1, 0.2, 0.3 ≥ 0.25: no fourth request";
  GeneratorSpend s = (*p)->Spent();
  EXPECT_EQ(s.requests, 3);
  EXPECT_NEAR(s.cost_usd, 0.3, 1e-9);
  EXPECT_EQ(s.input_tokens, 300);
}

TEST_F(LlmGeneratorTest, ABadOverrideTemplateFailsBeforeAnyRequest) {
  auto dir = TempDir::Create("kpilot-llm-prompts-");
  ASSERT_TRUE(dir.ok());
  ASSERT_TRUE(WriteFileAtomic(dir->path() / "propose.md", "{{task_name}} {{parnet_source}}").ok());
  options_.config.prompts_dir = dir->path().string();
  auto client = std::make_shared<ScriptedClient>(std::deque<Result<llm::ChatReply>>{});
  auto p = MakeLlmGenerator("llm:openai:fake", task_, client, options_);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("parnet_source"), std::string::npos);
  EXPECT_TRUE(client->requests.empty());
}

TEST_F(LlmGeneratorTest, OfferedCardsAreInThePromptAndTheAppliedOnesAreRead) {
  ctx_.skills = {testing::BuiltinCard("coalescing"), testing::BuiltinCard("split-k")};
  auto client = std::make_shared<ScriptedClient>(std::deque<Result<llm::ChatReply>>{
      ScriptedClient::Text(Fenced("coalesced", kKernel) + "Applied skills: coalescing, made-up-card\n")});
  auto drafts = Propose(client);
  ASSERT_EQ(drafts.size(), 1u);
  EXPECT_EQ(drafts[0].skills_applied, std::vector<std::string>{"coalescing"});
  EXPECT_EQ(drafts[0].summary, "openai:fake: coalesced [skill ids not offered, ignored: made-up-card]");
  const std::string& prompt = client->requests[0].messages[0].content;
  EXPECT_NE(prompt.find("### `coalescing`"), std::string::npos);
  EXPECT_NE(prompt.find("### `split-k`"), std::string::npos);
  EXPECT_NE(prompt.find("Applied skills: none"), std::string::npos);
}

TEST_F(LlmGeneratorTest, PromptSkillsLimitsTheCardsShown) {
  ctx_.skills = {testing::BuiltinCard("coalescing"), testing::BuiltinCard("split-k")};
  options_.config.prompt_skills = 1;
  auto client = std::make_shared<ScriptedClient>(
      std::deque<Result<llm::ChatReply>>{ScriptedClient::Text(Fenced("x", kKernel) + "Applied skills: split-k\n")});
  auto drafts = Propose(client);
  ASSERT_EQ(drafts.size(), 1u);
  const std::string& prompt = client->requests[0].messages[0].content;
  EXPECT_NE(prompt.find("### `coalescing`"), std::string::npos);
  EXPECT_EQ(prompt.find("### `split-k`"), std::string::npos);
  EXPECT_EQ(drafts[0].skills_applied, std::vector<std::string>{"split-k"}) << "offered, if not shown: get_skill has it";
}

TEST_F(LlmGeneratorTest, AppliedSkillsSurviveAReaskAndComeWithSubmitCandidate) {
  ctx_.skills = {testing::BuiltinCard("coalescing"), testing::BuiltinCard("split-k")};
  auto client = std::make_shared<ScriptedClient>(
      std::deque<Result<llm::ChatReply>>{ScriptedClient::Text("I will split K.\nApplied skills: split-k\n"),
                                         ScriptedClient::Text(Fenced("split", kKernel))});
  auto drafts = Propose(client);
  ASSERT_EQ(drafts.size(), 1u);
  EXPECT_EQ(drafts[0].source, kKernel);
  EXPECT_EQ(drafts[0].skills_applied, std::vector<std::string>{"split-k"}) << "the earlier reply's line";

  options_.config.tool_calls_per_proposal = 2;
  llm::ToolCall submit{"s1",
                       "submit_candidate",
                       {{"source", Variant(7)}, {"summary", "tiled"}, {"applied_skills", {"coalescing", "nope"}}}};
  client = std::make_shared<ScriptedClient>(std::deque<Result<llm::ChatReply>>{ScriptedClient::Tools({submit})});
  drafts = Propose(client);
  ASSERT_EQ(drafts.size(), 1u);
  EXPECT_EQ(drafts[0].skills_applied, std::vector<std::string>{"coalescing"});
  EXPECT_NE(drafts[0].summary.find("ignored: nope"), std::string::npos) << drafts[0].summary;
}

TEST_F(LlmGeneratorTest, WithSkillsOffNoCardIsShownOrRecorded) {
  ctx_.skills = {testing::BuiltinCard("coalescing")};
  ctx_.skills_enabled = false;
  auto client = std::make_shared<ScriptedClient>(
      std::deque<Result<llm::ChatReply>>{ScriptedClient::Text(Fenced("x", kKernel) + "Applied skills: coalescing\n")});
  auto drafts = Propose(client);
  ASSERT_EQ(drafts.size(), 1u);
  EXPECT_TRUE(drafts[0].skills_applied.empty());
  EXPECT_EQ(client->requests[0].messages[0].content.find("Skill cards"), std::string::npos);
}

TEST_F(LlmGeneratorTest, DisclosureSaysWhatGoesWhere) {
  options_.config.code_roots = {"/opt/cutlass"};
  options_.config.tool_calls_per_proposal = 3;
  options_.max_cost_usd = 2;
  std::string s = LlmDisclosure("openai gpt-4o at https://api.openai.com/v1", options_);
  for (const char* want :
       {"https://api.openai.com/v1", "reference source", "candidate's source", "/opt/cutlass", "US$2.00"})
    EXPECT_NE(s.find(want), std::string::npos) << want;
}

// A store in a fresh folder holding one running run, for the transcript tests.
struct StoreWithRun {
  void Open() {
    auto d = TempDir::Create("kpilot-llm-store-");
    ASSERT_TRUE(d.ok());
    dir.emplace(std::move(d).value());
    auto s = Store::Open(dir->path());
    ASSERT_TRUE(s.ok());
    store = std::move(s).value();
    RunRecord run;
    run.task_name = "saxpy";
    run.status = "running";
    auto created = store->CreateRun(run);
    ASSERT_TRUE(created.ok());
    id = *created;
  }
  std::optional<TempDir> dir;
  std::unique_ptr<Store> store;
  int64_t id = 0;
};

TEST_F(LlmGeneratorTest, TranscriptsGoToTheRunInTheStore) {
  StoreWithRun sr;
  ASSERT_NO_FATAL_FAILURE(sr.Open());
  RunTranscripts sink(StoreTranscriptArchive(*sr.store));
  sink.SetContext(sr.id, 4);
  llm::Exchange e;
  e.endpoint = "openai fake";
  e.request_json = R"({"model":"fake"})";
  e.response_json = R"({"choices":[]})";
  e.status = 200;
  e.usage.input_tokens = 12;
  sink.Record(e);
  auto events = sr.store->ListRunEvents(sr.id);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].kind, "transcript");
  auto j = nlohmann::json::parse((*events)[0].payload_json);
  EXPECT_EQ(j["parent"], 4);
  EXPECT_EQ(j["usage"]["input_tokens"], 12);
  auto blob = sr.store->GetBlob(j["blob"].get<std::string>());
  ASSERT_TRUE(blob.ok());
  EXPECT_NE(blob->find("\"model\\\":\\\"fake\\\""), std::string::npos) << *blob;
}

TEST_F(LlmGeneratorTest, TranscriptsOfRequestsInFlightForSeveralParentsNameTheirOwn) {
  StoreWithRun sr;
  ASSERT_NO_FATAL_FAILURE(sr.Open());
  RunTranscripts sink(StoreTranscriptArchive(*sr.store));
  sink.SetContext(sr.id, 9);  // the last parent asked for; requests for 3 and 5 are still running
  llm::Exchange e;
  e.endpoint = "openai fake";
  std::thread a([&] {
    RunTranscripts::Scope scope(sr.id, 3);
    sink.Record(e);
  });
  std::thread b([&] {
    RunTranscripts::Scope scope(sr.id, 5);
    sink.Record(e);
  });
  a.join();
  b.join();
  sink.Record(e);  // outside any scope: the context's
  auto events = sr.store->ListRunEvents(sr.id);
  ASSERT_TRUE(events.ok());
  std::multiset<int> parents;
  for (const auto& ev : *events) parents.insert(nlohmann::json::parse(ev.payload_json)["parent"].get<int>());
  EXPECT_EQ(parents, (std::multiset<int>{3, 5, 9}));
}

}  // namespace
}  // namespace kpilot
