// The toolchain's logic around the compilers — lookup, timeout, cache key, arch choice — with a
// ProcessRunner double standing in for nvcc / g++ / nvidia-smi.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "core/fs.h"
#include "support/sync.h"
#include "toolchain/toolchain.h"

namespace kpilot {
namespace {
namespace fs = std::filesystem;

const fs::path kFixtures = fs::path(KPILOT_FIXTURES_DIR) / "toolchain";

// Answers `--version` with saved banners, nvidia-smi with `compute_cap_`, and a compile by
// writing the -o file (or by timing out / failing, as the test says).
class FakeRunner : public ProcessRunner {
 public:
  enum class CompileMode { kSucceed, kTimeOut, kFailSilently };

  Result<ProcessResult> Run(const ProcessSpec& spec) override {
    specs_.push_back(spec);
    ProcessResult r;
    r.exit_code = 0;
    const std::string prog = fs::path(spec.argv[0]).filename().string();
    if (spec.argv.size() == 2 && spec.argv[1] == "--version") {
      r.out = prog == "nvcc" ? nvcc_version_ : "g++ (Debian 12.2.0-14+deb12u1) 12.2.0\n";
      return r;
    }
    if (prog == "nvidia-smi") {
      if (compute_cap_.empty()) r.exit_code = 9;
      r.out = compute_cap_;
      return r;
    }
    compiles_.push_back(spec);
    switch (mode_) {
      case CompileMode::kTimeOut:
        r.timed_out = true;
        r.exit_code = -1;
        r.err = "partial output\n";
        return r;
      case CompileMode::kFailSilently:
        r.exit_code = 1;
        r.err = "something went wrong\n";
        return r;
      case CompileMode::kSucceed: {
        auto o = std::find(spec.argv.begin(), spec.argv.end(), "-o");
        if (o == spec.argv.end() || o + 1 == spec.argv.end()) return Status::Internal("fake: no -o");
        EXPECT_TRUE(WriteFileAtomic(*(o + 1),
                                    "\x7f"
                                    "ELF fake")
                        .ok());
        r.err =
            "ptxas info    : Compiling entry function '_Z1kv' for 'sm_90a'\n"
            "ptxas info    : Used 4 registers, used 0 barriers\n";
        return r;
      }
    }
    return r;
  }

  CompileMode mode_ = CompileMode::kSucceed;
  std::string nvcc_version_ = "Cuda compilation tools, release 13.0, V13.0.88\n";
  std::string compute_cap_;  // "" = nvidia-smi fails
  std::vector<ProcessSpec> specs_;
  std::vector<ProcessSpec> compiles_;
};

void MakeExecutable(const fs::path& p) {
  ASSERT_TRUE(WriteFileAtomic(p, "#!/bin/sh\nexit 1\n").ok());
  ASSERT_EQ(chmod(p.c_str(), 0755), 0);
}

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

class FakeToolchainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::Create("kpilot-toolchain-fake-");
    ASSERT_TRUE(dir.ok());
    dir_ = std::make_unique<TempDir>(std::move(*dir));
    bin_ = dir_->path() / "bin";
    MakeExecutable(bin_ / "nvcc");
    MakeExecutable(bin_ / "g++");
    search_.path = bin_.string();
    include_ = dir_->path() / "include";
    ASSERT_TRUE(WriteFileAtomic(include_ / "kpilot" / "kernel.h", "#define KPILOT_ABI_VERSION 1\n").ok());
    source_ = dir_->path() / "src" / "small.cu";
    ASSERT_TRUE(WriteFileAtomic(source_, "__global__ void k() {}\n").ok());
  }

  std::unique_ptr<Toolchain> Make() { return MakeSystemToolchain(dir_->path() / "cache", include_, runner_, search_); }

  std::unique_ptr<TempDir> dir_;
  fs::path bin_, include_, source_;
  ToolSearch search_;
  FakeRunner runner_;
};

