// The sandbox as a candidate meets it, through the real kpilot binary: each escape a candidate
// might try, on the host backend and in the torch worker (CPU torch). Every attempt is made twice:
// sandboxed, where it must fail, and with KPILOT_SANDBOX=none, where the same candidate must
// succeed, which proves the attempt is real and the test can fail.
//
// A candidate that succeeds in an attempt says so by computing a wrong answer (the verdict is
// then `incorrect`); one that fails computes the right one. A denied system call makes the
// verdict `suspicious` whatever the answer.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <map>

#include <nlohmann/json.hpp>

#include "../cli/run_kpilot.h"
#include "core/fs.h"
#include "core/subprocess.h"
#include "sandbox/sandbox.h"
#include "test_paths.h"

namespace kpilot {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Each attempt: C++ for the host candidate and Python for the torch one, each a statement that
// sets `escaped` (bool / True) when the attempt worked. STORE, HOMEDIR, MARK, PORT and SECRET
// are substituted. `reported`: what the summary of the sandboxed run's `suspicious` verdict
// names, for attempts the sandbox reports; null for those that fail silently (verdict `passed`).
struct Attempt {
  const char* name;
  const char* cpp;
  const char* py;
  const char* reported = nullptr;
};

// The secret kpilot's own environment holds (an API key, say); candidates look for it in every
// ancestor's /proc/PID/environ.
constexpr const char* kSecret = "kpilot-isolation-secret-4711";

const Attempt kAttempts[] = {
    {"ancestor_environ",
     R"X(for (pid_t p = getppid(); p > 1 && !escaped;) {
          char path[64]; snprintf(path, sizeof path, "/proc/%d/environ", (int)p);
          FILE* f = fopen(path, "r"); char buf[65536]; size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
          if (f) fclose(f);
          if (memmem(buf, n, "SECRET", strlen("SECRET"))) escaped = true;
          snprintf(path, sizeof path, "/proc/%d/stat", (int)p); f = fopen(path, "r");
          int pp = 0; if (!f || fscanf(f, "%*d (%*[^)]) %*c %d", &pp) != 1) pp = 0; if (f) fclose(f); p = pp; })X",
     R"X(p = os.getppid()
while p > 1 and not escaped:
    try:
        escaped = b"SECRET" in open("/proc/%d/environ" % p, "rb").read()
        p = int(open("/proc/%d/stat" % p).read().rsplit(")", 1)[1].split()[1])
    except OSError:
        break)X"},
    {"store_write", R"X(FILE* f = fopen("STORE/MARK", "w"); if (f) { fclose(f); escaped = true; })X",
     R"X(try:
    open("STORE/MARK", "w").close()
    escaped = True
except OSError:
    pass)X"},
    {"home_write", R"X(FILE* f = fopen("HOMEDIR/MARK", "w"); if (f) { fclose(f); escaped = true; })X",
     R"X(try:
    open("HOMEDIR/MARK", "w").close()
    escaped = True
except OSError:
    pass)X",
     "for writing"},
    {"home_mkdir", R"X(if (mkdir("HOMEDIR/MARK", 0700) == 0) escaped = true;)X",
     R"X(try:
    os.mkdir("HOMEDIR/MARK")
    escaped = True
except OSError:
    pass)X",
     "mkdir"},
    {"shared_tmp_write", R"X(FILE* f = fopen("/tmp/MARK", "w"); if (f) { fclose(f); escaped = true; })X",
     R"X(try:
    open("/tmp/MARK", "w").close()
    escaped = True
except OSError:
    pass)X"},
    {"socket_connect",
     R"X(int s = socket(AF_INET, SOCK_STREAM, 0); sockaddr_in a{}; a.sin_family = AF_INET; a.sin_port = htons(PORT);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (s >= 0 && connect(s, (sockaddr*)&a, sizeof a) == 0) escaped = true; if (s >= 0) close(s);)X",
     R"X(import socket
try:
    socket.create_connection(("127.0.0.1", PORT), timeout=5).close()
    escaped = True
except OSError:
    pass)X",
     "socket(AF_INET)"},
    {"kill_ancestor",
     R"X(pid_t gp = 0; char path[64]; snprintf(path, sizeof path, "/proc/%d/stat", (int)getppid());
        FILE* f = fopen(path, "r"); if (f) { if (fscanf(f, "%*d (%*[^)]) %*c %d", &gp) != 1) gp = 0; fclose(f); }
        if (gp > 1 && kill(gp, SIGCONT) == 0) escaped = true;)X",
     R"X(import signal
