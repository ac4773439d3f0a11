// The command generator: the workspace it prepares, the scrubbed environment, the timeout, and
// that only the candidate file comes back — over a recording ProcessRunner double and with a
// real fake agent script.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>

#include "core/fs.h"
#include "generate/command_generator.h"
#include "task/loader.h"
#include "generator_test_util.h"
#include "test_paths.h"

namespace kpilot {
namespace {

namespace fs = std::filesystem;

const std::string& kKernel = testing::kMinimalKernel;

// Records the spec and what the workspace held while "the agent" ran, then writes `write` as
// the candidate (nothing when empty).
class RecordingRunner : public ProcessRunner {
 public:
  Result<ProcessResult> Run(const ProcessSpec& spec) override {
    seen = spec;
    for (auto& e : fs::recursive_directory_iterator(*spec.cwd))
      if (e.is_regular_file()) files.push_back(fs::relative(e.path(), *spec.cwd).string());
    if (!write.empty()) (void)WriteFileAtomic(*spec.cwd / "candidate.cpp", write);
    ProcessResult r;
    r.exit_code = 0;
    return r;
  }
  ProcessSpec seen;
  std::vector<std::string> files;
  std::string write;
};

class CommandGeneratorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto t = LoadTask(testing::SourceDir() / "examples" / "host" / "saxpy");
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    task_ = *t;
    ctx_ = testing::ParentContext(task_, kKernel);
    ctx_.parent_node = 2;
    ctx_.memory_summary = "MEMORY-MARKER";
    ctx_.findings[0].guidance = "GUIDANCE-MARKER";
    options_.include_dir = testing::SourceDir() / "include";
    options_.prompts_dir = testing::SourceDir() / "prompts";
    options_.timeout_s = 30;
  }
  Result<std::vector<Draft>> Propose(ProcessRunner& runner) {
    auto p = MakeCommandGenerator("command:test", task_, runner, options_);
    if (!p.ok()) return p.status();
    return (*p)->Propose(ctx_).get();
  }
  std::string Agent() const { return (testing::SourceDir() / "tests" / "generate" / "fake_agent.sh").string(); }
  Task task_;
  ProposalContext ctx_;
  CommandGeneratorOptions options_;
};

TEST_F(CommandGeneratorTest, TheWorkspaceHoldsTaskParentGuidanceAndAbi) {
  RecordingRunner runner;
  runner.write = kKernel + "int agent_change = 1;\n";
  options_.argv = {"true"};
  auto drafts = Propose(runner);
  ASSERT_TRUE(drafts.ok()) << drafts.status().ToString();
  std::sort(runner.files.begin(), runner.files.end());
  EXPECT_EQ(runner.files, (std::vector<std::string>{"GUIDANCE.md", "INSTRUCTIONS.md", "include/kpilot/kernel.h",
                                                    "parent/omp_simd.cpp", "task/reference.cpp", "task/task.toml"}));
  EXPECT_EQ(runner.seen.argv, std::vector<std::string>{"true"});
  EXPECT_NE(runner.seen.stdin_data.find("candidate.cpp"), std::string::npos) << "instructions on stdin";
  EXPECT_DOUBLE_EQ(runner.seen.timeout_s, 30);
  ASSERT_EQ(drafts->size(), 1u);
  EXPECT_EQ((*drafts)[0].source, runner.write);
  EXPECT_EQ((*drafts)[0].params, ctx_.parent_params);
  EXPECT_FALSE(fs::exists(*runner.seen.cwd)) << "the workspace is removed afterwards";
}

TEST_F(CommandGeneratorTest, GuidanceCarriesFindingsAndMemory) {
  auto dir = TempDir::Create("kpilot-ws-test-");
  ASSERT_TRUE(dir.ok());
  auto text = PrepareAgentWorkspace(dir->path(), task_, ctx_, options_, 0);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  auto guidance = ReadFile(dir->path() / "GUIDANCE.md");
  ASSERT_TRUE(guidance.ok());
  EXPECT_NE(guidance->find("GUIDANCE-MARKER"), std::string::npos);
  EXPECT_NE(guidance->find("MEMORY-MARKER"), std::string::npos);
  EXPECT_NE(text->find("candidate.cpp"), std::string::npos);
  EXPECT_NE(text->find("do not time or benchmark"), std::string::npos);
}