TEST_F(FakeToolchainTest, TimeoutIsAVerdictNamingTheLimit) {
  runner_.mode_ = FakeRunner::CompileMode::kTimeOut;
  setenv("KPILOT_FAKE_TEST_API_KEY", "hunter2", 1);
  CompileOptions opts;
  opts.timeout_s = 7;
  auto out = Make()->Compile(source_, {}, opts);
  unsetenv("KPILOT_FAKE_TEST_API_KEY");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_TRUE(out->timed_out);
  EXPECT_FALSE(out->ok);
  EXPECT_EQ(out->first_error.rfind("small.cu: compile timed out after 7 s", 0), 0u) << out->first_error;
  EXPECT_EQ(out->log, "partial output\n");

  ASSERT_EQ(runner_.compiles_.size(), 1u);
  const ProcessSpec& spec = runner_.compiles_[0];
  EXPECT_EQ(spec.timeout_s, 7);
  EXPECT_EQ(spec.argv[0], (bin_ / "nvcc").string());
  EXPECT_EQ(spec.argv.back(), "small.cu");
  ASSERT_TRUE(spec.cwd.has_value());
  EXPECT_EQ(*spec.cwd, source_.parent_path());
  ASSERT_TRUE(spec.env.has_value());
  for (const auto& e : *spec.env) EXPECT_EQ(e.find("KPILOT_FAKE_TEST_API_KEY"), std::string::npos);

  // Not cached: the next compile runs the compiler again.
  runner_.mode_ = FakeRunner::CompileMode::kSucceed;
  auto retry = Make()->Compile(source_, {}, opts);
  ASSERT_TRUE(retry.ok());
  EXPECT_FALSE(retry->cache_hit);
  EXPECT_TRUE(retry->ok);
  EXPECT_EQ(runner_.compiles_.size(), 2u);
}

TEST_F(FakeToolchainTest, DefaultCudaCommand) {
  auto out = Make()->Compile(source_, {{"BLOCK", "128"}, {"UNROLL", "4"}}, CompileOptions{});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_TRUE(out->ok);
  const fs::path cache = dir_->path() / "cache";
  std::vector<std::string> want = {(bin_ / "nvcc").string(),
                                   "-O3",
                                   "-lineinfo",
                                   "-std=c++17",
                                   "-Xcompiler",
                                   "-fPIC",
                                   "-shared",
                                   "-Xptxas",
                                   "-v",
                                   "-gencode=arch=compute_90a,code=sm_90a",
                                   "-I",
                                   include_.string(),
                                   "-DBLOCK=128",
                                   "-DUNROLL=4",
                                   "-o",
                                   (cache / out->key / "object.so").string(),
                                   "small.cu"};
  EXPECT_EQ(out->command, want);
  ASSERT_EQ(out->resources.size(), 1u);
  EXPECT_EQ(out->resources[0].name, "k()");
  EXPECT_EQ(out->resources[0].registers, 4);
  EXPECT_EQ(out->key.size(), 64u);
}

TEST_F(FakeToolchainTest, FlagsReplaceTheDefaultsAndExtraFlagsAppend) {
  CompileOptions opts;
  opts.flags = std::vector<std::string>{"-O1"};
  opts.extra_flags = {"--use_fast_math"};
  auto out = Make()->Compile(source_, {}, opts);
  ASSERT_TRUE(out.ok());
  std::vector<std::string> want = {(bin_ / "nvcc").string(), "-O1", "--use_fast_math", "-I", include_.string()};
  EXPECT_TRUE(std::equal(want.begin(), want.end(), out->command.begin())) << ::testing::PrintToString(out->command);
}

