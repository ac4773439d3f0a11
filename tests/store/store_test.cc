// The store on a real SQLite file in a temporary folder: records, blobs, schema and migrations.
#include "store/store.h"

#include <gtest/gtest.h>

#include <ctime>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <limits>

#include "core/fs.h"
#include "core/sha256.h"

namespace kpilot {
namespace {
namespace fs = std::filesystem;

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<TempDir> tmp = TempDir::Create("kpilot-store-test-");
    ASSERT_TRUE(tmp.ok()) << tmp.status().ToString();
    tmp_.emplace(std::move(*tmp));
    dir_ = tmp_->path() / "store";
  }

  std::unique_ptr<Store> OpenOrDie() {
    Result<std::unique_ptr<Store>> s = Store::Open(dir_);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }

  // Runs SQL on the store's database file directly (as another program would), no rows.
  void RawExec(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir_ / "kpilot.db").c_str(), &db), SQLITE_OK);
    char* err = nullptr;
    int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
    std::string msg = err ? err : "";
    sqlite3_free(err);
    sqlite3_close(db);
    ASSERT_EQ(rc, SQLITE_OK) << msg;
  }

  std::optional<TempDir> tmp_;
  fs::path dir_;
};

TaskRecord MakeTask(const std::string& name) {
  TaskRecord t;
  t.name = name;
  t.dir = "examples/" + name;
  t.definition_sha = Sha256Hex("[task]\nname = \"" + name + "\"\n");
  return t;
}

TEST_F(StoreTest, OpenCreatesFolderDatabaseAndLatestSchema) {
  auto store = OpenOrDie();
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(fs::is_directory(dir_));
  EXPECT_TRUE(fs::is_regular_file(dir_ / "kpilot.db"));
  EXPECT_TRUE(fs::is_directory(dir_ / "blobs"));
  EXPECT_EQ(store->dir(), dir_);
  EXPECT_GE(Store::LatestSchemaVersion(), 1);
  EXPECT_EQ(store->SchemaVersion(), Store::LatestSchemaVersion());
  for (const char* table : {"tasks", "candidates", "evaluations", "kv"}) {
    Result<int64_t> n = store->CountRows(table);
    ASSERT_TRUE(n.ok()) << table << ": " << n.status().ToString();
    EXPECT_EQ(*n, 0) << table;
  }
}

