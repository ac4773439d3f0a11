// kpilot optimize with the llm: generator through a real local HTTP server speaking each wire
// format (scripted kernels: naive → better), with the command: generator and a fake agent
// script, and the spending cap — the binary as a user runs it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "core/fs.h"
#include "fake_llm_server.h"
#include "run_kpilot.h"
#include "support/sync.h"

namespace kpilot {
namespace {

namespace fs = std::filesystem;
using llm::testing::FakeLlmServer;
using llm::testing::FakeReply;

fs::path Saxpy() { return testing::SourceDir() / "examples" / "host" / "saxpy"; }

std::string Source(const fs::path& p) {
  auto s = ReadFile(p);
  EXPECT_TRUE(s.ok()) << p;
  return s.ok() ? *s : "";
}

// The reference made parallel: a third distinct, correct kernel.
std::string ParallelReference() {
  std::string s = Source(Saxpy() / "reference.cpp");
  size_t at = s.find("  for (int64_t i = 0;");
  return s.insert(at, "#pragma omp parallel for simd schedule(static)\n");
}

class GeneratorsCli : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = TempDir::Create("kpilot-generators-cli-");
    ASSERT_TRUE(d.ok());
    dir_.emplace(std::move(d).value());
    config_ = dir_->path() / "llm.toml";
    ASSERT_TRUE(WriteFileAtomic(config_,
                                "max_retries = 0\nreasks = 2\ntool_calls_per_proposal = 0\n"
                                "[prices.\"fake-model\"]\ninput_per_mtok = 1000000\noutput_per_mtok = 0\n")
                    .ok());
  }
  std::vector<std::string> Args(const std::string& generator, int budget) {
    return {"optimize",     Saxpy().string(),
            "--from",       (Saxpy() / "reference.cpp").string(),
            "--generator",  generator,
            "--budget",     std::to_string(budget),
            "--drafts",     "1",
            "--workload",   "12M-odd",
            "--store",      (dir_->path() / "store").string(),
            "--llm-config", config_.string(),
            "--json"};
  }
  // Scripts naive → no code (re-asked) → better → parallel reference, runs the search, and
  // checks what a user relies on.
  void RunThroughServer(bool anthropic) {
    FakeLlmServer server;
    server.Push(FakeReply::Text("I would parallelize the loop with OpenMP."));
    server.Push(FakeReply::Code(Source(Saxpy() / "candidates" / "omp_simd.cpp")));
    server.Push(FakeReply::Code(ParallelReference()));
    server.SetFallback([](const llm::testing::RecordedRequest&) { return FakeReply::Code(ParallelReference()); });
    ::setenv("ANTHROPIC_API_KEY", "sk-ant-test-secret-0123456789", 1);
    std::string spec = anthropic ? server.AnthropicSpec("fake-model") : server.OpenAISpec("fake-model");
    auto args = Args(spec, 3);
    args.insert(args.end(), {"--max-cost", "1000"});
    ProcessResult r = testing::RunKpilot(dir_->path(), args, 600);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // Stated up front, before the first request.
    EXPECT_NE(r.err.find("the llm generator sends to"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("reference source"), std::string::npos);
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["stop_reason"], "budget");
    EXPECT_EQ(j["evaluations"], 3);
    EXPECT_EQ(j["generator"]["requests"], 3) << "one re-ask, two candidates";
    EXPECT_EQ(j["generator"]["input_tokens"], 300);
    EXPECT_DOUBLE_EQ(j["generator"]["cost_usd"].get<double>(), 300.0);
    auto requests = server.Requests();
    ASSERT_EQ(requests.size(), 3u);
    for (const auto& q : requests) EXPECT_EQ(q.path, anthropic ? "/v1/messages" : "/v1/chat/completions");
    EXPECT_NE(requests[0].body.find("kpilot_abi_version"), std::string::npos) << "the ABI header is in the prompt";
    EXPECT_NE(requests[0].body.find("saxpy"), std::string::npos);
    EXPECT_NE(requests[1].body.find("no fenced code block"), std::string::npos) << "the re-ask says why";

    ProcessResult show = testing::RunKpilot(dir_->path(), {"show", std::to_string(j["run"].get<int>()), "--store",
                                                           (dir_->path() / "store").string(), "--json"});
    ASSERT_EQ(show.exit_code, 0) << show.err;
    auto s = nlohmann::json::parse(show.out);
    EXPECT_EQ(s["generator_spend"]["requests"], 3);
    EXPECT_EQ(s["generator_spend"]["transcripts"], 3);
    ASSERT_EQ(s["nodes"].size(), 3u);
    for (const auto& n : s["nodes"]) EXPECT_EQ(n["verdict"], "passed") << n.dump();
    EXPECT_NE(s["nodes"][1]["summary"].get<std::string>().find("after 1 re-ask"), std::string::npos)
        << s["nodes"][1].dump();
    // Keys never reach the store.
    for (auto& e : fs::recursive_directory_iterator(dir_->path() / "store" / "blobs")) {
      if (!e.is_regular_file()) continue;
      EXPECT_EQ(Source(e.path()).find("sk-ant-test-secret"), std::string::npos) << e.path();
    }
  }
  std::optional<TempDir> dir_;
  fs::path config_;
};

