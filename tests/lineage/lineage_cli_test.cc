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
  EXPECT_EQ(stages, (std::vector<std::string>{"code", "declaration", "measure", "cite", "round-trip"}))
      << j["rejected"].dump(2);
  EXPECT_NE(j["rejected"][0]["reason"].get<std::string>().find("nothing removed"), std::string::npos);
  EXPECT_NE(j["rejected"][1]["reason"].get<std::string>().find("several mechanisms"), std::string::npos);
  EXPECT_NE(j["rejected"][2]["reason"].get<std::string>().find("incorrect"), std::string::npos);
  EXPECT_NE(j["rejected"][3]["reason"].get<std::string>().find("does not match the code"), std::string::npos);
  EXPECT_NE(j["rejected"][4]["reason"].get<std::string>().find("pre-removal speed"), std::string::npos);
  EXPECT_EQ(server.Pending(), 0u);
  auto requests = server.Requests();
  ASSERT_EQ(requests.size(), 14u);
  EXPECT_NE(requests[1].body.find("nothing removed"), std::string::npos)
      << "a rejection is fed back to the next proposal";
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
  ProcessResult show = testing::RunKpilot(
      dir->path(), {"show", std::to_string(j["run"].get<int>()), "--store", store.string(), "--json"});
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

// --admit-on: after the same walk, each mined card is applied to a held-out task's start
// (examples/host/row_softmax's reference) by the scripted generator
// (tests/lineage/host_sgemm/admit_script.json) and gated by the harness. The first reply runs
// each row's passes as SIMD loops with an inline exp, on one thread (about 1.5x the scalar-expf
// reference): its card is admitted. The second is correct but does three times the work (about
// 0.25x): its card is rejected and written to OUT/rejected/, with the measured reason in its
// evidence.
TEST(LineageCli, AdmitsOnAHeldOutTaskOnlyTheCardThatMakesItFaster) {
  fs::path src = testing::SourceDir();
  std::vector<llm::testing::FakeReply> replies, admit;
  std::string error;
  ASSERT_TRUE(llm::testing::LoadFakeScript(src / "tests" / "lineage" / "host_sgemm" / "script.json", &replies, &error))
      << error;
  ASSERT_TRUE(
      llm::testing::LoadFakeScript(src / "tests" / "lineage" / "host_sgemm" / "admit_script.json", &admit, &error))
      << error;
  llm::testing::FakeLlmServer server;
  for (auto& r : replies) server.Push(r);
  for (auto& r : admit) server.Push(r);
  auto dir = TempDir::Create("kpilot-lineage-admit-");
  ASSERT_TRUE(dir.ok());
  fs::path config = dir->path() / "llm.toml", out = dir->path() / "cards", store = dir->path() / "store";
  ASSERT_TRUE(WriteFileAtomic(config, "max_retries = 0\n").ok());
  fs::path task = src / "examples" / "host" / "sgemm";
  fs::path held_out = src / "examples" / "host" / "row_softmax";
  ProcessResult r = testing::RunKpilot(dir->path(),
                                       {"lineage",
                                        task.string(),
                                        (task / "candidates" / "register_tile_expert.cpp").string(),
                                        "--generator",
                                        server.OpenAISpec("scripted"),
                                        "--llm-config",
                                        config.string(),
                                        "--out",
                                        out.string(),
                                        "--store",
                                        store.string(),
                                        "--trials",
                                        "1",
                                        "--round-trip-min",
                                        "0.5",
                                        "--workload",
                                        "256x384x320",
                                        "--admit-on",
                                        held_out.string(),
                                        "--admit-workload",
                                        "4096x1024",
                                        "--json"},
                                       900);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = json::parse(r.out);
  ASSERT_EQ(j["steps"].size(), 2u) << j.dump(2);
  EXPECT_EQ(server.Pending(), 0u);
  auto requests = server.Requests();
  ASSERT_EQ(requests.size(), 16u);
  // The admission prompt holds the card and the held-out start, not the mined task's kernels.
  EXPECT_NE(requests[14].body.find("cpu-vector-rows"), std::string::npos);
  EXPECT_NE(requests[14].body.find("row_softmax"), std::string::npos);
  EXPECT_NE(requests[14].body.find("reference.cpp"), std::string::npos);
  EXPECT_NE(requests[15].body.find("cpu-register-tile"), std::string::npos);

  const auto& ad = j["admission"];
  EXPECT_EQ(ad["task"], "row_softmax");
  EXPECT_EQ(ad["start"], "reference.cpp");
  ASSERT_EQ(ad["cards"].size(), 2u) << ad.dump(2);
  EXPECT_EQ(ad["cards"][0]["card"], "cpu-vector-rows");
  EXPECT_TRUE(ad["cards"][0]["admitted"].get<bool>()) << ad.dump(2);
  EXPECT_GT(ad["cards"][0]["ci"][0].get<double>(), 1.0);
  EXPECT_EQ(ad["cards"][1]["card"], "cpu-register-tile");
  EXPECT_FALSE(ad["cards"][1]["admitted"].get<bool>()) << ad.dump(2);
  EXPECT_EQ(ad["cards"][1]["stage"], "measure");
  EXPECT_LT(ad["cards"][1]["ci"][1].get<double>(), 1.0);
  EXPECT_NE(ad["cards"][1]["reason"].get<std::string>().find("not above 1"), std::string::npos);

  // The admitted card is in the library folder, the rejected one under rejected/, each with the
  // held-out measurement in its evidence; loading the folder skips rejected/.
  EXPECT_EQ(j["cards"], json({(out / "cpu-vector-rows" / "SKILL.md").string()}));
  EXPECT_EQ(j["rejected_cards"], json({(out / "rejected" / "cpu-register-tile" / "SKILL.md").string()}));
  EXPECT_FALSE(fs::exists(out / "cpu-register-tile"));
  auto admitted = ReadFile(out / "cpu-vector-rows" / "SKILL.md");
  ASSERT_TRUE(admitted.ok());
  EXPECT_NE(admitted->find("source: \"kpilot lineage --admit-on\""), std::string::npos) << *admitted;
  EXPECT_NE(admitted->find("admitted: true"), std::string::npos) << *admitted;
  auto rejected = ReadFile(out / "rejected" / "cpu-register-tile" / "SKILL.md");
  ASSERT_TRUE(rejected.ok());
  EXPECT_NE(rejected->find("admitted: false"), std::string::npos) << *rejected;
  EXPECT_NE(rejected->find("not above 1"), std::string::npos) << *rejected;
  EXPECT_TRUE(testing::SkillLibraryProblems(out).empty());
  EXPECT_TRUE(testing::SkillLibraryProblems(out / "rejected").empty());
  EXPECT_TRUE(j["card_problems"].empty()) << j["card_problems"].dump(2);

  // The store says which card was admitted.
  ProcessResult show = testing::RunKpilot(
      dir->path(), {"show", std::to_string(j["run"].get<int>()), "--store", store.string(), "--json"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  auto s = json::parse(show.out);
  std::vector<std::pair<std::string, bool>> admissions;
  for (const auto& h : s["history"])
    if (h["kind"] == "admission") admissions.push_back({h["payload"]["card"], h["payload"]["admitted"]});
  EXPECT_EQ(admissions,
            (std::vector<std::pair<std::string, bool>>{{"cpu-vector-rows", true}, {"cpu-register-tile", false}}))
      << s["history"].dump(2);
  EXPECT_EQ(s["generator_spend"]["transcripts"], 16);
}

TEST(LineageCli, UsageErrors) {
  fs::path task = testing::SourceDir() / "examples" / "host" / "sgemm";
  auto dir = TempDir::Create("kpilot-lineage-cli-");
  ASSERT_TRUE(dir.ok());
  ProcessResult r = testing::RunKpilot(dir->path(), {"lineage", task.string(), (task / "reference.cpp").string(),
                                                     "--generator", "params", "--store", (dir->path() / "s").string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("needs a generator that writes code"), std::string::npos) << r.err;
  r = testing::RunKpilot(dir->path(),
                         {"lineage", task.string(), (task / "missing.cpp").string(), "--generator", "llm:openai:x"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  // --admit-on needs a held-out task of the same backend, other than the mined one.
  r = testing::RunKpilot(dir->path(),
                         {"lineage", task.string(), (task / "reference.cpp").string(), "--generator", "llm:openai:x",
                          "--admit-on", task.string(), "--store", (dir->path() / "s").string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("held-out task"), std::string::npos) << r.err;
  fs::path cuda = testing::SourceDir() / "examples" / "cuda" / "row_softmax";
  r = testing::RunKpilot(dir->path(),
                         {"lineage", task.string(), (task / "reference.cpp").string(), "--generator", "llm:openai:x",
                          "--admit-on", cuda.string(), "--store", (dir->path() / "s").string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("of their backend"), std::string::npos) << r.err;
  r = testing::RunKpilot(dir->path(), {"lineage", task.string(), (task / "reference.cpp").string(), "--generator",
                                       "llm:openai:x", "--admit-from", (task / "reference.cpp").string()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("need --admit-on"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace kpilot