TEST_F(CommandGeneratorTest, TheEnvironmentIsScrubbedToTheAllowedNames) {
  std::vector<std::string> env = {"PATH=/bin", "HOME=/h", "OPENAI_API_KEY=sk-x", "AWS_SECRET=s", "EDITOR=vi"};
  EXPECT_EQ(AgentEnvironment(DefaultAgentEnvironment(), {"KPILOT_WORKSPACE=/w"}, &env),
            (std::vector<std::string>{"PATH=/bin", "HOME=/h", "KPILOT_WORKSPACE=/w"}));
  EXPECT_EQ(AgentEnvironment({"PATH", "OPENAI_API_KEY"}, {}, &env),
            (std::vector<std::string>{"PATH=/bin", "OPENAI_API_KEY=sk-x"}))
      << "a key passes only when the user lists it";

  ::setenv("KPILOT_TEST_SECRET_TOKEN", "leak-me", 1);
  ::setenv("KPILOT_TEST_ALLOWED", "yes", 1);
  options_.argv = {Agent(), "env"};
  options_.allowed_env = {"PATH", "KPILOT_TEST_ALLOWED"};
  auto drafts = Propose(SystemProcessRunner());
  ASSERT_TRUE(drafts.ok()) << drafts.status().ToString();
  ASSERT_EQ(drafts->size(), 1u);
  const std::string& src = (*drafts)[0].source;
  EXPECT_NE(src.find("// env: KPILOT_TEST_ALLOWED=yes"), std::string::npos) << src;
  EXPECT_NE(src.find("// env: KPILOT_CANDIDATE=candidate.cpp"), std::string::npos);
  EXPECT_EQ(src.find("leak-me"), std::string::npos);
  EXPECT_EQ(src.find("// env: HOME="), std::string::npos) << "HOME was not allowed this time";
}

TEST_F(CommandGeneratorTest, ARealAgentWritesTheCandidate) {
  options_.argv = {Agent(), "copy"};
  auto drafts = Propose(SystemProcessRunner());
  ASSERT_TRUE(drafts.ok()) << drafts.status().ToString();
  ASSERT_EQ(drafts->size(), 1u);
  EXPECT_EQ((*drafts)[0].failure, "");
  EXPECT_NE((*drafts)[0].source.find("kpilot_launch"), std::string::npos);
  EXPECT_EQ((*drafts)[0].summary, "fake_agent.sh: fake agent copy of omp_simd.cpp");
}

// The agent's sandbox, as the agent meets it: sandboxed it finds no secret in its ancestors'
// environment (kpilot's API keys), sees nothing of the store and cannot write in the user's home
// outside its own state folders, yet writes its candidate; with KPILOT_SANDBOX=none it can do
// all three, which proves the attempts are real.
TEST_F(CommandGeneratorTest, ASandboxedAgentSeesNeitherKpilotsEnvironmentNorTheStore) {
  if (geteuid() != 0) GTEST_SKIP() << "kpilot's sandbox is tested as root (CI and the GPU machine run so)";
  const char* home = std::getenv("HOME");
  if (!home || !*home || std::string(home).rfind("/tmp", 0) == 0) GTEST_SKIP() << "needs a home outside /tmp";
  auto dir = TempDir::Create("kpilot-agent-store-");
  ASSERT_TRUE(dir.ok());
  ASSERT_TRUE(WriteFileAtomic(dir->path() / "kpilot.db", "verdicts").ok());
  // /proc/PID/environ shows a process's environment as it started: the secret is an entry of
  // this test's own, which kpilot's (with its API keys) stands for.
  auto environ_text = ReadFile("/proc/self/environ");
  ASSERT_TRUE(environ_text.ok());
  std::string secret;
  for (size_t at = 0; at < environ_text->size() && secret.size() < 6;) {
    size_t end = environ_text->find('\0', at);
    secret = environ_text->substr(at, end == std::string::npos ? std::string::npos : end - at);
    at = end == std::string::npos ? environ_text->size() : end + 1;
  }
  ASSERT_GE(secret.size(), 6u) << "this test's environment has no entry to look for";
  const fs::path outside = fs::path(home) / ("kpilot-agent-escape-" + std::to_string(getpid()));
  options_.argv = {Agent(), "escape", secret, dir->path().string(), outside.string()};
  options_.sandbox_runner = testing::RunnerPath();
  options_.sandbox_hide = {dir->path().string()};
  for (bool sandboxed : {true, false}) {
    SCOPED_TRACE(sandboxed ? "sandboxed" : "KPILOT_SANDBOX=none");
    if (sandboxed)
      ::unsetenv("KPILOT_SANDBOX");
    else
      ::setenv("KPILOT_SANDBOX", "none", 1);
    auto drafts = Propose(SystemProcessRunner());
    ASSERT_TRUE(drafts.ok()) << drafts.status().ToString();
    ASSERT_EQ(drafts->size(), 1u);
    const std::string& src = (*drafts)[0].source;
    if (sandboxed) {
      EXPECT_NE(src.find("// secret: no; held: []; outside: no"), std::string::npos) << src;
      EXPECT_FALSE(fs::exists(outside));
    } else {
      EXPECT_NE(src.find("// secret: yes; held: [kpilot.db ]; outside: yes"), std::string::npos) << src;
    }
    std::error_code ec;
    fs::remove(outside, ec);
  }
  ::unsetenv("KPILOT_SANDBOX");
}

