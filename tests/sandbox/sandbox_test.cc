// The sandbox's pure parts: KPILOT_SANDBOX, the spec and report formats, the summary line.
#include "sandbox/sandbox.h"

#include <gtest/gtest.h>

namespace kpilot {
namespace {

TEST(SandboxOverride, NoneTurnsItOffAndAListKeepsOnlyItsParts) {
  bool enabled = true;
  auto spec = ApplySandboxOverride(DefaultSandboxSpec(), "none", &enabled);
  ASSERT_TRUE(spec.ok());
  EXPECT_FALSE(enabled);

  spec = ApplySandboxOverride(DefaultSandboxSpec(), "net,mount", &enabled);
  ASSERT_TRUE(spec.ok());
  EXPECT_TRUE(enabled);
  EXPECT_FALSE(spec->pid_namespace);
  EXPECT_FALSE(spec->network);  // "net": a network namespace, so no network
  EXPECT_TRUE(spec->mount_namespace);
  EXPECT_FALSE(spec->drop_user);
  EXPECT_FALSE(spec->syscall_filter);

  spec = ApplySandboxOverride(DefaultSandboxSpec(), "all", &enabled);
  ASSERT_TRUE(spec.ok());
  EXPECT_TRUE(spec->pid_namespace);  // the cuda default has every part too: "all" keeps it
  EXPECT_TRUE(spec->syscall_filter);
}

TEST(SandboxOverride, AnUnknownPartIsAnErrorNamingTheVariable) {
  bool enabled = true;
  auto spec = ApplySandboxOverride(DefaultSandboxSpec(), "pid,chroot", &enabled);
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("KPILOT_SANDBOX"), std::string::npos);
  EXPECT_NE(spec.status().message().find("chroot"), std::string::npos);
}

TEST(SandboxFormats, SpecAndReportRoundTrip) {
  SandboxSpec s = DefaultSandboxSpec();
  s.hide = {"/a", "/b"};
  s.keep_read_only = {"/c"};
  s.keep_writable = {"/d"};
  s.inherit_file = "/tmp/kpilot-gpu-0.lock";
  s.inherit_fd = 519;
  auto back = SandboxSpecFromJson(ToJson(s));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(ToJson(*back), ToJson(s));
  EXPECT_FALSE(SandboxSpecFromJson(nlohmann::json{{"hide", 3}}).ok());

  SandboxReport r;
  r.enabled = r.pid_namespace = r.mount_namespace = r.syscall_filter = true;
  r.user = "kpilot-sandbox";
  r.uid = 999;
  r.denied = {"socket(AF_INET)"};
  r.denied_count = 1;
  EXPECT_EQ(ToJson(SandboxReportFromJson(ToJson(r))), ToJson(r));
  EXPECT_EQ(SandboxSummary(r), "pid, mount namespaces; user kpilot-sandbox; syscall filter");
  EXPECT_EQ(SandboxSummary(SandboxReport{}), "off");
}

TEST(SandboxFormats, TheReportIsTheLastReportLineOnStderrTheRestIsTheProgramsOwn) {
  std::string err = "candidate output\n" + std::string(kSandboxReportPrefix) + R"({"enabled":false})" + "\n" +
                    std::string(kSandboxReportPrefix) + R"j({"enabled":true,"denied":["ptrace(request 16, pid 1)"]})j" +
                    "\n";
  auto r = FindSandboxReport(err);
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->enabled);
  ASSERT_EQ(r->denied.size(), 1u);
  EXPECT_FALSE(FindSandboxReport("nothing here\n").has_value());
  EXPECT_EQ(WithoutSandboxReports(err), "candidate output\n");
  EXPECT_EQ(WithoutSandboxReports("Fatal Python error: Segmentation fault\n" + std::string(kSandboxReportPrefix) +
                                  "{}\nno newline at the end"),
            "Fatal Python error: Segmentation fault\nno newline at the end");
}

}  // namespace
}  // namespace kpilot