TEST_F(FakeToolchainTest, HostDefaults) {
  fs::path cpp = dir_->path() / "src" / "k.cpp";
  ASSERT_TRUE(WriteFileAtomic(cpp, "int x;\n").ok());
  auto out = Make()->Compile(cpp, {{"N", "8"}}, CompileOptions{});
  ASSERT_TRUE(out.ok());
  std::vector<std::string> want = {(bin_ / "g++").string(),
                                   "-O3",
                                   "-march=native",
                                   "-fopenmp",
                                   "-std=c++17",
                                   "-fPIC",
                                   "-shared",
                                   "-I",
                                   include_.string(),
                                   "-DN=8",
                                   "-o"};
  EXPECT_TRUE(std::equal(want.begin(), want.end(), out->command.begin())) << ::testing::PrintToString(out->command);
  EXPECT_EQ(out->sass_status, "not applicable: host object");
}

TEST_F(FakeToolchainTest, DefaultArchFollowsTheVisibleGpu) {
  MakeExecutable(bin_ / "nvidia-smi");
  runner_.compute_cap_ = "8.0\n";
  auto ampere = Make()->Compile(source_, {}, CompileOptions{});
  ASSERT_TRUE(ampere.ok());
  EXPECT_TRUE(Contains(ampere->command, "-gencode=arch=compute_80,code=sm_80"));

  runner_.compute_cap_ = "9.0\n";
  auto hopper = Make()->Compile(source_, {}, CompileOptions{});
  ASSERT_TRUE(hopper.ok());
  EXPECT_TRUE(Contains(hopper->command, "-gencode=arch=compute_90a,code=sm_90a"));

  runner_.compute_cap_ = "";  // nvidia-smi present but no GPU answers
  auto none = Make()->Compile(source_, {}, CompileOptions{});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(Contains(none->command, "-gencode=arch=compute_90a,code=sm_90a"));
}

TEST_F(FakeToolchainTest, FailureWithoutAnErrorLineStillSaysWhat) {
  runner_.mode_ = FakeRunner::CompileMode::kFailSilently;
  auto out = Make()->Compile(source_, {}, CompileOptions{});
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->ok);
  EXPECT_EQ(out->first_error, "small.cu: nvcc failed (exit code 1); no error line found, see the log");
}

