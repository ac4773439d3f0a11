// The ablation switches (--feedback, --tools, --memory, --skills) change what the generator
// receives: checked on the pure shaping of a context, through the loop with a recording generator,
// and in what the llm: prompt and the params generator do with it.
#include <gtest/gtest.h>

#include <deque>
#include <mutex>

#include "core/fs.h"
#include "optimize/optimizer.h"
#include "generate/code_tools.h"
#include "generate/generator_test_util.h"
#include "generate/llm_generator.h"
#include "generate/prompt.h"
#include "task/loader.h"
#include "test_paths.h"

namespace kpilot {
namespace {

Finding Occupancy() {
  Finding f;
  f.id = "OccupancyLimiter";
  f.severity = 0.8;
  f.guidance = "raise occupancy: fewer registers per thread";
  f.evidence = {{"achieved_occupancy", 0.25}, {"limiter", "registers"}};
  return f;
}

ProposalContext Profiled() {
  ProposalContext c;
  c.parent_verdict = "passed";
  c.parent_speedup = 1.2;
  c.bottleneck = "memory";
  c.findings = {Occupancy()};
  c.parent_metrics = R"({"bottleneck":"memory","median_ms":{"64M":0.5}})";
  c.memory_summary = "Best results:\n- #1 1.2x";
  return c;
}

TEST(Ablations, DefaultsLeaveTheContextAsItIs) {
  OptimizeOptions o;
  ProposalContext c = Profiled();
  ApplyAblations(o, &c);
  EXPECT_EQ(c.bottleneck, "memory");
  ASSERT_EQ(c.findings.size(), 1u);
  EXPECT_EQ(c.findings[0].guidance, "raise occupancy: fewer registers per thread");
  EXPECT_FALSE(c.profile_on_request);
  EXPECT_FALSE(c.memory_summary.empty());
  EXPECT_EQ(c.parent_metrics, Profiled().parent_metrics);
}

TEST(Ablations, FeedbackNoneHidesEveryMeasurementButKeepsTheVerdict) {
  OptimizeOptions o;
  ASSERT_TRUE(ApplyAblationFlags("none", "proactive", "on", &o).ok());
  ProposalContext c = Profiled();
  ApplyAblations(o, &c);
  EXPECT_TRUE(c.bottleneck.empty());
  EXPECT_TRUE(c.findings.empty());
  EXPECT_TRUE(c.parent_metrics.empty());
  EXPECT_EQ(c.parent_verdict, "passed");
  EXPECT_DOUBLE_EQ(c.parent_speedup, 1.2);
}

TEST(Ablations, FeedbackRawKeepsTheNumbersAndDropsTheToolsVerdicts) {
  OptimizeOptions o;
  ASSERT_TRUE(ApplyAblationFlags("raw", "proactive", "on", &o).ok());
  EXPECT_TRUE(o.raw_metrics) << "the numbers reach llm:/command: through their raw-metrics section";
  ProposalContext c = Profiled();
  ApplyAblations(o, &c);
  EXPECT_TRUE(c.findings.empty());
  EXPECT_TRUE(c.bottleneck.empty());
  auto m = nlohmann::json::parse(c.parent_metrics);
  EXPECT_FALSE(m.contains("bottleneck")) << "a class is a tool's verdict, not a counter";
  EXPECT_EQ(m["median_ms"]["64M"], 0.5);
  EXPECT_EQ(m["counters"]["achieved_occupancy"], 0.25);
  EXPECT_EQ(c.parent_metrics.find("OccupancyLimiter"), std::string::npos) << "no finding is named";
  // In the llm: prompt: the numbers, and no guidance.
  Task task;
  PromptOptions po;
  po.raw_metrics = o.raw_metrics;
  PromptVars v = BuildPromptVars(task, c, po);
  EXPECT_EQ(v["profile"], "");
  EXPECT_NE(v["raw_metrics"].find("achieved_occupancy"), std::string::npos);
  EXPECT_EQ(v["raw_metrics"].find("raise occupancy"), std::string::npos);
}

TEST(Ablations, ToolsOnRequestHoldsTheFindingsForGetProfile) {
  OptimizeOptions o;
  ASSERT_TRUE(ApplyAblationFlags("tools", "on-request", "on", &o).ok());
  ProposalContext c = Profiled();
  ApplyAblations(o, &c);
  EXPECT_TRUE(c.profile_on_request);
  ASSERT_EQ(c.findings.size(), 1u) << "kept for the tool";
  Task task;
  PromptOptions po;
  po.tools = true;
  PromptVars v = BuildPromptVars(task, c, po);
  EXPECT_EQ(v["profile"].find("raise occupancy"), std::string::npos) << v["profile"];
  EXPECT_NE(v["profile"].find("get_profile"), std::string::npos);
  po.tools = false;
  EXPECT_EQ(BuildPromptVars(task, c, po)["profile"], "") << "no tools: the generator gets no guidance at all";
  CodeTools tools(CodeToolsOptions{}, &c);
  EXPECT_NE(tools.Call("get_profile", nlohmann::json::object()).find("raise occupancy"), std::string::npos);
  // Proactive: the same context shows the guidance in the prompt.
  c.profile_on_request = false;
  EXPECT_NE(BuildPromptVars(task, c, po)["profile"].find("raise occupancy"), std::string::npos);
}

TEST(Ablations, MemoryOffDropsTheSummary) {
  OptimizeOptions o;
  ASSERT_TRUE(ApplyAblationFlags("tools", "proactive", "off", &o).ok());
  ProposalContext c = Profiled();
  ApplyAblations(o, &c);
  EXPECT_TRUE(c.memory_summary.empty());
  EXPECT_EQ(c.findings.size(), 1u);
}

TEST(Ablations, FlagsAreCheckedAndStoredWithTheRun) {
  OptimizeOptions o;
  EXPECT_FALSE(ApplyAblationFlags("counters", "proactive", "on", &o).ok());
  EXPECT_FALSE(ApplyAblationFlags("tools", "lazy", "on", &o).ok());
  EXPECT_FALSE(ApplyAblationFlags("tools", "proactive", "maybe", &o).ok());
  o.raw_metrics = true;
  EXPECT_FALSE(ApplyAblationFlags("none", "proactive", "on", &o).ok()) << "none with --raw-metrics contradicts";
  o = OptimizeOptions{};
  o.task_dir = "t";
  ASSERT_TRUE(ApplyAblationFlags("raw", "on-request", "off", &o).ok());
  auto back = OptimizeOptionsFromJson(ToJson(o));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->feedback, FeedbackMode::kRaw);
  EXPECT_EQ(back->guidance, GuidanceMode::kOnRequest);
  EXPECT_FALSE(back->memory);
  // Runs stored before the switches: tools, proactive, memory on.
  auto old = ToJson(OptimizeOptions{});
  old.erase("feedback");
  old.erase("tools");
  old.erase("memory");
  auto defaults = OptimizeOptionsFromJson(old);
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->feedback, FeedbackMode::kTools);
  EXPECT_EQ(defaults->guidance, GuidanceMode::kProactive);
  EXPECT_TRUE(defaults->memory);
}