TEST_F(StoreTest, DatabaseUsesWalAndRecordsSchemaVersion) {
  OpenOrDie();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ / "kpilot.db").c_str(), &db), SQLITE_OK);
  auto query_text = [&](const char* sql) {
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &st, nullptr), SQLITE_OK);
    std::string out;
    if (sqlite3_step(st) == SQLITE_ROW) out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return out;
  };
  EXPECT_EQ(query_text("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(query_text("PRAGMA user_version"), std::to_string(Store::LatestSchemaVersion()));
  sqlite3_close(db);
}

TEST_F(StoreTest, EveryRecordTypeSurvivesCloseAndReopen) {
  int64_t task_id = 0, cand_id = 0, eval_id = 0;
  EvaluationRecord written;
  std::string source_sha, result_sha, log_sha;
  {
    auto store = OpenOrDie();
    ASSERT_NE(store, nullptr);
    Result<int64_t> t = store->AddTask(MakeTask("softmax"));
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    task_id = *t;
    Result<std::string> src = store->PutBlob("__global__ void k() {}\n");
    ASSERT_TRUE(src.ok()) << src.status().ToString();
    source_sha = *src;
    CandidateRecord c;
    c.task_id = task_id;
    c.source_path = "cands/softmax_v1.cu";
    c.source_blob = source_sha;
    c.params_json = R"({"BLOCK":"256"})";
    Result<int64_t> cid = store->AddCandidate(c);
    ASSERT_TRUE(cid.ok()) << cid.status().ToString();
    cand_id = *cid;
    result_sha = *store->PutBlob(R"({"verdict":"passed"})");
    log_sha = *store->PutBlob("ptxas info: 0 bytes spill\n");
    written.candidate_id = cand_id;
    written.created_at = "2026-01-02T03:04:05.678Z";
    written.backend = "cuda";
    written.verdict = "passed";
    written.speedup = 1.8125;
    written.result_blob = result_sha;
    written.log_blob = log_sha;
    Result<int64_t> eid = store->AddEvaluation(written);
    ASSERT_TRUE(eid.ok()) << eid.status().ToString();
    eval_id = *eid;
    ASSERT_TRUE(store->PutValue("gpu.calibration", R"({"clock_mhz":1980})").ok());
  }
  auto store = OpenOrDie();
  ASSERT_NE(store, nullptr);

  Result<std::optional<TaskRecord>> t = store->GetTask(task_id);
  ASSERT_TRUE(t.ok() && t->has_value()) << t.status().ToString();
  EXPECT_EQ((*t)->id, task_id);
  EXPECT_EQ((*t)->name, "softmax");
  EXPECT_EQ((*t)->dir, "examples/softmax");
  EXPECT_EQ((*t)->definition_sha, MakeTask("softmax").definition_sha);

  Result<std::optional<CandidateRecord>> c = store->GetCandidate(cand_id);
  ASSERT_TRUE(c.ok() && c->has_value()) << c.status().ToString();
  EXPECT_EQ((*c)->task_id, task_id);
  EXPECT_EQ((*c)->source_path, "cands/softmax_v1.cu");
  EXPECT_EQ((*c)->source_blob, source_sha);
  EXPECT_EQ((*c)->params_json, R"({"BLOCK":"256"})");
  Result<std::vector<CandidateRecord>> cands = store->ListCandidates(task_id);
  ASSERT_TRUE(cands.ok());
  ASSERT_EQ(cands->size(), 1u);
  EXPECT_EQ((*cands)[0].id, cand_id);

  Result<std::optional<EvaluationRecord>> e = store->GetEvaluation(eval_id);
  ASSERT_TRUE(e.ok() && e->has_value()) << e.status().ToString();
  const EvaluationRecord& r = **e;
  EXPECT_EQ(r.id, eval_id);
  EXPECT_EQ(r.candidate_id, cand_id);
  EXPECT_EQ(r.created_at, written.created_at);
  EXPECT_EQ(r.backend, "cuda");
  EXPECT_EQ(r.verdict, "passed");
  EXPECT_DOUBLE_EQ(r.speedup, 1.8125);
  EXPECT_EQ(r.result_blob, result_sha);
  EXPECT_EQ(r.log_blob, log_sha);
  EXPECT_EQ(r.ptxas_blob, "");
  EXPECT_EQ(r.sass_blob, "");
  Result<std::vector<EvaluationRecord>> list = store->ListEvaluations(cand_id);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].id, eval_id);

  Result<std::string> src = store->GetBlob(source_sha);
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  EXPECT_EQ(*src, "__global__ void k() {}\n");
  Result<std::optional<std::string>> v = store->GetValue("gpu.calibration");
  ASSERT_TRUE(v.ok() && v->has_value());
  EXPECT_EQ(**v, R"({"clock_mhz":1980})");
}

TEST_F(StoreTest, AbsentRecordsAreNulloptNotErrors) {
  auto store = OpenOrDie();
  EXPECT_FALSE(store->GetTask(42)->has_value());
  EXPECT_FALSE(store->GetCandidate(42)->has_value());
  EXPECT_FALSE(store->GetEvaluation(42)->has_value());
  EXPECT_TRUE(store->ListEvaluations(42)->empty());
  EXPECT_TRUE(store->ListCandidates(42)->empty());
  EXPECT_FALSE(store->GetValue("never.set")->has_value());
}

TEST_F(StoreTest, UpsertsReturnTheSameId) {
  auto store = OpenOrDie();
  TaskRecord task = MakeTask("gemm");
  int64_t t1 = *store->AddTask(task);
  task.dir = "moved/gemm";
  int64_t t2 = *store->AddTask(task);
  EXPECT_EQ(t1, t2);
  EXPECT_EQ((*store->GetTask(t1))->dir, "moved/gemm");  // the latest folder is kept
  TaskRecord changed = MakeTask("gemm");
  changed.definition_sha = Sha256Hex("a different task.toml");
  EXPECT_NE(*store->AddTask(changed), t1);  // a new definition is a new task
  EXPECT_EQ(*store->CountRows("tasks"), 2);

  std::string src = *store->PutBlob("kernel source");
  CandidateRecord c{0, t1, "a.cu", src, R"({"BLOCK":"256","WARPS":"4"})"};
  int64_t c1 = *store->AddCandidate(c);
  // The same parameters written with other spacing and key order are the same candidate.
  c.params_json = R"({ "WARPS": "4",  "BLOCK": "256" })";
  c.source_path = "b.cu";
  Result<int64_t> c2 = store->AddCandidate(c);
  ASSERT_TRUE(c2.ok()) << c2.status().ToString();
  EXPECT_EQ(c1, *c2);
  EXPECT_EQ((*store->GetCandidate(c1))->source_path, "b.cu");
  EXPECT_EQ((*store->GetCandidate(c1))->params_json, R"({"BLOCK":"256","WARPS":"4"})");
  c.params_json = R"({"BLOCK":"128"})";
  EXPECT_NE(*store->AddCandidate(c), c1);
  c.params_json = "";  // no parameters
  int64_t c3 = *store->AddCandidate(c);
  EXPECT_EQ((*store->GetCandidate(c3))->params_json, "{}");
  c.params_json = "{}";
  EXPECT_EQ(*store->AddCandidate(c), c3);
  EXPECT_EQ(*store->CountRows("candidates"), 3);

  ASSERT_TRUE(store->PutValue("k", "one").ok());
  ASSERT_TRUE(store->PutValue("k", "two").ok());
  EXPECT_EQ(**store->GetValue("k"), "two");
  EXPECT_EQ(*store->CountRows("kv"), 1);
}