TEST_F(CommandGeneratorTest, AHangingAgentIsKilledAtTheTimeout) {
  options_.argv = {Agent(), "hang"};
  options_.timeout_s = 1;
  auto t0 = std::chrono::steady_clock::now();
  auto drafts = Propose(SystemProcessRunner());
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(drafts.ok()) << drafts.status().ToString();
  ASSERT_EQ(drafts->size(), 1u);
  EXPECT_NE((*drafts)[0].failure.find("timed out after 1 s"), std::string::npos) << (*drafts)[0].failure;
  EXPECT_LT(s, 20);
}

TEST_F(CommandGeneratorTest, OnlyTheCandidateFileComesBack) {
  options_.argv = {Agent(), "extra"};
  auto drafts = Propose(SystemProcessRunner());
  ASSERT_TRUE(drafts.ok());
  ASSERT_EQ(drafts->size(), 1u);
  EXPECT_EQ((*drafts)[0].source.rfind(kKernel + "int fake_agent_variant_", 0), 0u) << (*drafts)[0].source;
  EXPECT_EQ((*drafts)[0].source.find("junk"), std::string::npos);
  for (const char* mode : {"nothing", "symlink", "bad", "same"}) {
    options_.argv = {Agent(), mode};
    auto d = Propose(SystemProcessRunner());
    ASSERT_TRUE(d.ok()) << mode;
    ASSERT_EQ(d->size(), 1u);
    EXPECT_EQ((*d)[0].source, "") << mode;
    EXPECT_FALSE((*d)[0].failure.empty()) << mode;
  }
  options_.argv = {Agent(), "symlink"};
  EXPECT_NE((*Propose(SystemProcessRunner()))[0].failure.find("not a regular file"), std::string::npos);
  options_.argv = {Agent(), "nothing"};
  EXPECT_NE((*Propose(SystemProcessRunner()))[0].failure.find("wrote no candidate.cpp"), std::string::npos);
  // In the sandbox too, the failure quotes the agent's stderr and not the sandbox's report line.
  options_.sandbox_runner = testing::RunnerPath();
  const std::string why = (*Propose(SystemProcessRunner()))[0].failure;
  EXPECT_NE(why.find("stderr: I could not do it"), std::string::npos) << why;
  EXPECT_EQ(why.find("kpilot-sandbox-report"), std::string::npos) << why;
  options_.sandbox_runner.clear();
  options_.argv = {Agent(), "same"};
  EXPECT_NE((*Propose(SystemProcessRunner()))[0].failure.find("same code as the parent"), std::string::npos);
}

TEST_F(CommandGeneratorTest, SeveralDraftsRunInSeparateWorkspaces) {
  ctx_.k = 3;
  options_.argv = {Agent(), "copy"};
  options_.max_concurrency = 2;
  auto drafts = Propose(SystemProcessRunner());
  ASSERT_TRUE(drafts.ok());
  ASSERT_EQ(drafts->size(), 3u);
  std::set<std::string> names;
  for (const auto& d : *drafts) names.insert(d.source_name);
  EXPECT_EQ(names.size(), 3u);
}