TEST_F(FakeToolchainTest, MissingCompilerIsUnavailableWithTheFix) {
  search_ = ToolSearch{};
  auto cu = Make()->Compile(source_, {}, CompileOptions{});
  ASSERT_FALSE(cu.ok());
  EXPECT_EQ(cu.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(cu.status().message().find("install the CUDA toolkit and put nvcc on PATH, or set CUDA_HOME"),
            std::string::npos)
      << cu.status().message();

  fs::path cpp = dir_->path() / "src" / "k.cpp";
  ASSERT_TRUE(WriteFileAtomic(cpp, "int x;\n").ok());
  auto host = Make()->Compile(cpp, {}, CompileOptions{});
  ASSERT_FALSE(host.ok());
  EXPECT_EQ(host.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(host.status().message().find("g++"), std::string::npos);
  EXPECT_TRUE(runner_.compiles_.empty());
}

TEST_F(FakeToolchainTest, CacheKeyCoversCompilerVersionAndAbiHeader) {
  auto first = Make()->Compile(source_, {}, CompileOptions{});
  ASSERT_TRUE(first.ok() && first->ok);
  auto same = Make()->Compile(source_, {}, CompileOptions{});
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(same->cache_hit);
  EXPECT_EQ(runner_.compiles_.size(), 1u);

  runner_.nvcc_version_ = "Cuda compilation tools, release 13.1, V13.1.10\n";
  auto new_nvcc = Make()->Compile(source_, {}, CompileOptions{});
  ASSERT_TRUE(new_nvcc.ok());
  EXPECT_FALSE(new_nvcc->cache_hit);
  EXPECT_NE(new_nvcc->key, first->key);

  ASSERT_TRUE(WriteFileAtomic(include_ / "kpilot" / "kernel.h", "#define KPILOT_ABI_VERSION 2\n").ok());
  auto new_abi = Make()->Compile(source_, {}, CompileOptions{});
  ASSERT_TRUE(new_abi.ok());
  EXPECT_FALSE(new_abi->cache_hit);
  EXPECT_NE(new_abi->key, new_nvcc->key);
}

TEST_F(FakeToolchainTest, NvccUnderCudaHome) {
  search_.path = "";
  search_.cuda_home = (dir_->path() / "cuda").string();
  MakeExecutable(dir_->path() / "cuda" / "bin" / "nvcc");
  MakeExecutable(dir_->path() / "cuda" / "bin" / "g++");
  auto out = Make()->Compile(source_, {}, CompileOptions{});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->command[0], (dir_->path() / "cuda" / "bin" / "nvcc").string());
}

TEST(FindTool, SearchOrderAndVenvLayout) {
  auto dir = TempDir::Create("kpilot-findtool-");
  ASSERT_TRUE(dir.ok());
  const fs::path root = dir->path();
  MakeExecutable(root / "a" / "tool");
  MakeExecutable(root / "home" / "bin" / "tool");
  MakeExecutable(root / "fallback" / "tool");
  ToolSearch s;
  s.path = (root / "missing").string() + ":" + (root / "a").string();
  s.cuda_home = (root / "home").string();
  s.dirs = {root / "fallback"};
  EXPECT_EQ(FindTool("tool", s), (root / "a" / "tool").string());
  s.path = "";
  EXPECT_EQ(FindTool("tool", s), (root / "home" / "bin" / "tool").string());
  s.cuda_home = "";
  EXPECT_EQ(FindTool("tool", s), (root / "fallback" / "tool").string());
  s.dirs.clear();
  EXPECT_EQ(FindTool("tool", s), "");

  // pip's nvidia-cuda-cuobjdump 13.x layout.
  const fs::path venv = root / "venv";
  const fs::path in_venv = venv / "lib" / "python3.11" / "site-packages" / "nvidia" / "cu13" / "bin" / "cuobjdump";
  EXPECT_EQ(FindCuobjdump(s), "");
  s.venvs = {root / "no-venv", venv};
  MakeExecutable(in_venv);
  EXPECT_EQ(FindCuobjdump(s), in_venv.string());
  // A plain file that is not executable is not a tool.
  ASSERT_EQ(chmod(in_venv.c_str(), 0644), 0);
  EXPECT_EQ(FindCuobjdump(s), "");
  ASSERT_EQ(chmod(in_venv.c_str(), 0755), 0);

  MakeExecutable(root / "override" / "cuobjdump");
  s.cuobjdump_override = (root / "override" / "cuobjdump").string();
  EXPECT_EQ(FindCuobjdump(s), s.cuobjdump_override);
}

TEST(FindCutlassTrees, TheWheelsHeadersThenExamples) {
  auto dir = TempDir::Create("kpilot-cutlass-");
  ASSERT_TRUE(dir.ok());
  const fs::path venv = dir->path() / "venv";
  ToolSearch s;
  s.venvs = {dir->path() / "no-venv", venv};
  EXPECT_TRUE(FindCutlassTrees(s).empty()) << "no wheel installed";
  const fs::path source = venv / "lib" / "python3.11" / "site-packages" / "cutlass_library" / "source";
  fs::create_directories(source / "include" / "cutlass");
  EXPECT_TRUE(FindCutlassTrees(s).empty()) << "no cute/ folder: not the CUTLASS 3+ layout";
  fs::create_directories(source / "include" / "cute");
  EXPECT_EQ(FindCutlassTrees(s), (std::vector<std::string>{(source / "include").string()}));
  fs::create_directories(source / "examples");
  EXPECT_EQ(FindCutlassTrees(s),
            (std::vector<std::string>{(source / "include").string(), (source / "examples").string()}));
}

// A compiler whose runs block until the test opens the gate (or the run is cancelled), so that
// calls can be made to overlap; thread-safe, unlike FakeRunner.
class GatedRunner : public ProcessRunner {
 public:
  Result<ProcessResult> Run(const ProcessSpec& spec) override {
    ProcessResult r;
    r.exit_code = 0;
    if (spec.argv.size() == 2 && spec.argv[1] == "--version") {
      r.out = "Cuda compilation tools, release 13.0, V13.0.88\n";
      return r;
    }
    std::unique_lock<std::mutex> lock(mu_);
    compiles_.push_back(spec);
    ++running_;
    cv_.notify_all();
    while (!open_ && !(spec.cancel && spec.cancel->load())) cv_.wait_for(lock, std::chrono::milliseconds(5));
    --running_;
    if (!open_) {
      r.cancelled = true;
      r.exit_code = -1;
      return r;
    }
    auto o = std::find(spec.argv.begin(), spec.argv.end(), "-o");
    if (o == spec.argv.end() || o + 1 == spec.argv.end()) return Status::Internal("gated: no -o");
    EXPECT_TRUE(WriteFileAtomic(*(o + 1),
                                "\x7f"
                                "ELF gated")
                    .ok());
    return r;
  }
  // Waits until `n` compiler runs are blocked at the gate.
  bool AwaitRunning(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return running_ == n; });
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  std::vector<ProcessSpec> Compiles() {
    std::lock_guard<std::mutex> lock(mu_);
    return compiles_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  int running_ = 0;
  std::vector<ProcessSpec> compiles_;
};

// A thread that is joined however the test ends: an ASSERT that returns early opens the gate
// first, so that no compile stays blocked and no std::thread is destroyed joinable.
class Joined {
 public:
  Joined(GatedRunner& gate, std::function<void()> f) : gate_(gate), thread_(std::move(f)) {}
  ~Joined() {
    if (!thread_.joinable()) return;
    gate_.Open();
    thread_.join();
  }
  void join() { thread_.join(); }

 private:
  GatedRunner& gate_;
  std::thread thread_;
};

class SingleFlightTest : public FakeToolchainTest {
 protected:
  void SetUp() override {
    FakeToolchainTest::SetUp();
    toolchain_ = MakeSystemToolchain(dir_->path() / "cache", include_, gated_, search_);
  }
  GatedRunner gated_;
  std::unique_ptr<Toolchain> toolchain_;
};

// A draft whose config a guess is compiling waits for that compile instead of starting its own.
TEST_F(SingleFlightTest, ASecondCompileOfAKeyWaitsForTheFirstAndOtherKeysDoNot) {
  Result<CompileOutput> first = Status::Internal("unset"), second = Status::Internal("unset"),
                        other = Status::Internal("unset");
  Joined a(gated_, [&] { first = toolchain_->Compile(source_, {{"BLOCK", "64"}}, CompileOptions{}); });
  ASSERT_TRUE(gated_.AwaitRunning(1));
  Joined b(gated_, [&] { second = toolchain_->Compile(source_, {{"BLOCK", "64"}}, CompileOptions{}); });
  Joined c(gated_, [&] { other = toolchain_->Compile(source_, {{"BLOCK", "128"}}, CompileOptions{}); });
  ASSERT_TRUE(gated_.AwaitRunning(2));  // BLOCK=128 runs beside BLOCK=64
  ASSERT_TRUE(testing::WaitUntilOtherThreadsBlock()) << "the second BLOCK=64 compile never waited";
  EXPECT_EQ(gated_.Compiles().size(), 2u) << "the second BLOCK=64 compile ran the compiler too";
  gated_.Open();
  a.join();
  b.join();
  c.join();
  ASSERT_TRUE(first.ok() && second.ok() && other.ok());
  EXPECT_TRUE(first->ok && second->ok && other->ok);
  EXPECT_FALSE(first->cache_hit);
  EXPECT_TRUE(second->cache_hit);
  EXPECT_EQ(second->object, first->object);
  EXPECT_EQ(second->key, first->key);
  EXPECT_NE(other->key, first->key);
  EXPECT_EQ(gated_.Compiles().size(), 2u);
}

// A guess cancelled mid-compile publishes nothing; the draft that waited for it compiles itself.
TEST_F(SingleFlightTest, AWaiterCompilesItselfWhenTheCompileItWaitedForIsCancelled) {
  auto cancel_first = std::make_shared<std::atomic<bool>>(false);
  CompileOptions guess;
  guess.cancel = cancel_first;
  Result<CompileOutput> first = Status::Internal("unset"), second = Status::Internal("unset");
  Joined a(gated_, [&] { first = toolchain_->Compile(source_, {{"BLOCK", "64"}}, guess); });
  ASSERT_TRUE(gated_.AwaitRunning(1));
  Joined b(gated_, [&] { second = toolchain_->Compile(source_, {{"BLOCK", "64"}}, CompileOptions{}); });
  ASSERT_TRUE(testing::WaitUntilOtherThreadsBlock()) << "the second compile never waited";
  cancel_first->store(true);
  a.join();
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.status().code(), StatusCode::kUnavailable);
  ASSERT_TRUE(gated_.AwaitRunning(1));  // the waiter's own run
  gated_.Open();
  b.join();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_TRUE(second->ok);
  EXPECT_FALSE(second->cache_hit);
  EXPECT_EQ(gated_.Compiles().size(), 2u);
}