TEST_F(StoreTest, EvaluationsAreAppendedInOrderWithTimestamps) {
  auto store = OpenOrDie();
  int64_t t = *store->AddTask(MakeTask("t"));
  int64_t c = *store->AddCandidate({0, t, "a.cu", *store->PutBlob("src"), ""});
  EvaluationRecord e;
  e.candidate_id = c;
  e.backend = "host";
  e.verdict = "incorrect";
  int64_t first = *store->AddEvaluation(e);
  int64_t second = *store->AddEvaluation(e);  // evaluations are never merged
  EXPECT_NE(first, second);
  auto list = *store->ListEvaluations(c);
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].id, first);
  EXPECT_EQ(list[1].id, second);
  // created_at was filled in: ISO 8601 UTC, e.g. 2026-01-02T03:04:05.678Z
  const std::string& ts = list[0].created_at;
  ASSERT_EQ(ts.size(), 24u) << ts;
  EXPECT_EQ(ts[4], '-');
  EXPECT_EQ(ts[10], 'T');
  EXPECT_EQ(ts.back(), 'Z');
  // ...and reads back as the time it was written.
  auto written = StoreTimeSeconds(ts);
  ASSERT_TRUE(written.has_value()) << ts;
  EXPECT_NEAR(*written, static_cast<double>(std::time(nullptr)), 120);
}

TEST(StoreTime, ReadsTheStoresTimestampsAndNothingElse) {
  EXPECT_DOUBLE_EQ(StoreTimeSeconds("2026-01-02T03:04:05.678Z").value_or(0), 1767323045.678);
  EXPECT_EQ(StoreTimeSeconds("1970-01-01T00:00:00.000Z"), 0.0);
  for (const char* bad : {"", "2026-01-02", "2026-01-02T03:04:05Z", "2026-01-02T03:04:05.678Z junk", "yesterday",
                          " 2026-01-02T03:04:05.678Z", "2026-1-02T03:04:05.678Z", "2026-01-02T03:04:05.6Z"})
    EXPECT_FALSE(StoreTimeSeconds(bad).has_value()) << bad;
}