TEST(HostThreads, ReachEveryEvaluationAndAreNotStoredWithARun) {
  OptimizeOptions o;
  o.task_dir = "t";
  o.host_threads = 4;
  EXPECT_EQ(BaseEvalOptions(o).host_threads, 4);
  EXPECT_FALSE(ToJson(o).contains("host_threads"));  // the process's concurrency, not the run's
  auto config = ToJson(OptimizeOptions{});
  config["host_threads"] = 3;  // what kpilot bench adds to its runner's copy of the config
  auto read = OptimizeOptionsFromJson(config);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->host_threads, 3);
  EXPECT_EQ(OptimizeOptionsFromJson(ToJson(OptimizeOptions{}))->host_threads, 0);
}

TEST(SearchForGenerator, TheParamsGeneratorSpreadsItsParentsWiderAndResumeKeepsTheStoredConstant) {
  OptimizeOptions o;
  o.task_dir = "t";
  FitSearchToGenerator(&o);  // the default generator: params
  EXPECT_DOUBLE_EQ(o.search.exploration, kGlobalDraftsExploration);
  auto stored = OptimizeOptionsFromJson(ToJson(o));
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_DOUBLE_EQ(stored->search.exploration, kGlobalDraftsExploration);
  for (const char* g : {"llm:openai:gpt-5", "command:./agent.sh", "folder:runs/1"}) {
    o.generator = g;
    FitSearchToGenerator(&o);
    EXPECT_DOUBLE_EQ(o.search.exploration, SearchConfig{}.exploration) << g;
  }
  EXPECT_GT(kGlobalDraftsExploration, SearchConfig{}.exploration);
}