TEST_F(SingleFlightTest, AWaiterWhoseOwnCancelTurnsTrueStopsWaiting) {
  Result<CompileOutput> first = Status::Internal("unset"), second = Status::Internal("unset");
  Joined a(gated_, [&] { first = toolchain_->Compile(source_, {{"BLOCK", "64"}}, CompileOptions{}); });
  ASSERT_TRUE(gated_.AwaitRunning(1));
  auto cancel_second = std::make_shared<std::atomic<bool>>(false);
  CompileOptions waiter;
  waiter.cancel = cancel_second;
  Joined b(gated_, [&] { second = toolchain_->Compile(source_, {{"BLOCK", "64"}}, waiter); });
  ASSERT_TRUE(testing::WaitUntilOtherThreadsBlock()) << "the second compile never waited";
  cancel_second->store(true);
  b.join();  // while the first compile still blocks
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(second.status().message().find("compile cancelled"), std::string::npos);
  gated_.Open();
  a.join();
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->ok);
  EXPECT_EQ(gated_.Compiles().size(), 1u);
}

TEST_F(FakeToolchainTest, TheCompilerRunsAtTheNiceValueAsked) {
  CompileOptions opts;
  opts.nice = 19;
  auto out = Make()->Compile(source_, {}, opts);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(runner_.compiles_.size(), 1u);
  EXPECT_EQ(runner_.compiles_[0].nice, 19);
  auto plain = Make()->Compile(source_, {{"BLOCK", "32"}}, CompileOptions{});
  ASSERT_TRUE(plain.ok());
  ASSERT_EQ(runner_.compiles_.size(), 2u);
  EXPECT_EQ(runner_.compiles_[1].nice, 0);
}

TEST(GencodeFlag, ArchSpellings) {
  EXPECT_EQ(*GencodeFlag("sm_90a"), "-gencode=arch=compute_90a,code=sm_90a");
  EXPECT_EQ(*GencodeFlag("sm_80"), "-gencode=arch=compute_80,code=sm_80");
  EXPECT_EQ(*GencodeFlag("sm_100a"), "-gencode=arch=compute_100a,code=sm_100a");
  for (const char* bad : {"90a", "sm_", "sm_90x", "compute_90", "sm_90a -O0"}) {
    auto r = GencodeFlag(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
  }
}

}  // namespace
}  // namespace kpilot