try:
    gp = int(open("/proc/%d/stat" % os.getppid()).read().rsplit(")", 1)[1].split()[1])
    if gp > 1:
        os.kill(gp, signal.SIGCONT)
        escaped = True
except OSError:
    pass)X"},
};

std::string Substitute(std::string text, const std::map<std::string, std::string>& values) {
  for (const auto& [key, value] : values)
    for (size_t at; (at = text.find(key)) != std::string::npos;) text.replace(at, key.size(), value);
  return text;
}

class Isolation : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::Create("kpilot-isolation-");
    ASSERT_TRUE(dir.ok());
    dir_ = std::make_unique<TempDir>(std::move(dir).value());
    store_ = dir_->path() / "store";
    // The user's home, hidden from the sandbox (a home inside /tmp would be the private /tmp).
    const char* home = std::getenv("HOME");
    home_ = home && *home ? fs::path(home) : fs::path("/root");
    // A listening socket the socket attempt aims at.
    listener_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(listen(listener_, 8), 0);
    socklen_t len = sizeof a;
    getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    setenv("KPILOT_ISOLATION_TEST_KEY", kSecret, 1);
  }
  void TearDown() override {
    close(listener_);
    unsetenv("KPILOT_ISOLATION_TEST_KEY");
    unsetenv("KPILOT_SANDBOX");
  }

  std::map<std::string, std::string> Values(const std::string& mark) const {
    return {{"STORE", store_.string()},
            {"MARK", mark},
            {"PORT", std::to_string(port_)},
            {"SECRET", kSecret},
            {"HOMEDIR", home_.string()}};
  }

  // True when something connected to the listening socket since the last call.
  bool Connected() {
    bool any = false;
    for (int c; (c = accept(listener_, nullptr, nullptr)) >= 0;) {
      any = true;
      close(c);
    }
    return any;
  }

  json Eval(const std::vector<std::string>& args, bool sandboxed) {
    if (sandboxed)
      unsetenv("KPILOT_SANDBOX");
    else
      setenv("KPILOT_SANDBOX", "none", 1);
    std::vector<std::string> argv = {"eval"};
    argv.insert(argv.end(), args.begin(), args.end());
    for (const char* a : {"--json", "--no-time", "--store"}) argv.push_back(a);
    argv.push_back(store_.string());
    ProcessResult r = testing::RunKpilot(dir_->path(), argv, 600);
    json j = json::parse(r.out, nullptr, false);
    if (j.is_discarded()) ADD_FAILURE() << "no JSON; stderr:\n" << r.err << "\nstdout:\n" << r.out;
    return j.is_discarded() ? json::object() : j;
  }

  // Runs `attempt` through `eval_args(candidate)` sandboxed and not, and checks both outcomes.
  void Check(const Attempt& attempt, const std::function<std::vector<std::string>(const fs::path&)>& eval_args,
             bool torch) {
    SCOPED_TRACE(std::string(attempt.name) + (torch ? " (torch worker)" : " (host runner)"));
    for (bool sandboxed : {true, false}) {
      SCOPED_TRACE(sandboxed ? "sandboxed" : "KPILOT_SANDBOX=none");
      const std::string mark = std::string("kpilot-escape-") + attempt.name + "-" + std::to_string(getpid()) +
                               (sandboxed ? "-boxed" : "-open") + (torch ? "-py" : "-cpp");
      const fs::path candidate = WriteCandidate(attempt, mark, torch);
      Connected();
      json e = Eval(eval_args(candidate), sandboxed);
      const std::string verdict = e.value("/verdict/kind"_json_pointer, std::string());
      const std::string summary = e.value("/verdict/summary"_json_pointer, std::string());
      const bool created = fs::exists(store_ / mark) || fs::exists(fs::path("/tmp") / mark) || fs::exists(home_ / mark);
      const bool connected = Connected();
      std::error_code ec;
      fs::remove(store_ / mark, ec);
      fs::remove(home_ / mark, ec);
      fs::remove(fs::path("/tmp") / mark, ec);
      // A write into /tmp succeeds in the sandbox's private /tmp: what counts is the shared one.
      const bool private_effect = std::string(attempt.name) == "shared_tmp_write";
      if (private_effect) {
        EXPECT_EQ(created, !sandboxed) << summary;
      } else if (sandboxed) {
        EXPECT_NE(verdict, "incorrect") << "the attempt worked: " << summary;
        EXPECT_FALSE(created) << "a file was written outside the sandbox";
        EXPECT_FALSE(connected) << "the candidate reached a server on 127.0.0.1";
        EXPECT_TRUE(e.value("/sandbox/enabled"_json_pointer, false)) << e.dump();
        if (attempt.reported) {
          EXPECT_EQ(verdict, "suspicious") << summary;
          EXPECT_NE(summary.find(attempt.reported), std::string::npos) << summary;
        } else {
          EXPECT_EQ(verdict, "passed") << summary;
        }
      } else {
        EXPECT_EQ(verdict, "incorrect") << "without the sandbox the attempt should work: " << summary;
        if (std::string(attempt.name) == "socket_connect") {
          EXPECT_TRUE(connected);
        }
      }
    }
  }

  fs::path WriteCandidate(const Attempt& attempt, const std::string& mark, bool torch) {
    const fs::path path = dir_->path() / (mark + (torch ? ".py" : ".cpp"));
    std::string text;
    if (torch) {
      std::string body = Substitute(attempt.py, Values(mark));
      std::string indented;
      for (size_t start = 0; start < body.size();) {
        size_t nl = body.find('\n', start);
        indented += "    " + body.substr(start, nl == std::string::npos ? std::string::npos : nl - start + 1);
        start = nl == std::string::npos ? body.size() : nl + 1;
      }
      if (indented.back() != '\n') indented += "\n";
      text = "import os\nimport torch.nn as nn\n\n\ndef attempt():\n    escaped = False\n" + indented +
             "    return escaped\n\n\nESCAPED = attempt()\n\n\nclass ModelNew(nn.Module):\n"
             "    def forward(self, x):\n        y = x.clamp_min(0.0)\n        return y + 1.0 if ESCAPED else y\n";
    } else {
      text =
          "#include <kpilot/kernel.h>\n#include <arpa/inet.h>\n#include <netinet/in.h>\n#include <signal.h>\n"
          "#include <stdio.h>\n#include <string.h>\n#include <sys/socket.h>\n#include <sys/stat.h>\n#include "
          "<unistd.h>\n"
          "static bool Attempt() {\n  bool escaped = false;\n  " +
          Substitute(attempt.cpp, Values(mark)) +
          "\n  return escaped;\n}\n"
          "KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* in, int, const kpilot_tensor* out, int,\n"
          "                                const kpilot_scalar* sc, int, void*) {\n"
          "  static const bool escaped = Attempt();\n"
          "  const float* x = (const float*)in[0].data; const float* y0 = (const float*)in[1].data;\n"
          "  float* y = (float*)out[0].data; const float a = (float)sc[0].value.f;\n"
          "  for (int64_t i = 0, n = kpilot_numel(&out[0]); i < n; ++i) y[i] = a * x[i] + y0[i] + (escaped ? 1.f : "
          "0.f);\n"
          "  return 0;\n}\n";
    }
    EXPECT_TRUE(WriteFileAtomic(path, text).ok());
    return path;
  }

  std::unique_ptr<TempDir> dir_;
  fs::path store_;
  fs::path home_;
  int listener_ = -1;
  int port_ = 0;
};

