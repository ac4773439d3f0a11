#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <thread>

#include "core/fs.h"
#include "core/sha256.h"
#include "core/subprocess.h"
#include "support/sync.h"

namespace kpilot {
namespace {

ProcessResult RunOk(ProcessSpec spec) {
  auto r = SystemProcessRunner().Run(spec);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : ProcessResult{};
}

TEST(Subprocess, CapturesOutputAndExitCode) {
  ProcessResult r = RunOk({.argv = {"sh", "-c", "echo out; echo err >&2; exit 3"}});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_FALSE(r.Succeeded());
  EXPECT_EQ(r.Describe(), "exit code 3");
}

TEST(Subprocess, PassesStdinAndCwd) {
  auto dir = TempDir::Create("kpilot-test-");
  ASSERT_TRUE(dir.ok());
  ProcessResult r = RunOk({.argv = {"sh", "-c", "cat; pwd"}, .cwd = dir->path(), .stdin_data = "hello\n"});
  EXPECT_EQ(r.out, "hello\n" + std::filesystem::canonical(dir->path()).string() + "\n");
}

TEST(Subprocess, TimeoutKillsTheWholeProcessGroup) {
  auto dir = TempDir::Create("kpilot-test-");
  ASSERT_TRUE(dir.ok());
  std::string pidfile = (dir->path() / "grandchild.pid").string();
  // The grandchild writes its pid, then both sleep far past the timeout.
  ProcessResult r =
      RunOk({.argv = {"sh", "-c", "(sleep 100 & echo $! > " + pidfile + "; wait) & sleep 100"}, .timeout_s = 0.5});
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(r.wall_s, 5);
  auto pid_text = ReadFile(pidfile);
  ASSERT_TRUE(pid_text.ok());
  pid_t pid = std::atoi(pid_text->c_str());
  ASSERT_GT(pid, 0);
  // Killed; it may linger briefly as a zombie of its (also killed) parent. A process killed by
  // another signals no one here: look at its state until it is gone or a zombie.
  auto state = [pid] {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string a, b, s;
    return stat >> a >> b >> s ? s : std::string("gone");
  };
  testing::WaitUntil([&] { return state() == "Z" || state() == "gone"; }, std::chrono::seconds(2));
  const std::string last = state();
  EXPECT_TRUE(last == "Z" || last == "gone") << "grandchild still running (state " << last << ")";
}

// A cancel flag that turns true mid-run kills the child's group; its output so far is kept.
TEST(Subprocess, CancelKillsTheRunningChild) {
  auto dir = TempDir::Create("kpilot-test-");
  ASSERT_TRUE(dir.ok());
  const std::filesystem::path marker = dir->path() / "started";
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  // Cancelled once the child has printed (it then touches `marker`); its sleeps are what a cancel
  // must cut short.
  std::thread canceller([cancel, marker] {
    testing::WaitUntil([&] { return std::filesystem::exists(marker); });
    cancel->store(true);
  });
  ProcessResult r = RunOk(
      {.argv = {"sh", "-c", "echo started; touch \"$0\"; sleep 100 & sleep 100", marker.string()}, .cancel = cancel});
  canceller.join();
  EXPECT_TRUE(r.cancelled);
  EXPECT_FALSE(r.timed_out);
  EXPECT_FALSE(r.Succeeded());
  EXPECT_EQ(r.Describe(), "cancelled");
  EXPECT_EQ(r.out, "started\n");
  EXPECT_LT(r.wall_s, 5);
  // A flag that stays false changes nothing.
  ProcessResult quiet =
      RunOk({.argv = {"sh", "-c", "echo done"}, .cancel = std::make_shared<std::atomic<bool>>(false)});
  EXPECT_TRUE(quiet.Succeeded());
  EXPECT_FALSE(quiet.cancelled);
}

// The compilers a search runs beside a GPU's timing are started at a lower priority.
TEST(Subprocess, StartsTheChildAtTheNiceValueAsked) {
  errno = 0;
  const int inherited = getpriority(PRIO_PROCESS, 0);
  ASSERT_EQ(errno, 0);
  if (inherited >= 7) GTEST_SKIP() << "this test runs at nice " << inherited << " already";
  ProcessResult r = RunOk({.argv = {"nice"}, .nice = 7});
  EXPECT_EQ(r.out, "7\n");
  ProcessResult kept = RunOk({.argv = {"nice"}});
  EXPECT_EQ(kept.out, std::to_string(inherited) + "\n");
}

TEST(Subprocess, OutputIsCappedToItsTail) {
  ProcessResult r =
      RunOk({.argv = {"sh", "-c", "head -c 300000 /dev/zero | tr '\\0' a; echo END"}, .max_output_bytes = 1000});
  EXPECT_TRUE(r.output_truncated);
  EXPECT_EQ(r.out.size(), 1000u);
  EXPECT_EQ(r.out.substr(r.out.size() - 4), "END\n");
}

TEST(Subprocess, ReportsSignals) {
  ProcessResult r = RunOk({.argv = {"sh", "-c", "kill -SEGV $$"}});
  EXPECT_EQ(r.term_signal, SIGSEGV);
  EXPECT_NE(r.Describe().find("signal 11"), std::string::npos);
}

TEST(Subprocess, MissingProgramIsNotFound) {
  auto r = SystemProcessRunner().Run({.argv = {"kpilot-no-such-program-xyz"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("kpilot-no-such-program-xyz"), std::string::npos);
}

TEST(Subprocess, ScrubsSecretVariables) {
  setenv("KPILOT_TEST_API_KEY", "sk-123", 1);
  setenv("MY_TOKEN", "t", 1);
  setenv("db_password", "p", 1);
  setenv("KPILOT_TEST_PLAIN", "visible", 1);
  ProcessResult r = RunOk({.argv = {"env"}, .env = ScrubbedEnvironment()});
  EXPECT_EQ(r.out.find("sk-123"), std::string::npos);
  EXPECT_EQ(r.out.find("MY_TOKEN"), std::string::npos);
  EXPECT_EQ(r.out.find("db_password"), std::string::npos);
  EXPECT_NE(r.out.find("KPILOT_TEST_PLAIN=visible"), std::string::npos);
  EXPECT_TRUE(IsSecretVariableName("OPENAI_API_KEY"));
  EXPECT_TRUE(IsSecretVariableName("Secret_thing"));
  EXPECT_FALSE(IsSecretVariableName("PATH"));
}

TEST(Sha256, KnownVectorsAndPartSeparation) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  std::string ab_c = Sha256Builder().Add("ab").Add("c").HexDigest();
  std::string a_bc = Sha256Builder().Add("a").Add("bc").HexDigest();
  EXPECT_NE(ab_c, a_bc);
  EXPECT_EQ(ab_c, Sha256Builder().Add("ab").Add("c").HexDigest());
}

}  // namespace
}  // namespace kpilot
