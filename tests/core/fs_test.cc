#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "core/status.h"

namespace kpilot {
namespace {

TEST(Fs, AtomicWriteCreatesParentsAndReplaces) {
  auto dir = TempDir::Create("kpilot-test-");
  ASSERT_TRUE(dir.ok());
  auto p = dir->path() / "a" / "b" / "file.txt";
  ASSERT_TRUE(WriteFileAtomic(p, "one").ok());
  ASSERT_TRUE(WriteFileAtomic(p, "two").ok());
  auto text = ReadFile(p);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "two");
  // No temporary files left beside it.
  int n = 0;
  for (auto& e : std::filesystem::directory_iterator(p.parent_path())) (void)e, ++n;
  EXPECT_EQ(n, 1);
}

TEST(Fs, ReadMissingFileIsNotFound) {
  auto r = ReadFile("/nonexistent/kpilot/file");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ExitCodeFor(r.status()), 2);
}

TEST(Fs, TempDirIsRemovedUnlessKept) {
  std::filesystem::path gone, kept;
  {
    auto a = TempDir::Create("kpilot-test-");
    auto b = TempDir::Create("kpilot-test-");
    ASSERT_TRUE(a.ok() && b.ok());
    gone = a->path();
    kept = b->path();
    b->Keep();
    ASSERT_TRUE(WriteFileAtomic(gone / "x", "y").ok());
  }
  EXPECT_FALSE(std::filesystem::exists(gone));
  EXPECT_TRUE(std::filesystem::exists(kept));
  std::filesystem::remove_all(kept);
}

TEST(Fs, TailKeepsTheEnd) {
  EXPECT_EQ(Tail("abcdef", 10), "abcdef");
  EXPECT_EQ(Tail("abcdef", 3), "…def");
}

TEST(Fs, TailNeverSplitsAUtf8Character) {
  // g++ quotes names with ‘ ’ (3 bytes each); a cut inside one made the JSON of a compile log
  // unwritable.
  const std::string log = "error: \u2018x\u2019 was not declared";  // ‘x’
  for (size_t n = 1; n < log.size(); ++n) {
    std::string t = Tail(log, n);
    ASSERT_LE(t.size(), std::string("…").size() + n);
    EXPECT_NO_THROW((void)nlohmann::json(t).dump()) << n;
  }
  EXPECT_EQ(Tail(log, 23), "…x\u2019 was not declared") << "the cut lands inside ‘: it starts after it";
  EXPECT_EQ(Tail("\u00e9\u00e9", 3), "…\u00e9");
}

TEST(Fs, FileLockIsExclusiveAndEndsWithItsHolder) {
  auto dir = TempDir::Create("kpilot-test-");
  ASSERT_TRUE(dir.ok());
  const auto path = dir->path() / "runs" / "1" / "lock";
  {
    auto first = FileLock::TryLock(path);
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    ASSERT_TRUE(first->has_value()) << "creates its folders and takes the lock";
    auto second = FileLock::TryLock(path);
    ASSERT_TRUE(second.ok());
    EXPECT_FALSE(second->has_value()) << "held: another open file description cannot take it";
    FileLock moved = std::move(**first);  // the lock moves with the handle
    EXPECT_FALSE((*FileLock::TryLock(path)).has_value());
  }
  auto again = FileLock::TryLock(path);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->has_value()) << "released when its holder is destroyed";
  // A process that dies holding it (kill -9 included) releases it.
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto held = FileLock::TryLock(dir->path() / "child.lock");
    if (!held.ok() || !held->has_value()) _exit(1);
    raise(SIGKILL);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFSIGNALED(st));
  auto after = FileLock::TryLock(dir->path() / "child.lock");
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(after->has_value());
}

TEST(StatusTest, ContextAndExitCodes) {
  Status s = Status::InvalidInput("task.toml:3: name: missing").WithContext("loading examples/x");
  EXPECT_EQ(s.message(), "loading examples/x: task.toml:3: name: missing");
  EXPECT_EQ(ExitCodeFor(s), 2);
  EXPECT_EQ(ExitCodeFor(Status::Unavailable("no GPU")), 3);
  EXPECT_EQ(ExitCodeFor(Status::Ok()), 0);
  Result<int> r = 5;
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(*r, 5);
}

}  // namespace
}  // namespace kpilot
