// Usage statistics: RecordUsage's rows (through a test double), the aggregation, and a round trip
// through a real store, including the migration of a store made before the table existed.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cmath>

#include "core/fs.h"
#include "skills/skills.h"

namespace kpilot {
namespace {

class MemoryLog : public UsageLog {
 public:
  Status Append(const std::vector<SkillUsageRecord>& rows) override {
    rows_.insert(rows_.end(), rows.begin(), rows.end());
    return Status::Ok();
  }
  Result<std::vector<SkillUsageRecord>> List() override { return rows_; }
  std::vector<SkillUsageRecord> rows_;
};

const SkillUsageRecord* Row(const std::vector<SkillUsageRecord>& rows, const std::string& kind,
                            const std::string& name) {
  for (const auto& r : rows)
    if (r.kind == kind && r.name == name) return &r;
  return nullptr;
}

const UsageStats* Stat(const std::vector<UsageStats>& stats, const std::string& kind, const std::string& name) {
  for (const auto& s : stats)
    if (s.kind == kind && s.name == name) return &s;
  return nullptr;
}

TEST(Usage, RecordUsageWritesOneRowPerCardAndTool) {
  MemoryLog log;
  UsageEvent e;
  e.run_id = 3;
  e.node = 12;
  e.cards_offered = {"coalescing", "vector-loads-128bit"};
  e.cards_applied = {"vector-loads-128bit", "loop-unrolling"};  // applied without being offered counts too
  e.findings_fired = {"scalar-global-loads", "dominant-warp-stall"};
  e.findings_applied = {"scalar-global-loads"};
  e.speedup = 1.25;
  ASSERT_TRUE(RecordUsage(log, e).ok());
  ASSERT_EQ(log.rows_.size(), 5u);
  const auto* vec = Row(log.rows_, "card", "vector-loads-128bit");
  ASSERT_NE(vec, nullptr);
  EXPECT_TRUE(vec->fired);
  EXPECT_TRUE(vec->applied);
  EXPECT_DOUBLE_EQ(vec->speedup, 1.25);
  EXPECT_EQ(vec->run_id, 3);
  EXPECT_EQ(vec->node, 12);
  EXPECT_FALSE(Row(log.rows_, "card", "coalescing")->applied);
  EXPECT_FALSE(Row(log.rows_, "card", "loop-unrolling")->fired);
  EXPECT_TRUE(Row(log.rows_, "tool", "scalar-global-loads")->applied);
  EXPECT_FALSE(Row(log.rows_, "tool", "dominant-warp-stall")->applied);

  UsageEvent bad = e;
  bad.speedup = 0;
  EXPECT_EQ(RecordUsage(log, bad).code(), StatusCode::kInvalidInput);
  bad.speedup = NAN;
  EXPECT_EQ(RecordUsage(log, bad).code(), StatusCode::kInvalidInput);
  bad = e;
  bad.cards_applied.push_back("");
  EXPECT_EQ(RecordUsage(log, bad).code(), StatusCode::kInvalidInput);
  EXPECT_EQ(log.rows_.size(), 5u);  // nothing written by the failed calls
}

TEST(Usage, SummaryCountsImprovementsAndGeometricMeanGain) {
  MemoryLog log;
  auto record = [&](std::vector<std::string> offered, std::vector<std::string> applied, std::optional<double> speedup) {
    UsageEvent e;
    e.cards_offered = std::move(offered);
    e.cards_applied = applied;
    e.findings_fired = {"tail-effect"};
    e.findings_applied = applied.empty() ? std::vector<std::string>{} : std::vector<std::string>{"tail-effect"};
    e.speedup = speedup;
    ASSERT_TRUE(RecordUsage(log, e).ok());
  };
  record({"split-k"}, {"split-k"}, 2.0);
  record({"split-k"}, {"split-k"}, 0.5);
  record({"split-k"}, {"split-k"}, 1.01);          // applied, not above the factor
  record({"split-k"}, {"split-k"}, std::nullopt);  // applied, failed: counts as applied only
  record({"split-k", "persistent-kernel"}, {}, 1.5);
  auto stats = ReadUsageStats(log);
  ASSERT_TRUE(stats.ok());
  ASSERT_EQ(stats->size(), 3u);
  EXPECT_EQ((*stats)[0].kind, "card");  // cards first, sorted by name
  EXPECT_EQ((*stats)[0].name, "persistent-kernel");
  EXPECT_EQ((*stats)[2].kind, "tool");
  const UsageStats* s = Stat(*stats, "card", "split-k");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->fired, 5);
  EXPECT_EQ(s->applied, 4);
  EXPECT_EQ(s->measured, 3);
  EXPECT_EQ(s->improved, 1);
  EXPECT_NEAR(s->mean_gain, std::cbrt(2.0 * 0.5 * 1.01), 1e-12);
  EXPECT_DOUBLE_EQ(s->HitRate(), 0.25);
  EXPECT_DOUBLE_EQ(s->SmoothedHitRate(), 2.0 / 6);
  const UsageStats* p = Stat(*stats, "card", "persistent-kernel");
  EXPECT_EQ(p->applied, 0);
  EXPECT_DOUBLE_EQ(p->mean_gain, 0);
  EXPECT_DOUBLE_EQ(p->HitRate(), 0);
  const UsageStats* t = Stat(*stats, "tool", "tail-effect");
  EXPECT_EQ(t->fired, 5);
  EXPECT_EQ(t->applied, 4);