// ---- Through the loop ----------------------------------------------------------------------------

// Every evaluation passes, a little faster each time, and (cuda) reports a kernel with 255
// registers and spills, so the static tools have findings for every node.
class ProfiledExecutor : public Executor {
 public:
  std::future<EvalJobResult> Submit(EvalJob job) override {
    EvalJobResult r;
    auto src = ReadFile(job.source);
    r.object_sha =
        "sha-" + std::to_string(std::hash<std::string>()((src.ok() ? *src : "") + ParamsText(job.params, "")));
    if (job.admit && !job.admit(r.object_sha)) r.skipped = true;
    devices.push_back(job.options.device);
    Evaluation& e = r.evaluation;
    e.verdict.kind = VerdictKind::kPassed;
    double s = 1.0 + 0.1 * static_cast<double>(n_++);
    e.speedup_geomean = s;
    e.speedup_geomean_ci = {s * 0.99, s * 1.01};
    KernelResources k;
    k.name = "vector_add_kernel";
    k.arch = "sm_90a";
    k.registers = 255;
    k.spill_stores = 256;
    k.spill_loads = 256;
    e.compile.resources.push_back(k);
    WorkloadTiming t;
    t.workload = "64M";
    t.candidate.median = 1.0 / s;
    e.timings.push_back(t);
    std::promise<EvalJobResult> p;
    p.set_value(std::move(r));
    return p.get_future();
  }
  double BusySeconds() const override { return 0; }
  double ElapsedSeconds() const override { return 1; }
  std::vector<int> devices;

 private:
  int n_ = 0;
};

// Records every context it is given; makes a distinct draft each time.
class RecordingGenerator : public Generator {
 public:
  std::string name() const override { return "recording"; }
  std::future<Result<std::vector<Draft>>> Propose(const ProposalContext& ctx) override {
    contexts.push_back(ctx);
    Draft d;
    d.source = ctx.parent_source + "// variant " + std::to_string(contexts.size()) + "\n";
    d.source_name = "variant.cu";
    d.summary = "variant " + std::to_string(contexts.size());
    std::promise<Result<std::vector<Draft>>> p;
    p.set_value(std::vector<Draft>{d});
    return p.get_future();
  }
  std::vector<ProposalContext> contexts;
};

class NoProgress : public ProgressSink {
 public:
  void Event(const nlohmann::json&) override {}
};

class AblationLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = TempDir::Create("kpilot-ablation-");
    ASSERT_TRUE(d.ok());
    dir_.emplace(std::move(d).value());
    auto s = Store::Open(dir_->path() / "store");
    ASSERT_TRUE(s.ok());
    store_ = std::move(s).value();
    auto t = LoadTask(testing::SourceDir() / "examples" / "cuda" / "vector_add");
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    task_ = *t;
    o_.task_dir = task_.dir.string();
    o_.from = (task_.dir / "candidates" / "vector_grid_stride.cu").string();
    o_.budget = 4;
    o_.drafts_per_expansion = 1;
    o_.pipeline_depth = 1;
    o_.arch = "sm_90a";
  }
  // The contexts the generator received in a run with `o_`.
  std::vector<ProposalContext> Run() {
    RecordingGenerator generator;
    ProfiledExecutor executor;
    NoProgress progress;
    Optimizer optimizer(task_, generator, executor, *store_, progress);
    auto res = optimizer.Run(o_);
    EXPECT_TRUE(res.ok()) << res.status().ToString();
    devices_ = executor.devices;
    return generator.contexts;
  }
  std::optional<TempDir> dir_;
  std::unique_ptr<Store> store_;
  Task task_;
  OptimizeOptions o_;
  std::vector<int> devices_;
};

TEST_F(AblationLoopTest, EachSwitchChangesWhatTheGeneratorReceives) {
  auto full = Run();
  ASSERT_GE(full.size(), 2u);
  ASSERT_FALSE(full.back().findings.empty()) << "precondition: the static tools found something";
  ASSERT_FALSE(full.back().bottleneck.empty());
  ASSERT_FALSE(full.back().memory_summary.empty()) << "precondition: the memory has attempts";
  EXPECT_FALSE(full.back().profile_on_request);

  ASSERT_TRUE(ApplyAblationFlags("none", "proactive", "on", &o_).ok());
  auto none = Run();
  ASSERT_FALSE(none.empty());
  for (const auto& c : none) {
    EXPECT_TRUE(c.findings.empty());
    EXPECT_TRUE(c.bottleneck.empty());
    EXPECT_TRUE(c.parent_metrics.empty());
  }

  ASSERT_TRUE(ApplyAblationFlags("raw", "proactive", "on", &o_).ok());
  auto raw = Run();
  ASSERT_FALSE(raw.empty());
  EXPECT_TRUE(raw.back().findings.empty());
  EXPECT_NE(raw.back().parent_metrics.find("counters"), std::string::npos) << raw.back().parent_metrics;

  ASSERT_TRUE(ApplyAblationFlags("tools", "on-request", "on", &o_).ok());
  auto on_request = Run();
  ASSERT_FALSE(on_request.empty());
  EXPECT_TRUE(on_request.back().profile_on_request);
  EXPECT_FALSE(on_request.back().findings.empty());

  ASSERT_TRUE(ApplyAblationFlags("tools", "proactive", "off", &o_).ok());
  auto no_memory = Run();
  ASSERT_GE(no_memory.size(), 2u);
  for (const auto& c : no_memory) EXPECT_TRUE(c.memory_summary.empty());
  EXPECT_FALSE(no_memory.back().findings.empty());

  o_.memory = true;
  o_.skills = false;
  auto no_skills = Run();
  ASSERT_FALSE(no_skills.empty());
  EXPECT_FALSE(no_skills.back().skills_enabled);
}

TEST_F(AblationLoopTest, EvaluationsRunOnTheRunsDevice) {
  o_.device = 3;
  Run();
  ASSERT_FALSE(devices_.empty());
  for (int d : devices_) EXPECT_EQ(d, 3);
}

TEST(AblationParams, OnRequestLeavesTheParamsGeneratorUnsteered) {
  auto t = LoadTask(testing::SourceDir() / "examples" / "cuda" / "bias_gelu");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto generator = MakeGenerator("params", *t);
  ASSERT_TRUE(generator.ok()) << generator.status().ToString();
  ProposalContext c = Profiled();
  c.task = &*t;
  c.k = 2;
  c.parent_source = "// parent\n";
  c.parent_source_name = "p.cu";
  c.profile_on_request = true;
  auto drafts = (*generator)->Propose(c).get();
  ASSERT_TRUE(drafts.ok()) << drafts.status().ToString();
  for (const auto& d : *drafts) {
    EXPECT_TRUE(d.targeted_finding.empty()) << d.summary;
    EXPECT_NE(d.summary.find("tools on request"), std::string::npos) << d.summary;
  }
}