TEST_F(StoreTest, BadRecordsAreRefusedWithoutWriting) {
  auto store = OpenOrDie();
  int64_t t = *store->AddTask(MakeTask("t"));
  std::string src = *store->PutBlob("src");

  TaskRecord no_sha = MakeTask("x");
  no_sha.definition_sha = "abc";
  EXPECT_EQ(store->AddTask(no_sha).status().code(), StatusCode::kInvalidInput);

  Result<int64_t> orphan = store->AddCandidate({0, t + 100, "a.cu", src, ""});
  EXPECT_EQ(orphan.status().code(), StatusCode::kNotFound);
  EXPECT_NE(orphan.status().message().find("task id"), std::string::npos) << orphan.status().message();
  Result<int64_t> bad_json = store->AddCandidate({0, t, "a.cu", src, "{BLOCK: 256"});
  EXPECT_EQ(bad_json.status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(store->AddCandidate({0, t, "a.cu", src, "[1,2]"}).status().code(), StatusCode::kInvalidInput);
  // A source blob that was never stored.
  EXPECT_EQ(store->AddCandidate({0, t, "a.cu", Sha256Hex("never put"), ""}).status().code(), StatusCode::kNotFound);
  int64_t c = *store->AddCandidate({0, t, "a.cu", src, ""});

  EvaluationRecord e;
  e.candidate_id = c + 100;
  e.backend = "host";
  e.verdict = "passed";
  EXPECT_EQ(store->AddEvaluation(e).status().code(), StatusCode::kNotFound);
  e.candidate_id = c;
  e.speedup = std::nan("");
  EXPECT_EQ(store->AddEvaluation(e).status().code(), StatusCode::kInvalidInput);
  e.speedup = std::numeric_limits<double>::infinity();
  EXPECT_EQ(store->AddEvaluation(e).status().code(), StatusCode::kInvalidInput);
  e.speedup = 1;
  e.log_blob = "../../etc/passwd";
  EXPECT_EQ(store->AddEvaluation(e).status().code(), StatusCode::kInvalidInput);
  e.log_blob = Sha256Hex("never put");
  EXPECT_EQ(store->AddEvaluation(e).status().code(), StatusCode::kNotFound);

  EXPECT_EQ(*store->CountRows("tasks"), 1);
  EXPECT_EQ(*store->CountRows("candidates"), 1);
  EXPECT_EQ(*store->CountRows("evaluations"), 0);
  EXPECT_EQ(store->CountRows("sqlite_master").status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(store->PutValue("", "v").code(), StatusCode::kInvalidInput);
}

TEST_F(StoreTest, BlobsAreContentAddressedAndDeduplicated) {
  auto store = OpenOrDie();
  using namespace std::string_literals;
  const std::string content = "SASS text\n\0\x01 binary too\0"s;  // embedded NULs survive
  Result<std::string> sha = store->PutBlob(content);
  ASSERT_TRUE(sha.ok()) << sha.status().ToString();
  EXPECT_EQ(*sha, Sha256Hex(content));
  fs::path file = dir_ / "blobs" / sha->substr(0, 2) / sha->substr(2);
  ASSERT_TRUE(fs::is_regular_file(file));
  EXPECT_EQ(*ReadFile(file), content);

  // Putting the same content again does not rewrite the file.
  auto before = fs::last_write_time(file);
  fs::last_write_time(file, before - std::chrono::hours(1));
  auto aged = fs::last_write_time(file);
  EXPECT_EQ(*store->PutBlob(content), *sha);
  EXPECT_EQ(fs::last_write_time(file), aged);

  int files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir_ / "blobs")) files += entry.is_regular_file();
  EXPECT_EQ(files, 1);

  Result<std::string> back = store->GetBlob(*sha);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, content);
  EXPECT_EQ(*store->PutBlob(""), Sha256Hex(""));  // the empty blob is a blob too
  EXPECT_EQ(*store->GetBlob(Sha256Hex("")), "");
}

TEST_F(StoreTest, DamagedBlobIsDetectedAndRepairedByPut) {
  auto store = OpenOrDie();
  std::string sha = *store->PutBlob("original content");
  fs::path file = dir_ / "blobs" / sha.substr(0, 2) / sha.substr(2);
  ASSERT_TRUE(WriteFileAtomic(file, "tampered").ok());
  Result<std::string> bad = store->GetBlob(sha);
  EXPECT_EQ(bad.status().code(), StatusCode::kInternal);
  EXPECT_NE(bad.status().message().find("corrupt"), std::string::npos) << bad.status().message();
  EXPECT_EQ(*store->PutBlob("original content"), sha);  // a size mismatch is rewritten
  EXPECT_EQ(*store->GetBlob(sha), "original content");
}

TEST_F(StoreTest, MissingBlobIsNotFound) {
  auto store = OpenOrDie();
  std::string sha = Sha256Hex("never stored");
  Result<std::string> r = store->GetBlob(sha);
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find(sha), std::string::npos) << r.status().message();
}

TEST_F(StoreTest, MalformedShaIsRefusedBeforeTouchingTheFilesystem) {
  auto store = OpenOrDie();
  // A file outside blobs/ that a traversal would reach.
  ASSERT_TRUE(WriteFileAtomic(dir_ / "secret", "do not read").ok());
  std::string good = Sha256Hex("x");
  std::string upper = good;
  for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  for (const std::string& bad : {std::string(""), std::string("abc"), good + "0", good.substr(1), upper,
                                 std::string("../") + good.substr(3), std::string("..") + "/secret" + good.substr(9),
                                 good.substr(0, 63) + "/", good.substr(0, 63) + "g", std::string(64, '.')}) {
    Result<std::string> r = store->GetBlob(bad);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput) << "sha \"" << bad << "\"";
  }
}

