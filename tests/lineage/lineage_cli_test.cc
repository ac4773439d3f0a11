// `kpilot lineage` end to end on a host expert (examples/host/sgemm's register_tile_expert.cpp)
// through the local LLM server serving tests/lineage/host_sgemm/script.json: simplifications,
// citations and rebuilds, bad ones included — nothing removed, two mechanisms removed, an
// incorrect kernel, a citation that does not match the code, a rebuild far slower than the
// pre-removal kernel. Two shared CPU cores cannot time to 1%, so this run uses --round-trip-min 0.5
// (the bad rebuild is the naive reference, several times slower); the 0.99 rule itself is tested
// with the measurement double (walk_test.cc).
#include <gtest/gtest.h>

#include "card_check.h"
#include "core/fs.h"
#include "fake_llm_server.h"
#include "../cli/run_kpilot.h"

namespace kpilot {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(LineageCli, MinesCardsFromAHostExpertThroughTheScriptedServer) {
  fs::path src = testing::SourceDir();
  std::vector<llm::testing::FakeReply> replies;
  std::string error;
  ASSERT_TRUE(llm::testing::LoadFakeScript(src / "tests" / "lineage" / "host_sgemm" / "script.json", &replies, &error))
      << error;
  llm::testing::FakeLlmServer server;
  for (auto& r : replies) server.Push(r);
  auto dir = TempDir::Create("kpilot-lineage-cli-");
  ASSERT_TRUE(dir.ok());
  fs::path config = dir->path() / "llm.toml", out = dir->path() / "cards", store = dir->path() / "store";
  ASSERT_TRUE(WriteFileAtomic(config, "max_retries = 0\n").ok());
  fs::path task = src / "examples" / "host" / "sgemm";
  ProcessResult r = testing::RunKpilot(
      dir->path(),
      {"lineage", task.string(), (task / "candidates" / "register_tile_expert.cpp").string(), "--generator",
       server.OpenAISpec("scripted"), "--llm-config", config.string(), "--out", out.string(), "--store", store.string(),
       "--trials", "1", "--round-trip-min", "0.5", "--workload", "256x384x320", "--json"},
      900);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = json::parse(r.out);
  EXPECT_EQ(j["stop_reason"], "naive");
  EXPECT_NE(j["stop_detail"].get<std::string>().find("reference's"), std::string::npos) << j["stop_detail"];
  EXPECT_GT(j["expert_speedup"].get<double>(), 1.0) << "the expert is faster than the naive reference";
  ASSERT_EQ(j["steps"].size(), 2u) << j.dump(2);
  EXPECT_EQ(j["steps"][0]["feature"], "register-tile");
  EXPECT_EQ(j["steps"][1]["feature"], "vector-global-128");
  EXPECT_EQ(j["expert_features"], json({"register-tile", "vector-global-128"}));
  EXPECT_EQ(j["naive_features"], json::array());
  std::vector<std::string> stages;
  for (const auto& a : j["rejected"]) stages.push_back(a["stage"]);
  EXPECT_EQ(stages, (std::vector<std::string>{"code", "declaration", "measure", "cite", "round-trip"})) << j["rejected"].dump(2);
  EXPECT_NE(j["rejected"][0]["reason"].get<std::string>().find("nothing removed"), std::string::npos);
  EXPECT_NE(j["rejected"][1]["reason"].get<std::string>().find("several mechanisms"), std::string::npos);
  EXPECT_NE(j["rejected"][2]["reason"].get<std::string>().find("incorrect"), std::string::npos);
  EXPECT_NE(j["rejected"][3]["reason"].get<std::string>().find("does not match the code"), std::string::npos);
  EXPECT_NE(j["rejected"][4]["reason"].get<std::string>().find("pre-removal speed"), std::string::npos);
  EXPECT_EQ(server.Pending(), 0u);
  auto requests = server.Requests();
  ASSERT_EQ(requests.size(), 14u);
  EXPECT_NE(requests[1].body.find("nothing removed"), std::string::npos) << "a rejection is fed back to the next proposal";
  EXPECT_NE(requests[8].body.find("pre-removal speed"), std::string::npos);
  EXPECT_NE(r.err.find("step 1 accepted: register-tile"), std::string::npos) << r.err;

  // Cards, naive → expert: the vectors first, then the register tile that requires them.
  ASSERT_EQ(j["cards"].size(), 2u);
  EXPECT_TRUE(fs::exists(out / "cpu-vector-rows" / "SKILL.md"));
  auto tile = ReadFile(out / "cpu-register-tile" / "SKILL.md");
  ASSERT_TRUE(tile.ok());
  EXPECT_NE(tile->find("requires: [\"vector-global-128\"]"), std::string::npos) << *tile;
  EXPECT_NE(tile->find("provides: [\"register-tile\"]"), std::string::npos);
  EXPECT_NE(tile->find("kpilot_version: \"kpilot 0.1.0\""), std::string::npos);
  EXPECT_NE(tile->find("```cpp"), std::string::npos);
  // The skill library's validation: the mined host cards (platform x86-64 or aarch64) are valid.
  EXPECT_TRUE(testing::SkillLibraryProblems(out).empty());
  EXPECT_TRUE(j["card_problems"].empty()) << j["card_problems"].dump(2);
  if (testing::HavePyYaml()) {
    std::string parsed;
    testing::SkillsCheckProblems(out, &parsed);
    auto fm = json::parse(parsed)["cpu-register-tile"];
    const auto& m = fm["effect"]["measured"][0];
    EXPECT_EQ(m["provenance"]["task"], "sgemm");
    EXPECT_EQ(m["provenance"]["run"], j["run"]);
    EXPECT_GT(m["paired_speedup"].get<double>(), 0);
    EXPECT_EQ(m["round_trip"].size(), 1u);
  }

  // The run is in the store with every attempt, verdict and transcript.
  ProcessResult show = testing::RunKpilot(dir->path(), {"show", std::to_string(j["run"].get<int>()), "--store", store.string(), "--json"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  auto s = json::parse(show.out);
  EXPECT_EQ(s["status"], "finished");
  EXPECT_EQ(s["stop_reason"], "naive");
  EXPECT_EQ(s["generator_spend"]["transcripts"], 14);
  int accepts = 0, rejects = 0;
  for (const auto& h : s["history"]) {
    accepts += h["kind"] == "accept";
    rejects += h["kind"] == "reject";
  }
  EXPECT_EQ(accepts, 2);
  EXPECT_EQ(rejects, 5);
  EXPECT_EQ(s["nodes"].size(), 3u);
}

TEST(LineageCli, UsageErrors) {
  fs::path task = testing::SourceDir() / "examples" / "host" / "sgemm";
  auto dir = TempDir::Create("kpilot-lineage-cli-");
  ASSERT_TRUE(dir.ok());
  ProcessResult r = testing::RunKpilot(dir->path(), {"lineage", task.string(), (task / "reference.cpp").string(),
                                                     "--generator", "params", "--store", (dir->path() / "s").string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("needs a generator that writes code"), std::string::npos) << r.err;
  r = testing::RunKpilot(dir->path(), {"lineage", task.string(), (task / "missing.cpp").string(), "--generator", "llm:openai:x"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

}  // namespace
}  // namespace kpilot