// The llm: generator under --guidance on-request: the prompt holds no guidance; a get_profile call
// returns it. Proactive: the same context's prompt carries it.
class ToolCallingClient : public llm::ChatClient {
 public:
  Result<llm::ChatReply> Complete(const llm::ChatRequest& r) override {
    std::lock_guard<std::mutex> lock(mu_);
    requests.push_back(r);
    llm::ChatReply reply;
    reply.stop_reason = "stop";
    if (requests.size() == 1 && call_tool) {
      reply.tool_calls = {{"c1", "get_profile", nlohmann::json::object()}};
      reply.stop_reason = "tool_calls";
    } else {
      reply.text = "Summary: wider loads\n```cpp\n" + testing::kMinimalKernel + "```\n";
    }
    return reply;
  }
  std::string Describe() const override { return "fake"; }
  llm::Usage Spent() const override { return {}; }
  bool call_tool = true;
  std::vector<llm::ChatRequest> requests;

 private:
  std::mutex mu_;
};

std::string AllText(const llm::ChatRequest& r) {
  std::string s = r.system;
  for (const auto& m : r.messages) s += "\n" + m.content;
  return s;
}

TEST(AblationLlm, OnRequestGuidanceComesOnlyThroughGetProfile) {
  auto t = LoadTask(testing::SourceDir() / "examples" / "host" / "saxpy");
  ASSERT_TRUE(t.ok());
  LlmGeneratorOptions options;
  options.include_dir = testing::SourceDir() / "include";
  options.prompts_dir = testing::SourceDir() / "prompts";
  options.config.tool_calls_per_proposal = 2;
  options.config.reasks = 0;
  ProposalContext c = testing::ParentContext(*t, testing::kMinimalKernel);
  const std::string guidance = c.findings.front().guidance;  // "use wider loads"
  OptimizeOptions o;
  ASSERT_TRUE(ApplyAblationFlags("tools", "on-request", "on", &o).ok());
  ApplyAblations(o, &c);

  auto client = std::make_shared<ToolCallingClient>();
  auto p = MakeLlmGenerator("llm:openai:fake", *t, client, options);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  auto drafts = (*p)->Propose(c).get();
  ASSERT_TRUE(drafts.ok()) << drafts.status().ToString();
  ASSERT_EQ(client->requests.size(), 2u);
  const llm::ChatRequest& first = client->requests[0];
  EXPECT_EQ(AllText(first).find("scalar-global-loads"), std::string::npos) << "no finding in the prompt";
  EXPECT_EQ(AllText(first).find(guidance), std::string::npos) << "no guidance in the prompt";
  EXPECT_NE(AllText(first).find("get_profile"), std::string::npos) << "the prompt says where the profile is";
  bool answered = false;
  for (const auto& m : client->requests[1].messages)
    answered |= m.role == "tool" && m.content.find("scalar-global-loads") != std::string::npos &&
                m.content.find(guidance) != std::string::npos;
  EXPECT_TRUE(answered) << "get_profile served the held-back findings";

  // Proactive: the guidance is in the first prompt.
  ProposalContext pushed = testing::ParentContext(*t, testing::kMinimalKernel);
  auto proactive = std::make_shared<ToolCallingClient>();
  proactive->call_tool = false;
  auto q = MakeLlmGenerator("llm:openai:fake", *t, proactive, options);
  ASSERT_TRUE(q.ok());
  ASSERT_TRUE((*q)->Propose(pushed).get().ok());
  ASSERT_FALSE(proactive->requests.empty());
  EXPECT_NE(AllText(proactive->requests[0]).find(guidance), std::string::npos);
}

}  // namespace
}  // namespace kpilot
