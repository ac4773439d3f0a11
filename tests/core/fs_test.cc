#include <gtest/gtest.h>

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