TEST_F(GeneratorsCli, OptimizeThroughAnOpenAICompatibleServer) { RunThroughServer(false); }

TEST_F(GeneratorsCli, OptimizeThroughAnAnthropicServer) { RunThroughServer(true); }

TEST_F(GeneratorsCli, TheSpendingCapStopsTheRun) {
  FakeLlmServer server;
  server.SetFallback([](const llm::testing::RecordedRequest&) { return FakeReply::Code(ParallelReference()); });
  auto args = Args(server.OpenAISpec("fake-model"), 10);
  args.insert(args.end(), {"--max-cost", "150"});  // each request costs $100 at the configured price
  ProcessResult r = testing::RunKpilot(dir_->path(), args, 600);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["stop_reason"], "cost");
  EXPECT_EQ(j["generator"]["requests"], 2);
  EXPECT_EQ(server.RequestCount(), 2u);
}

TEST_F(GeneratorsCli, SlowRequestsRunSideBySide) {
  // Each reply is a distinct kernel (one more exported function). After the first answer the cap
  // ($1000 at $100 a request) lets the next expansions' requests go out together, up to the
  // expansions in flight: every later reply is held until two requests are in flight at once.
  FakeLlmServer server;
  std::mutex mu;
  std::condition_variable cv;
  int n = 0, held = 0;
  bool side_by_side = false;
  server.SetFallback([&](const llm::testing::RecordedRequest&) {
    std::unique_lock<std::mutex> lock(mu);
    const int i = ++n;
    if (i > 1) {
      side_by_side = side_by_side || ++held >= 2;
      cv.notify_all();
      // In vain, the run goes on and MaxConcurrent below says so.
      cv.wait_for(lock, testing::kEventTimeout, [&] { return side_by_side; });
      --held;
    }
    return FakeReply::Code(ParallelReference() + "\nextern \"C\" int kpilot_test_variant_" + std::to_string(i) +
                           "() { return " + std::to_string(i) + "; }\n");
  });
  auto args = Args(server.OpenAISpec("fake-model"), 5);
  args.insert(args.end(), {"--max-cost", "1000", "--in-flight", "3"});
  ProcessResult r = testing::RunKpilot(dir_->path(), args, 600);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["stop_reason"], "budget");
  EXPECT_EQ(j["evaluations"], 5);
  EXPECT_GE(server.MaxConcurrent(), 2) << "requests for several expansions were in flight at once";
  EXPECT_EQ(server.RequestCount(), 4u) << "one request per draft: none beyond the budget";
}

TEST_F(GeneratorsCli, OptimizeThroughACommandAgent) {
  std::string agent = (testing::SourceDir() / "tests" / "generate" / "fake_agent.sh").string();
  ProcessResult r = testing::RunKpilot(dir_->path(), Args("command:'" + agent + "' copy", 3), 600);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("runs as YOU in a sandbox"), std::string::npos) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["evaluations"], 3);
  ProcessResult show = testing::RunKpilot(dir_->path(), {"show", std::to_string(j["run"].get<int>()), "--store",
                                                         (dir_->path() / "store").string(), "--json"});
  auto s = nlohmann::json::parse(show.out);
  ASSERT_EQ(s["nodes"].size(), 3u);
  EXPECT_EQ(s["nodes"][1]["verdict"], "passed");
  EXPECT_NE(s["nodes"][1]["summary"].get<std::string>().find("fake agent copy"), std::string::npos);
  EXPECT_EQ(s["generator_spend"]["transcripts"], 2) << "each agent run is archived";
}

TEST_F(GeneratorsCli, BadGeneratorSpecsAreUsageErrors) {
  for (const char* spec : {"llm:nope:model", "command:'unterminated", "magic"}) {
    ProcessResult r = testing::RunKpilot(dir_->path(), Args(spec, 2));
    EXPECT_EQ(r.exit_code, 2) << spec << ": " << r.err;
  }
}

}  // namespace
}  // namespace kpilot
