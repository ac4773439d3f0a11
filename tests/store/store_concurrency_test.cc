// Several users of one store folder at once, and writers that die: two Store objects in one
// process, forked child processes writing together, a child SIGKILLed mid-write and a child that
// exits without closing. After each, the store must open, pass SQLite's integrity and
// foreign-key checks, and hold only whole rows whose blobs exist.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <thread>

#include "core/fs.h"
#include "core/sha256.h"
#include "store/store.h"

namespace kpilot {
namespace {
namespace fs = std::filesystem;

TaskRecord SharedTask() {
  TaskRecord t;
  t.name = "softmax";
  t.dir = "examples/softmax";
  t.definition_sha = Sha256Hex("softmax task.toml");
  return t;
}

// Every row of the first column of `sql`, run on the database file directly.
std::vector<std::string> RawQuery(const fs::path& db_path, const char* sql) {
  std::vector<std::string> rows;
  sqlite3* db = nullptr;
  if (sqlite3_open(db_path.c_str(), &db) != SQLITE_OK) {
    sqlite3_close(db);
    return {"cannot open " + db_path.string()};
  }
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) != SQLITE_OK) {
    rows.push_back(std::string("prepare failed: ") + sqlite3_errmsg(db));
  } else {
    while (sqlite3_step(st) == SQLITE_ROW) {
      const unsigned char* text = sqlite3_column_text(st, 0);
      rows.push_back(text ? reinterpret_cast<const char*>(text) : "NULL");
    }
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return rows;
}

// Writes one evaluation of `candidate_id` whose result blob is unique to (`who`, `i`).
Status WriteEvaluation(Store& store, int64_t candidate_id, const std::string& who, int i) {
  Result<std::string> blob = store.PutBlob("{\"writer\":\"" + who + "\",\"i\":" + std::to_string(i) + "}");
  if (!blob.ok()) return blob.status();
  EvaluationRecord e;
  e.candidate_id = candidate_id;
  e.backend = "host";
  e.verdict = i % 2 ? "passed" : "incorrect";
  e.speedup = i % 2 ? 1.0 + i / 1000.0 : 0;
  e.result_blob = *blob;
  Result<int64_t> id = store.AddEvaluation(e);
  return id.ok() ? Status::Ok() : id.status();
}

// The checks every store must pass after any mix of writers and crashes. Returns the number of
// evaluations.
int64_t ExpectConsistent(const fs::path& dir) {
  fs::path db_path = dir / "kpilot.db";
  EXPECT_EQ(RawQuery(db_path, "PRAGMA integrity_check"), std::vector<std::string>{"ok"});
  EXPECT_TRUE(RawQuery(db_path, "PRAGMA foreign_key_check").empty());
  Result<std::unique_ptr<Store>> opened = Store::Open(dir);
  EXPECT_TRUE(opened.ok()) << opened.status().ToString();
  if (!opened.ok()) return -1;
  Store& store = **opened;
  EXPECT_EQ(store.SchemaVersion(), Store::LatestSchemaVersion());
  int64_t listed = 0;
  Result<int64_t> tasks = store.CountRows("tasks");
  Result<int64_t> cands = store.CountRows("candidates");
  Result<int64_t> evals = store.CountRows("evaluations");
  EXPECT_TRUE(tasks.ok() && cands.ok() && evals.ok());
  for (int64_t task_id = 1; task_id <= *tasks; ++task_id) {
    // Results held in locals: `*Result` of a temporary would dangle inside a range-for.
    Result<std::vector<CandidateRecord>> candidates = store.ListCandidates(task_id);
    EXPECT_TRUE(candidates.ok()) << candidates.status().ToString();
    if (!candidates.ok()) continue;
    for (const CandidateRecord& c : *candidates) {
      EXPECT_TRUE(store.GetBlob(c.source_blob).ok()) << c.source_blob;
      Result<std::vector<EvaluationRecord>> evaluations = store.ListEvaluations(c.id);
      EXPECT_TRUE(evaluations.ok()) << evaluations.status().ToString();
      if (!evaluations.ok()) continue;
      for (const EvaluationRecord& e : *evaluations) {
        ++listed;
        Result<std::string> result = store.GetBlob(e.result_blob);
        EXPECT_TRUE(result.ok()) << "evaluation " << e.id << ": " << result.status().ToString();
      }
    }
  }
  EXPECT_EQ(listed, *evals);  // every evaluation hangs off a listed candidate of a listed task
  return *evals;
}

class StoreConcurrencyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<TempDir> tmp = TempDir::Create("kpilot-store-conc-");
    ASSERT_TRUE(tmp.ok()) << tmp.status().ToString();
    tmp_.emplace(std::move(*tmp));
    dir_ = tmp_->path() / "store";
  }

  // Adds the shared task and a candidate named `who`; returns the candidate id (or -1).
  static int64_t AddCandidate(Store& store, const std::string& who) {
    Result<int64_t> t = store.AddTask(SharedTask());
    if (!t.ok()) return -1;
    Result<std::string> src = store.PutBlob("// kernel by " + who + "\n");
    if (!src.ok()) return -1;
    Result<int64_t> c = store.AddCandidate({0, *t, who + ".cu", *src, ""});
    return c.ok() ? *c : -1;
  }

  std::optional<TempDir> tmp_;
  fs::path dir_;
};