TEST_F(Isolation, EveryEscapeFailsOnTheHostBackend) {
  if (geteuid() != 0) GTEST_SKIP() << "the sandbox's own user needs kpilot to run as root";
  const fs::path task = testing::SourceDir() / "examples" / "host" / "saxpy";
  for (const Attempt& a : kAttempts)
    Check(
        a,
        [&](const fs::path& c) {
          return std::vector<std::string>{task.string(), c.string()};
        },
        false);
}

TEST_F(Isolation, EveryEscapeFailsInTheTorchWorker) {
  if (geteuid() != 0) GTEST_SKIP() << "the sandbox's own user needs kpilot to run as root";
  const fs::path python = testing::SourceDir() / ".venv-torch" / "bin" / "python";
  ASSERT_TRUE(fs::exists(python)) << python << " is missing: run scripts/setup-torch-venv.sh";
  setenv("KPILOT_TORCH_DEVICE", "cpu", 1);
  const fs::path problem = testing::SourceDir() / "tests" / "python" / "fixtures" / "relu_problem.py";
  for (const Attempt& a : kAttempts)
    Check(
        a,
        [&](const fs::path& c) {
          return std::vector<std::string>{problem.string(), c.string(), "--python", python.string()};
        },
        true);
  unsetenv("KPILOT_TORCH_DEVICE");
}