  // A lower factor counts 1.01 as improved.
  auto loose = ReadUsageStats(log, 1.005);
  ASSERT_TRUE(loose.ok());
  EXPECT_EQ(Stat(*loose, "card", "split-k")->improved, 2);
  EXPECT_EQ(ReadUsageStats(log, 0).status().code(), StatusCode::kInvalidInput);
}

class UsageStore : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = TempDir::Create("kpilot-skills-usage-");
    ASSERT_TRUE(d.ok());
    tmp_.emplace(std::move(*d));
  }
  std::filesystem::path Dir() const { return tmp_->path() / "store"; }
  std::optional<TempDir> tmp_;
};

TEST_F(UsageStore, RoundTripThroughARealStore) {
  {
    auto store = Store::Open(Dir());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    EXPECT_GE((*store)->SchemaVersion(), 3);
    auto log = StoreUsageLog(**store);
    UsageEvent e;
    e.run_id = 1;
    e.node = 4;
    e.cards_offered = {"coalescing"};
    e.cards_applied = {"coalescing"};
    e.findings_fired = {"uncoalesced-global-access"};
    e.findings_applied = {"uncoalesced-global-access"};
    e.speedup = 3.0;
    ASSERT_TRUE(RecordUsage(*log, e).ok());
    e.node = 5;
    e.speedup = 0.75;
    ASSERT_TRUE(RecordUsage(*log, e).ok());
  }
  auto store = Store::Open(Dir());  // a second process reading what the first wrote
  ASSERT_TRUE(store.ok());
  auto count = (*store)->CountRows("skill_usage");
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(*count, 4);
  auto rows = (*store)->ListSkillUsage();
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 4u);
  EXPECT_EQ((*rows)[0].kind, "card");
  EXPECT_EQ((*rows)[0].name, "coalescing");
  EXPECT_EQ((*rows)[2].node, 5);
  EXPECT_DOUBLE_EQ((*rows)[2].speedup, 0.75);
  EXPECT_FALSE((*rows)[0].created_at.empty());
  auto stats = ReadUsageStats(*StoreUsageLog(**store));
  ASSERT_TRUE(stats.ok());
  const UsageStats* c = Stat(*stats, "card", "coalescing");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->applied, 2);
  EXPECT_EQ(c->improved, 1);
  EXPECT_NEAR(c->mean_gain, 1.5, 1e-12);
  // The store checks rows itself too.
  EXPECT_EQ((*store)->AddSkillUsage({{0, 0, -1, "other", "x", true, false, 0, ""}}).code(), StatusCode::kInvalidInput);
}

TEST_F(UsageStore, AStoreOfSchemaTwoGainsTheTable) {
  ASSERT_TRUE(Store::Open(Dir()).ok());
  {  // take it back to schema 2, as a store written before skill usage existed
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((Dir() / "kpilot.db").c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "DROP TABLE skill_usage; DROP TABLE torch_baselines; PRAGMA user_version = 2;", nullptr,
                           nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  auto store = Store::Open(Dir());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ((*store)->SchemaVersion(), Store::LatestSchemaVersion());
  auto log = StoreUsageLog(**store);
  UsageEvent e;
  e.cards_offered = {"split-k"};
  ASSERT_TRUE(RecordUsage(*log, e).ok());
  auto stats = ReadUsageStats(*log);
  ASSERT_TRUE(stats.ok());
  ASSERT_EQ(stats->size(), 1u);
  EXPECT_EQ((*stats)[0].fired, 1);
}

}  // namespace
}  // namespace kpilot