TEST_F(StoreTest, NewerSchemaIsRefusedNamingBothVersions) {
  OpenOrDie();
  RawExec("PRAGMA user_version = 7");
  Result<std::unique_ptr<Store>> s = Store::Open(dir_);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidInput);
  const std::string& msg = s.status().message();
  EXPECT_NE(msg.find("schema 7"), std::string::npos) << msg;
  EXPECT_NE(msg.find("knows up to " + std::to_string(Store::LatestSchemaVersion())), std::string::npos) << msg;
  EXPECT_NE(msg.find((dir_ / "kpilot.db").string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("upgrade kpilot"), std::string::npos) << msg;
}

TEST_F(StoreTest, MigratesAnEmptyDatabaseFile) {
  fs::create_directories(dir_);
  { std::ofstream touch(dir_ / "kpilot.db"); }  // 0 bytes: a valid, empty SQLite database
  auto store = OpenOrDie();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->SchemaVersion(), Store::LatestSchemaVersion());
  int64_t t = *store->AddTask(MakeTask("t"));
  EXPECT_EQ(*store->CountRows("tasks"), 1);
  store.reset();
  // Reopening an up-to-date store migrates nothing and keeps the data.
  store = OpenOrDie();
  EXPECT_EQ(store->SchemaVersion(), Store::LatestSchemaVersion());
  EXPECT_EQ((*store->GetTask(t))->name, "t");
}

TEST_F(StoreTest, MigratesADatabaseAtVersionZeroWithForeignTables) {
  fs::create_directories(dir_);
  RawExec("CREATE TABLE notes (x TEXT); INSERT INTO notes VALUES ('kept');");
  auto store = OpenOrDie();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->SchemaVersion(), Store::LatestSchemaVersion());
  EXPECT_EQ(*store->CountRows("evaluations"), 0);
}

TEST_F(StoreTest, NotADatabaseIsAnErrorNamingTheFile) {
  ASSERT_TRUE(WriteFileAtomic(dir_ / "kpilot.db", std::string(4096, 'x')).ok());
  Result<std::unique_ptr<Store>> s = Store::Open(dir_);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(s.status().message().find((dir_ / "kpilot.db").string()), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("--store"), std::string::npos) << s.status().message();
}

TEST_F(StoreTest, FolderThatCannotBeCreatedIsAnErrorNamingIt) {
  ASSERT_TRUE(WriteFileAtomic(tmp_->path() / "plain-file", "x").ok());
  fs::path inside_file = tmp_->path() / "plain-file" / "store";
  Result<std::unique_ptr<Store>> s = Store::Open(inside_file);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(s.status().message().find(inside_file.string()), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("--store"), std::string::npos) << s.status().message();
}

TEST_F(StoreTest, ReadOnlyFolderIsAnErrorNamingIt) {
  if (geteuid() == 0) GTEST_SKIP() << "root ignores folder permissions";
  fs::path locked = tmp_->path() / "locked";
  fs::create_directories(locked);
  ASSERT_EQ(chmod(locked.c_str(), 0500), 0);
  Result<std::unique_ptr<Store>> s = Store::Open(locked / "store");
  chmod(locked.c_str(), 0700);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(s.status().message().find("locked/store"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("ermission"), std::string::npos) << s.status().message();
}

}  // namespace
}  // namespace kpilot

