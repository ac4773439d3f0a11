// kpilot skills … as a user runs it: list, show, validate, stats, retrieve; text and --json.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/run_kpilot.h"
#include "core/fs.h"
#include "skills/skills.h"
#include "store/store.h"
#include "test_paths.h"

namespace kpilot {
namespace {

namespace fs = std::filesystem;

class SkillsCli : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = TempDir::Create("kpilot-skills-cli-");
    ASSERT_TRUE(d.ok());
    dir_.emplace(std::move(*d));
  }
  // Runs kpilot in the temp folder with HOME there too, so no user card folder interferes.
  ProcessResult Kpilot(std::vector<std::string> args) {
    ProcessSpec spec;
    spec.argv = {(testing::BinaryDir() / "bin" / "kpilot").string()};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.cwd = dir_->path();
    spec.env = std::vector<std::string>{"HOME=" + dir_->path().string(), "PATH=/usr/bin:/bin"};
    spec.timeout_s = 120;
    auto r = SystemProcessRunner().Run(spec);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : ProcessResult{};
  }
  std::string Fixture(const std::string& rel) {
    return (testing::SourceDir() / "tests/fixtures/skills" / rel).string();
  }
  std::optional<TempDir> dir_;
};

TEST_F(SkillsCli, ListShowsEveryBuiltinCard) {
  ProcessResult r = Kpilot({"skills", "list"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("coalescing"), std::string::npos);
  EXPECT_NE(r.out.find("built-in"), std::string::npos);
  EXPECT_NE(r.out.find("28 cards"), std::string::npos) << r.out;
  r = Kpilot({"skills", "list", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["cards"].size(), 28u);
  EXPECT_EQ(j["cards"][0]["id"], "block-reduction");
  EXPECT_TRUE(j["overrides"].empty());
}

TEST_F(SkillsCli, ListWithSkillsDirAddsAndReportsOverrides) {
  auto text = ReadFile(testing::SourceDir() / "skills/split-k/SKILL.md");
  ASSERT_TRUE(text.ok());
  ASSERT_TRUE(WriteFileAtomic(dir_->path() / "mine/split-k/SKILL.md", *text).ok());
  ProcessResult r = Kpilot({"skills", "list", "--json", "--skills", Fixture("good"), "--skills", "mine"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["cards"].size(), 29u);
  ASSERT_EQ(j["overrides"].size(), 1u);
  EXPECT_EQ(j["overrides"][0]["id"], "split-k");
  EXPECT_NE(r.err.find("card split-k from mine/split-k/SKILL.md (--skills) overrides"), std::string::npos) << r.err;
  // A bad folder fails the load with every problem.
  r = Kpilot({"skills", "list", "--skills", Fixture("bad")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown finding id `scalar-loads`"), std::string::npos) << r.err;
}

TEST_F(SkillsCli, ShowPrintsOneCard) {
  ProcessResult r = Kpilot({"skills", "show", "split-k"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("param move    SPLIT_K up when tail-effect"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("## Recipe"), std::string::npos);
  r = Kpilot({"skills", "show", "split-k", "--json"});
  ASSERT_EQ(r.exit_code, 0);
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["id"], "split-k");
  EXPECT_EQ(j["params"][0]["param"], "SPLIT_K");
  EXPECT_EQ(j["origin"], "built-in");
  r = Kpilot({"skills", "show", "no-such-card"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no skill card `no-such-card`"), std::string::npos);
}

TEST_F(SkillsCli, ValidateCountsGoodCardsAndListsProblems) {
  ProcessResult r = Kpilot({"skills", "validate", (testing::SourceDir() / "skills").string(), Fixture("good")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("29 card(s) valid"), std::string::npos) << r.out;

  r = Kpilot({"skills", "validate", Fixture("bad")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown-finding/SKILL.md:27: field `triggers.findings`: unknown finding id `scalar-loads`"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("section-order/SKILL.md:44: field `body`"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("problem(s) in skill cards (0 card(s) valid)"), std::string::npos) << r.err;

  r = Kpilot({"skills", "validate", Fixture("bad"), "--json"});
  EXPECT_EQ(r.exit_code, 2);
  auto j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j["valid"].get<bool>());
  EXPECT_GE(j["problems"].size(), 9u);
  EXPECT_TRUE(j["problems"][0].contains("line"));
  EXPECT_TRUE(j["problems"][0].contains("fix"));

  r = Kpilot({"skills", "validate", "no/such/dir"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("skills folder no/such/dir does not exist"), std::string::npos) << r.err;
  EXPECT_EQ(Kpilot({"skills", "validate"}).exit_code, 2);
  EXPECT_EQ(Kpilot({"skills"}).exit_code, 2);
}

TEST_F(SkillsCli, StatsReadsTheStoreWithoutCreatingOne) {
  ProcessResult r = Kpilot({"skills", "stats", "--store", "st"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("(no skill usage recorded in st)"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir_->path() / "st"));
  {
    auto store = Store::Open(dir_->path() / "st");
    ASSERT_TRUE(store.ok());
    auto log = StoreUsageLog(**store);
    UsageEvent e;
    e.cards_offered = {"coalescing"};
    e.cards_applied = {"coalescing"};
    e.findings_fired = {"uncoalesced-global-access"};
    e.findings_applied = {"uncoalesced-global-access"};
    e.speedup = 2.0;
    ASSERT_TRUE(RecordUsage(*log, e).ok());
    e.speedup = 1.0;
    ASSERT_TRUE(RecordUsage(*log, e).ok());
  }
  r = Kpilot({"skills", "stats", "--store", "st"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("hit rate"), std::string::npos);
  EXPECT_NE(r.out.find("coalescing"), std::string::npos);
  EXPECT_NE(r.out.find("50.0%"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1.414×"), std::string::npos) << r.out;
  r = Kpilot({"skills", "stats", "--store", "st", "--json", "--improved-factor", "0.9"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["rows"].size(), 2u);
  EXPECT_EQ(j["rows"][0]["kind"], "card");
  EXPECT_EQ(j["rows"][0]["improved"], 2);
  EXPECT_EQ(j["rows"][1]["name"], "uncoalesced-global-access");
  EXPECT_EQ(Kpilot({"skills", "stats", "--store", "st", "--improved-factor", "0"}).exit_code, 2);
}

TEST_F(SkillsCli, RetrieveRanksForAContext) {
  ProcessResult r = Kpilot({"skills", "retrieve", "--finding", "occupancy-limiter=limiter: shared_memory", "--class",
                            "compute", "--platform", "sm_80", "--feature", "smem-tile", "--feature", "register-tile",
                            "--text", "f32 GEMM", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_FALSE(j["cards"].empty());
  bool tma_excluded = false;
  for (const auto& e : j["excluded"]) tma_excluded |= e["id"] == "tma-bulk-copy";
  EXPECT_TRUE(tma_excluded);
  // shared-memory-tiling provides smem-tile (present): tune-only, with its move for a
  // shared-memory occupancy limit; cp-async-pipeline is a new technique with the same move.
  std::map<std::string, nlohmann::json> by_id;
  for (const auto& c : j["cards"]) by_id[c["id"].get<std::string>()] = c;
  ASSERT_TRUE(by_id.count("shared-memory-tiling")) << r.out;
  ASSERT_TRUE(by_id.count("cp-async-pipeline")) << r.out;
  EXPECT_TRUE(by_id["shared-memory-tiling"]["tune_only"].get<bool>());
  EXPECT_FALSE(by_id["cp-async-pipeline"]["tune_only"].get<bool>());
  for (const char* id : {"shared-memory-tiling", "cp-async-pipeline"}) {
    bool saw = false;
    for (const auto& m : by_id[id]["moves"])
      saw |= m["reason"].get<std::string>().find("evidence `limiter: shared_memory`") != std::string::npos;
    EXPECT_TRUE(saw) << by_id[id].dump();
  }
  EXPECT_TRUE(by_id["register-tiling"]["tune_only"].get<bool>());
  EXPECT_EQ(j["cards"][0]["matched_findings"][0], "occupancy-limiter");

  r = Kpilot({"skills", "retrieve", "--finding", "uncoalesced-global-access", "--class", "memory-bound", "--limit", "3",
              "--show-excluded", "--platform", "sm_80"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(" 1. "), std::string::npos);
  EXPECT_EQ(r.out.find(" 4. "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("excluded tma-bulk-copy"), std::string::npos) << r.out;
  EXPECT_EQ(Kpilot({"skills", "retrieve", "--class", "fast"}).exit_code, 2);
  EXPECT_EQ(Kpilot({"skills", "retrieve", "--feature", "smem-tiles"}).exit_code, 2);
}

}  // namespace
}  // namespace kpilot