TEST_F(StoreConcurrencyTest, TwoStoresOnOneFolderBothWrite) {
  auto a = Store::Open(dir_);
  auto b = Store::Open(dir_);
  ASSERT_TRUE(a.ok() && b.ok());
  // Both see the same task: the upsert from the second store finds the first one's row.
  EXPECT_EQ(*(*a)->AddTask(SharedTask()), *(*b)->AddTask(SharedTask()));

  constexpr int kEach = 150;
  auto writer = [&](Store* store, const std::string& who, Status* out) {
    int64_t cand = AddCandidate(*store, who);
    if (cand < 0) {
      *out = Status::Internal(who + ": cannot add candidate");
      return;
    }
    for (int i = 0; i < kEach; ++i) {
      Status s = WriteEvaluation(*store, cand, who, i);
      if (!s.ok()) {
        *out = s;
        return;
      }
    }
  };
  Status sa, sb;
  std::thread ta(writer, a->get(), "a", &sa);
  std::thread tb(writer, b->get(), "b", &sb);
  ta.join();
  tb.join();
  ASSERT_TRUE(sa.ok()) << sa.ToString();
  ASSERT_TRUE(sb.ok()) << sb.ToString();
  // Each store sees the other's rows.
  EXPECT_EQ(*(*a)->CountRows("evaluations"), 2 * kEach);
  EXPECT_EQ(*(*b)->CountRows("evaluations"), 2 * kEach);
  EXPECT_EQ(*(*b)->CountRows("candidates"), 2);
  EXPECT_EQ(*(*a)->CountRows("tasks"), 1);
  a->reset();
  b->reset();
  EXPECT_EQ(ExpectConsistent(dir_), 2 * kEach);
}

TEST_F(StoreConcurrencyTest, ChildProcessesCreateAndWriteOneStoreTogether) {
  // The children open a store that does not exist yet, so they also race to create and migrate it.
  constexpr int kChildren = 4;
  constexpr int kEach = 60;
  std::vector<pid_t> pids;
  for (int k = 0; k < kChildren; ++k) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      std::string who = "child" + std::to_string(k);
      Result<std::unique_ptr<Store>> store = Store::Open(dir_);
      if (!store.ok()) {
        std::fprintf(stderr, "%s: %s\n", who.c_str(), store.status().ToString().c_str());
        _exit(10);
      }
      int64_t cand = AddCandidate(**store, who);
      if (cand < 0) _exit(11);
      for (int i = 0; i < kEach; ++i) {
        Status s = WriteEvaluation(**store, cand, who, i);
        if (!s.ok()) {
          std::fprintf(stderr, "%s: %s\n", who.c_str(), s.ToString().c_str());
          _exit(12);
        }
      }
      store->reset();
      _exit(0);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "child " << pid << " failed (see its stderr)";
  }
  EXPECT_EQ(ExpectConsistent(dir_), kChildren * kEach);
  auto store = Store::Open(dir_);
  ASSERT_TRUE(store.ok());
  EXPECT_EQ(*(*store)->CountRows("tasks"), 1);
  EXPECT_EQ(*(*store)->CountRows("candidates"), kChildren);
}

TEST_F(StoreConcurrencyTest, ChildKilledMidWriteLeavesAConsistentStore) {
  int64_t cand = 0;
  {
    auto store = Store::Open(dir_);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    cand = AddCandidate(**store, "parent");
    ASSERT_GT(cand, 0);
  }  // closed: the child must not share the parent's connection
  constexpr int kBeforeSignal = 25;
  // The child says when it has written kBeforeSignal rows, and again some rows later (more each
  // round), and is killed then, in the middle of further writes.
  auto killed_after = [](int round) { return kBeforeSignal + 5 + 4 * round; };
  int64_t total_before = 0;
  for (int round = 0; round < 3; ++round) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      Result<std::unique_ptr<Store>> store = Store::Open(dir_);
      if (!store.ok()) _exit(10);
      std::string who = "doomed" + std::to_string(round);
      for (int i = 0;; ++i) {  // writes until killed
        if (!WriteEvaluation(**store, cand, who, i).ok()) _exit(12);
        if (!(*store)->PutValue("progress." + who, std::to_string(i)).ok()) _exit(13);
        if (i + 1 == kBeforeSignal || i + 1 == killed_after(round)) {
          char byte = 1;
          if (write(fds[1], &byte, 1) != 1) _exit(14);
        }
      }
    }
    close(fds[1]);
    char byte = 0;
    ASSERT_EQ(read(fds[0], &byte, 1), 1) << "the child died before writing " << kBeforeSignal << " rows";
    ASSERT_EQ(read(fds[0], &byte, 1), 1) << "the child died before writing " << killed_after(round) << " rows";
    close(fds[0]);
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status)) << "child exited on its own with " << WEXITSTATUS(status);
    EXPECT_EQ(WTERMSIG(status), SIGKILL);

    int64_t total = ExpectConsistent(dir_);
    EXPECT_GE(total, total_before + killed_after(round)) << "rows committed before the kill were lost";
    total_before = total;
  }
  // The store is still writable after the crashes.
  auto store = Store::Open(dir_);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ASSERT_TRUE(WriteEvaluation(**store, cand, "survivor", 0).ok());
  EXPECT_EQ(*(*store)->CountRows("evaluations"), total_before + 1);
}

TEST_F(StoreConcurrencyTest, ChildExitingWithoutClosingKeepsEveryCommittedRow) {
  int64_t cand = 0;
  {
    auto store = Store::Open(dir_);
    ASSERT_TRUE(store.ok());
    cand = AddCandidate(**store, "parent");
    ASSERT_GT(cand, 0);
  }
  constexpr int kRows = 40;
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    Result<std::unique_ptr<Store>> store = Store::Open(dir_);
    if (!store.ok()) _exit(10);
    for (int i = 0; i < kRows; ++i)
      if (!WriteEvaluation(**store, cand, "leaver", i).ok()) _exit(12);
    _exit(0);  // no destructors: the connection is never closed and the WAL never checkpointed
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(ExpectConsistent(dir_), kRows);
}

}  // namespace
}  // namespace kpilot