TEST_F(CommandGeneratorTest, OfferedCardsBecomeAgentSkillsFoldersAndAppliedSkillsComeBack) {
  ctx_.skills = {testing::BuiltinCard("coalescing"), testing::BuiltinCard("split-k")};
  options_.argv = {Agent(), "skills"};
  auto drafts = Propose(SystemProcessRunner());
  ASSERT_TRUE(drafts.ok()) << drafts.status().ToString();
  ASSERT_EQ(drafts->size(), 1u);
  const Draft& d = (*drafts)[0];
  EXPECT_EQ(d.failure, "");
  EXPECT_NE(d.source.find("// cards: coalescing split-k"), std::string::npos) << d.source;
  EXPECT_EQ(d.skills_applied, (std::vector<std::string>{"coalescing", "split-k"}));
  EXPECT_NE(d.summary.find("ignored: made-up-card"), std::string::npos) << d.summary;

  // Without cards (or with skills off) the agent finds no folder and kpilot reads no id.
  for (bool enabled : {true, false}) {
    ctx_.skills_enabled = enabled;
    if (enabled)
      ctx_.skills.clear();
    else
      ctx_.skills = {testing::BuiltinCard("coalescing")};
    RecordingRunner runner;
    runner.write = kKernel + "int agent_change = 1;\n";
    options_.argv = {"true"};
    auto none = Propose(runner);
    ASSERT_TRUE(none.ok());
    for (const auto& f : runner.files) EXPECT_EQ(f.find("skills/"), std::string::npos) << f;
    EXPECT_EQ(runner.seen.stdin_data.find("Skill cards for this kernel"), std::string::npos);
    EXPECT_TRUE((*none)[0].skills_applied.empty());
  }
}

TEST_F(CommandGeneratorTest, ACardFolderIsCopiedWithoutLinksAndAppliedSkillsMustBeARegularFile) {
  auto cards = TempDir::Create("kpilot-cards-");
  ASSERT_TRUE(cards.ok());
  fs::path folder = cards->path() / "my-card";
  ASSERT_TRUE(WriteFileAtomic(folder / "SKILL.md", "on disk, not what kpilot validated").ok());
  ASSERT_TRUE(WriteFileAtomic(folder / "examples" / "tile.cu", "// example\n").ok());
  ASSERT_TRUE(WriteFileAtomic(folder / ".git" / "config", "x").ok());
  ASSERT_EQ(symlink("/etc/hostname", (folder / "leak.txt").c_str()), 0);
  OfferedSkill card;
  card.id = "my-card";
  card.intent = "Do the thing.";
  card.card_text = "---\nname: my-card\n---\nTHE-CARD-TEXT\n";
  card.folder = folder;
  ctx_.skills = {card};

  auto dir = TempDir::Create("kpilot-ws-test-");
  ASSERT_TRUE(dir.ok());
  ASSERT_TRUE(PrepareAgentWorkspace(dir->path(), task_, ctx_, options_, 0).ok());
  for (const char* root : {"skills", ".claude/skills"}) {
    fs::path to = dir->path() / root / "my-card";
    auto text = ReadFile(to / "SKILL.md");
    ASSERT_TRUE(text.ok()) << root;
    EXPECT_EQ(*text, card.card_text) << "the card text kpilot holds, not the file on disk";
    EXPECT_TRUE(fs::is_regular_file(to / "examples" / "tile.cu")) << root;
    EXPECT_FALSE(fs::exists(fs::symlink_status(to / "leak.txt"))) << root;
    EXPECT_FALSE(fs::exists(to / ".git")) << root;
  }
  ctx_.skills[0].id = "../escape";
  EXPECT_FALSE(PrepareAgentWorkspace(dir->path(), task_, ctx_, options_, 0).ok());

  // An APPLIED_SKILLS that is a link is not read.
  ctx_.skills[0].id = "my-card";
  class LinkingRunner : public ProcessRunner {
   public:
    Result<ProcessResult> Run(const ProcessSpec& spec) override {
      (void)WriteFileAtomic(*spec.cwd / "candidate.cpp", kKernel + "int linked = 1;\n");
      (void)WriteFileAtomic(*spec.cwd / "elsewhere", "my-card\n");
      if (symlink("elsewhere", (*spec.cwd / "APPLIED_SKILLS").c_str()) != 0) return Status::Internal("symlink");
      ProcessResult r;
      r.exit_code = 0;
      return r;
    }
  } linking;
  options_.argv = {"true"};
  auto drafts = Propose(linking);
  ASSERT_TRUE(drafts.ok()) << drafts.status().ToString();
  EXPECT_EQ((*drafts)[0].failure, "");
  EXPECT_TRUE((*drafts)[0].skills_applied.empty());
}

TEST_F(CommandGeneratorTest, AMissingProgramIsAnErrorUpFront) {
  options_.argv = {"kpilot-no-such-agent-xyz"};
  auto p = MakeCommandGenerator("command:kpilot-no-such-agent-xyz", task_, SystemProcessRunner(), options_);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kNotFound);
  options_.argv = {};
  EXPECT_EQ(MakeCommandGenerator("command:", task_, SystemProcessRunner(), options_).status().code(),
            StatusCode::kInvalidInput);
}

}  // namespace
}  // namespace kpilot