// kpilot run by a user without root: the sandbox's namespaces come through a user namespace, the
// candidate keeps that user's uid (said in a warning), and the filter still reports.
TEST(IsolationUnprivileged, NamespacesComeThroughAUserNamespace) {
  if (geteuid() != 0) GTEST_SKIP() << "the test drops to nobody with setpriv, which needs root";
  const std::string setpriv = FindOnPath("setpriv");
  // The system's interpreter: one under root's home (pyenv) is not nobody's to run.
  const std::string python = "/usr/bin/python3";
  if (setpriv.empty() || !fs::exists(python)) GTEST_SKIP() << "needs setpriv (util-linux) and /usr/bin/python3";
  auto dir = TempDir::Create("kpilot-unprivileged-");
  ASSERT_TRUE(dir.ok());
  const fs::path d = dir->path();
  fs::permissions(d, fs::perms::all);
  // A copy of the runner that nobody may run, wherever the build tree is.
  const fs::path runner = d / "kpilot-runner";
  fs::copy_file(testing::RunnerPath(), runner);
  fs::permissions(runner, fs::perms(0755));
  SandboxSpec spec;
  spec.keep_writable = {d.string()};
  ASSERT_TRUE(WriteFileAtomic(d / "spec.json", ToJson(spec).dump()).ok());
  fs::permissions(d / "spec.json", fs::perms(0644));
  const std::string mark = "kpilot-unprivileged-" + std::to_string(getpid());
  ProcessSpec p;
  p.argv = {setpriv,
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            runner.string(),
            "--sandbox",
            (d / "spec.json").string(),
            "--",
            python,
            "-c",
            "import socket\n"
            "open('" +
                (d / "kept").string() +
                "', 'w').close()\n"
                "open('/var/tmp/" +
                mark +
                "', 'w').close()\n"
                "try:\n    socket.socket()\nexcept OSError:\n    pass\n"};
  p.cwd = d;
  p.timeout_s = 60;
  auto r = SystemProcessRunner().Run(p);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 0) << r->err;
  auto report = FindSandboxReport(r->err);
  ASSERT_TRUE(report.has_value()) << r->err;
  EXPECT_TRUE(report->user_namespace);
  EXPECT_TRUE(report->mount_namespace && report->net_namespace && report->pid_namespace) << r->err;
  EXPECT_EQ(report->uid, 65534);
  EXPECT_EQ(report->denied, std::vector<std::string>{"socket(AF_INET)"});
  EXPECT_TRUE(fs::exists(d / "kept")) << "the kept folder is writable";
  EXPECT_FALSE(fs::exists(fs::path("/var/tmp") / mark)) << "/var/tmp is private";
  std::error_code ec;
  fs::remove(fs::path("/var/tmp") / mark, ec);
}

}  // namespace
}  // namespace kpilot