namespace kpilot {
namespace {

TEST(StoreRuns, RoundTripAfterReopen) {
  auto dir = TempDir::Create("kpilot-store-runs-");
  ASSERT_TRUE(dir.ok());
  int64_t run = 0;
  {
    auto store = Store::Open(dir->path());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    RunRecord r;
    r.task_name = "saxpy";
    r.task_dir = "/t";
    r.config_json = "{\"budget\":8}";
    r.status = "running";
    auto id = (*store)->CreateRun(r);
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    run = *id;
    RunNodeRecord n;
    n.run_id = run;
    n.node = 0;
    n.verdict = "passed";
    n.speedup = 1.5;
    n.params_json = "{}";
    ASSERT_TRUE((*store)->AddRunNode(n).ok());
    n.node = 1;
    n.parent = 0;
    EXPECT_TRUE((*store)->AddRunNode(n).ok());
    EXPECT_FALSE((*store)->AddRunNode(n).ok()) << "a node is recorded once";
    auto s1 = (*store)->AddRunEvent(run, "proposal", "{\"k\":1}");
    auto s2 = (*store)->AddRunEvent(run, "stop", "{}");
    ASSERT_TRUE(s1.ok() && s2.ok());
    EXPECT_EQ(*s1, 1);
    EXPECT_EQ(*s2, 2);
    r.id = run;
    r.status = "finished";
    r.best_speedup = 1.5;
    r.best_node = 0;
    EXPECT_TRUE((*store)->UpdateRun(r).ok());
  }
  auto store = Store::Open(dir->path());
  ASSERT_TRUE(store.ok());
  auto got = (*store)->GetRun(run);
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->status, "finished");
  EXPECT_DOUBLE_EQ((*got)->best_speedup, 1.5);
  auto nodes = (*store)->ListRunNodes(run);
  ASSERT_TRUE(nodes.ok());
  ASSERT_EQ(nodes->size(), 2u);
  EXPECT_EQ((*nodes)[1].parent, 0);
  auto events = (*store)->ListRunEvents(run);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 2u);
  EXPECT_EQ((*events)[1].kind, "stop");
  auto runs = (*store)->ListRuns();
  ASSERT_TRUE(runs.ok());
  EXPECT_EQ(runs->size(), 1u);
  EXPECT_EQ(*(*store)->CountRows("run_nodes"), 2);
}

}  // namespace
}  // namespace kpilot

namespace kpilot {
namespace {

BaselineTimingRecord EagerRow(const std::string& workload, double ms) {
  BaselineTimingRecord r;
  r.problem_sha = Sha256Hex("problem");
  r.gpu = "NVIDIA H200";
  r.torch = "2.11.0";
  r.baseline = "eager";
  r.timing = "default";
  r.workload = workload;
  r.ms = ms;
  r.statistic = "median";
  r.samples_json = "[1.0, 1.1]";
  return r;
}

TEST_F(StoreTest, BaselineTimingsAreCachedPerProblemGpuTorchAndProcedure) {
  auto store = OpenOrDie();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->PutBaselineTiming(EagerRow("default", 2.0)).ok());
  BaselineTimingRecord compiled = EagerRow("default", 1.5);
  compiled.baseline = "compile";
  ASSERT_TRUE(store->PutBaselineTiming(compiled).ok());
  // A later measurement replaces the earlier one.
  ASSERT_TRUE(store->PutBaselineTiming(EagerRow("default", 1.8)).ok());
  BaselineTimingRecord other_torch = EagerRow("default", 9.0);
  other_torch.torch = "2.10.0";
  ASSERT_TRUE(store->PutBaselineTiming(other_torch).ok());
  EXPECT_EQ(*store->CountRows("torch_baselines"), 3);
  store.reset();
  store = OpenOrDie();
  auto rows = store->GetBaselineTimings(Sha256Hex("problem"), "NVIDIA H200", "2.11.0", "default");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].baseline, "compile");
  EXPECT_DOUBLE_EQ((*rows)[0].ms, 1.5);
  EXPECT_EQ((*rows)[1].baseline, "eager");
  EXPECT_DOUBLE_EQ((*rows)[1].ms, 1.8);
  EXPECT_EQ((*rows)[1].samples_json, "[1.0, 1.1]");
  EXPECT_FALSE((*rows)[1].created_at.empty());
  EXPECT_TRUE(store->GetBaselineTimings(Sha256Hex("problem"), "NVIDIA H200", "2.11.0", "kernelbench")->empty());
}

TEST_F(StoreTest, BaselineTimingsRejectBadRows) {
  auto store = OpenOrDie();
  ASSERT_NE(store, nullptr);
  BaselineTimingRecord r = EagerRow("default", 1.0);
  r.baseline = "inductor";
  EXPECT_EQ(store->PutBaselineTiming(r).code(), StatusCode::kInvalidInput);
  r = EagerRow("default", std::nan(""));
  EXPECT_EQ(store->PutBaselineTiming(r).code(), StatusCode::kInvalidInput);
  r = EagerRow("", 1.0);
  EXPECT_EQ(store->PutBaselineTiming(r).code(), StatusCode::kInvalidInput);
  EXPECT_EQ(*store->CountRows("torch_baselines"), 0);
}

TEST_F(StoreTest, ASchema3StoreGainsTheBaselineTable) {
  OpenOrDie();
  RawExec("DROP TABLE torch_baselines; PRAGMA user_version = 3;");
  auto store = OpenOrDie();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->SchemaVersion(), 4);
  EXPECT_TRUE(store->PutBaselineTiming(EagerRow("default", 1.0)).ok());
}

}  // namespace
}  // namespace kpilot
