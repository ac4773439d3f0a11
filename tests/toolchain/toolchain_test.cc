// The system toolchain against the real nvcc / g++ (skipped where a compiler is absent), and its
// timeout and lookup logic against a ProcessRunner double.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "core/fs.h"
#include "core/subprocess.h"
#include "support/sync.h"
#include "toolchain/toolchain.h"

#define KPILOT_NO_ABI_EXPORT
#include "kpilot/kernel.h"

namespace kpilot {
namespace {
namespace fs = std::filesystem;

const fs::path kIncludeDir = fs::path(KPILOT_SOURCE_DIR) / "include";
const fs::path kFixtures = fs::path(KPILOT_FIXTURES_DIR) / "toolchain";

bool HaveTool(const std::string& name) { return !FindTool(name, DefaultToolSearch()).empty(); }

#define REQUIRE_TOOL(name) \
  if (!HaveTool(name)) GTEST_SKIP() << name << " is not installed here"

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::vector<std::string> CacheEntries(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

class ToolchainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::Create("kpilot-toolchain-test-");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    dir_ = std::make_unique<TempDir>(std::move(*dir));
    cache_ = dir_->path() / "cache";
    toolchain_ = MakeSystemToolchain(cache_, kIncludeDir);
  }

  fs::path WriteSource(const std::string& name, const std::string& text) {
    fs::path p = dir_->path() / "src" / name;
    EXPECT_TRUE(WriteFileAtomic(p, text).ok());
    return p;
  }

  std::unique_ptr<TempDir> dir_;
  fs::path cache_;
  std::unique_ptr<Toolchain> toolchain_;
};

const char kHostSource[] = R"(#include <kpilot/kernel.h>
#ifndef SCALE
#error SCALE must be defined
#endif
KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int, const kpilot_tensor* outputs, int,
                                const kpilot_scalar*, int, void*) {
  const float* x = static_cast<const float*>(inputs[0].data);
  float* y = static_cast<float*>(outputs[0].data);
  const int64_t n = kpilot_numel(&inputs[0]);
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * SCALE;
  return 0;
}
)";

const char kCudaBad[] = R"(#include <kpilot/kernel.h>
__global__ void k(float* x) {
  x[0] = undefined_thing;
}
)";

const char kCudaSmall[] = R"(#include <kpilot/kernel.h>
__global__ void scale(const float4* __restrict__ in, float4* __restrict__ out, int n) {
  int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) { float4 v = in[i]; v.x *= 2.f; out[i] = v; }
}
KPILOT_EXPORT int kpilot_launch(const kpilot_tensor*, int, const kpilot_tensor*, int, const kpilot_scalar*, int,
                                void*) { return 0; }
)";

TEST_F(ToolchainTest, CudaCompileReportsPerKernelResources) {
  REQUIRE_TOOL("nvcc");
  CompileOptions opts;
  opts.want_sass = false;
  auto out = toolchain_->Compile(kFixtures / "kernels.cu", {}, opts);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_TRUE(out->ok) << out->log;
  EXPECT_FALSE(out->cache_hit);
  EXPECT_GT(out->seconds, 0);
  EXPECT_TRUE(fs::exists(out->object));
  EXPECT_EQ(out->object, cache_ / out->key / "object.so");
  EXPECT_TRUE(Contains(out->command, "-gencode=arch=compute_90a,code=sm_90a"));
  EXPECT_TRUE(Contains(out->command, "-lineinfo"));
  EXPECT_EQ(out->command.back(), "kernels.cu");
  EXPECT_EQ(out->sass_status, "not requested");

  ASSERT_EQ(out->resources.size(), 3u) << out->log;
  for (const auto& k : out->resources) {
    EXPECT_EQ(k.arch, "sm_90a");
    if (k.name == "reduce_smem(float const*, float*, int)") {
      EXPECT_EQ(k.shared_bytes, 1024);
      EXPECT_EQ(k.barriers, 1);
    } else if (k.name == "void demo::spill<40>(float*, int)") {
      EXPECT_LE(k.registers, 32);  // __launch_bounds__(1024, 2)
      EXPECT_GT(k.spill_stores, 0);
      EXPECT_GT(k.spill_loads, 0);
    } else {
      EXPECT_EQ(k.name, "copy4(float4 const*, float4*, int)");
      EXPECT_EQ(k.spill_stores, 0);
    }
  }
}

TEST_F(ToolchainTest, MaxrregcountForcesSpillsAndArchIsHonoured) {
  REQUIRE_TOOL("nvcc");
  fs::path src = WriteSource("spill.cu", R"(
__global__ void spill(float* out, int k) {
  float local[64];
  for (int j = 0; j < 64; ++j) local[j] = out[j * k + threadIdx.x];
  float acc = 0;
  for (int j = 0; j < 64; ++j) acc += local[(j * k) % 64] * local[j];
  out[threadIdx.x] = acc;
}
)");
  CompileOptions opts;
  opts.want_sass = false;
  opts.cuda_arch = "sm_80";
  opts.extra_flags = {"-maxrregcount=32"};
  auto out = toolchain_->Compile(src, {}, opts);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_TRUE(out->ok) << out->log;
  EXPECT_TRUE(Contains(out->command, "-gencode=arch=compute_80,code=sm_80"));
  ASSERT_EQ(out->resources.size(), 1u) << out->log;
  EXPECT_EQ(out->resources[0].arch, "sm_80");
  EXPECT_LE(out->resources[0].registers, 32);
  EXPECT_GT(out->resources[0].stack_bytes, 0);
  EXPECT_GT(out->resources[0].spill_stores, 0) << out->log;
  EXPECT_GT(out->resources[0].constant_bytes, 0);  // sm_80 reports cmem[0]
}

TEST_F(ToolchainTest, HostCompileDlopensAndRuns) {
  REQUIRE_TOOL("g++");
  fs::path src = WriteSource("scale.cpp", kHostSource);
  auto out = toolchain_->Compile(src, {{"SCALE", "3"}}, CompileOptions{});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_TRUE(out->ok) << out->log;
  EXPECT_TRUE(Contains(out->command, "-march=native"));
  EXPECT_TRUE(Contains(out->command, "-fopenmp"));
  EXPECT_TRUE(Contains(out->command, "-DSCALE=3"));
  EXPECT_TRUE(out->resources.empty());
  EXPECT_EQ(out->sass, "");

  // RTLD_NODELETE: -fopenmp pulls in libgomp, whose idle worker threads crash if dlclose()
  // unmaps it under them.
  void* handle = dlopen(out->object.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto launch = reinterpret_cast<kpilot_launch_fn>(dlsym(handle, "kpilot_launch"));
  auto abi = reinterpret_cast<kpilot_abi_version_fn>(dlsym(handle, "kpilot_abi_version"));
  ASSERT_NE(launch, nullptr);
  ASSERT_NE(abi, nullptr);
  EXPECT_EQ(abi(), KPILOT_ABI_VERSION);
  float x[4] = {1, 2, 3, 4}, y[4] = {};
  kpilot_tensor in{}, outp{};
  in.data = x;
  in.dtype = KPILOT_F32;
  in.rank = 1;
  in.shape[0] = 4;
  in.strides[0] = 1;
  outp = in;
  outp.data = y;
  EXPECT_EQ(launch(&in, 1, &outp, 1, nullptr, 0, nullptr), 0);
  EXPECT_FLOAT_EQ(y[3], 12.f);  // -DSCALE=3 reached the source
  dlclose(handle);
}

TEST_F(ToolchainTest, CompileErrorIsAVerdictWithFileAndLine) {
  REQUIRE_TOOL("nvcc");
  fs::path src = WriteSource("bad.cu", kCudaBad);
  auto out = toolchain_->Compile(src, {}, CompileOptions{});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_FALSE(out->ok);
  EXPECT_FALSE(out->timed_out);
  EXPECT_EQ(out->first_error, "bad.cu:3: identifier \"undefined_thing\" is undefined");
  EXPECT_NE(out->log.find("1 error detected"), std::string::npos);
  EXPECT_TRUE(out->object.empty());
  EXPECT_EQ(out->sass_status, "unavailable: compile failed");

  // The failure is cached: same input, same verdict, without running nvcc again.
  auto again = toolchain_->Compile(src, {}, CompileOptions{});
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->cache_hit);
  EXPECT_FALSE(again->ok);
  EXPECT_EQ(again->first_error, out->first_error);
  EXPECT_EQ(again->log, out->log);
}

TEST_F(ToolchainTest, HostCompileErrorIsAVerdictWithFileAndLine) {
  REQUIRE_TOOL("g++");
  fs::path src = WriteSource("bad.cpp", "int f() {\n  return nope;\n}\n");
  auto out = toolchain_->Compile(src, {}, CompileOptions{});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_FALSE(out->ok);
  EXPECT_EQ(out->first_error.rfind("bad.cpp:2: ", 0), 0u) << out->first_error;
  EXPECT_NE(out->first_error.find("nope"), std::string::npos);
}

TEST_F(ToolchainTest, SecondCompileIsACacheHitAndChangesMiss) {
  REQUIRE_TOOL("nvcc");
  fs::path src = WriteSource("small.cu", kCudaSmall);
  CompileOptions opts;
  opts.want_sass = false;
  auto t0 = std::chrono::steady_clock::now();
  auto first = toolchain_->Compile(src, {{"BLOCK", "128"}}, opts);
  auto t1 = std::chrono::steady_clock::now();
  auto second = toolchain_->Compile(src, {{"BLOCK", "128"}}, opts);
  auto t2 = std::chrono::steady_clock::now();
  ASSERT_TRUE(first.ok() && second.ok());
  ASSERT_TRUE(first->ok) << first->log;
  EXPECT_FALSE(first->cache_hit);
  EXPECT_TRUE(second->cache_hit);
  EXPECT_TRUE(second->ok);
  EXPECT_EQ(second->seconds, 0);
  EXPECT_EQ(second->key, first->key);
  EXPECT_EQ(second->object, first->object);
  EXPECT_EQ(second->command, first->command);
  EXPECT_EQ(second->log, first->log);
  ASSERT_EQ(second->resources.size(), 1u);
  EXPECT_EQ(second->resources[0].registers, first->resources[0].registers);
  EXPECT_EQ(second->resources[0].name, first->resources[0].name);
  EXPECT_LT(t2 - t1, t1 - t0);
  // One published entry with its files; no staging folder left behind.
  EXPECT_EQ(CacheEntries(cache_), std::vector<std::string>{first->key});
  EXPECT_EQ(CacheEntries(cache_ / first->key), (std::vector<std::string>{"log.txt", "meta.json", "object.so"}));

  auto other_param = toolchain_->Compile(src, {{"BLOCK", "256"}}, opts);
  ASSERT_TRUE(other_param.ok());
  EXPECT_FALSE(other_param->cache_hit);
  EXPECT_NE(other_param->key, first->key);

  CompileOptions more_flags = opts;
  more_flags.extra_flags = {"-DEXTRA=1"};
  auto other_flags = toolchain_->Compile(src, {{"BLOCK", "128"}}, more_flags);
  ASSERT_TRUE(other_flags.ok());
  EXPECT_FALSE(other_flags->cache_hit);
  EXPECT_NE(other_flags->key, first->key);
  EXPECT_NE(other_flags->key, other_param->key);

  // A copy of the source elsewhere under the same name is the same compile.
  fs::path copy = dir_->path() / "elsewhere" / "small.cu";
  ASSERT_TRUE(WriteFileAtomic(copy, kCudaSmall).ok());
  auto moved = toolchain_->Compile(copy, {{"BLOCK", "128"}}, opts);
  ASSERT_TRUE(moved.ok());
  EXPECT_TRUE(moved->cache_hit);
  EXPECT_EQ(moved->key, first->key);

  // An edited source misses.
  ASSERT_TRUE(WriteFileAtomic(src, std::string(kCudaSmall) + "// edited\n").ok());
  auto edited = toolchain_->Compile(src, {{"BLOCK", "128"}}, opts);
  ASSERT_TRUE(edited.ok());
  EXPECT_FALSE(edited->cache_hit);
}

TEST_F(ToolchainTest, UnreadableCacheEntryIsRebuilt) {
  REQUIRE_TOOL("g++");
  fs::path src = WriteSource("scale.cpp", kHostSource);
  auto first = toolchain_->Compile(src, {{"SCALE", "2"}}, CompileOptions{});
  ASSERT_TRUE(first.ok() && first->ok);
  ASSERT_TRUE(WriteFileAtomic(cache_ / first->key / "meta.json", "{ not json").ok());
  auto second = toolchain_->Compile(src, {{"SCALE", "2"}}, CompileOptions{});
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(second->cache_hit);
  EXPECT_TRUE(second->ok);
  auto third = toolchain_->Compile(src, {{"SCALE", "2"}}, CompileOptions{});
  ASSERT_TRUE(third.ok());
  EXPECT_TRUE(third->cache_hit);
}

TEST_F(ToolchainTest, ConcurrentCompilesOfOneKeyAgree) {
  REQUIRE_TOOL("g++");
  fs::path src = WriteSource("scale.cpp", kHostSource);
  Result<CompileOutput> a = Status::Internal("unset"), b = Status::Internal("unset");
  std::thread ta([&] { a = toolchain_->Compile(src, {{"SCALE", "5"}}, CompileOptions{}); });
  std::thread tb([&] { b = toolchain_->Compile(src, {{"SCALE", "5"}}, CompileOptions{}); });
  ta.join();
  tb.join();
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_TRUE(a->ok && b->ok);
  EXPECT_EQ(a->object, b->object);
  EXPECT_TRUE(fs::exists(a->object));
  EXPECT_EQ(CacheEntries(cache_), std::vector<std::string>{a->key});
}

TEST_F(ToolchainTest, RealNvccTimeoutIsAVerdictAndNotCached) {
  REQUIRE_TOOL("nvcc");
  fs::path src = WriteSource("small.cu", kCudaSmall);
  CompileOptions opts;
  opts.timeout_s = 0.05;
  auto out = toolchain_->Compile(src, {{"BLOCK", "64"}}, opts);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_TRUE(out->timed_out);
  EXPECT_FALSE(out->ok);
  EXPECT_NE(out->first_error.find("timed out after 0.05 s"), std::string::npos) << out->first_error;
  EXPECT_TRUE(CacheEntries(cache_).empty());  // neither an entry nor a staging folder
}

// A cancelled compile kills the real nvcc and is an error, not a verdict; nothing is cached.
TEST_F(ToolchainTest, RealNvccCancelledMidCompileIsUnavailableAndNotCached) {
  REQUIRE_TOOL("nvcc");
  fs::path src = WriteSource("small.cu", kCudaSmall);
  CompileOptions opts;
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  opts.cancel = cancel;
  // Cancelled once nvcc compiles the source: a child of this process whose start nothing
  // signals (the toolchain's own probes, `nvcc --version` and the like, are not it).
  std::thread canceller([cancel, src] {
    testing::WaitUntil([&] {
      for (pid_t child : ChildPids(getpid())) {
        auto cmdline = ReadFile("/proc/" + std::to_string(child) + "/cmdline");
        if (cmdline.ok() && cmdline->find(src.filename().string()) != std::string::npos) return true;
      }
      return false;
    });
    cancel->store(true);
  });
  auto t0 = std::chrono::steady_clock::now();
  auto out = toolchain_->Compile(src, {{"BLOCK", "64"}}, opts);
  canceller.join();
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(out.status().message().find("compile cancelled"), std::string::npos) << out.status().ToString();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.5);
  EXPECT_TRUE(CacheEntries(cache_).empty());
}

TEST_F(ToolchainTest, SourceErrorsAreInputErrors) {
  auto bad_ext = toolchain_->Compile(WriteSource("kernel.py", "print(1)\n"), {}, CompileOptions{});
  ASSERT_FALSE(bad_ext.ok());
  EXPECT_EQ(bad_ext.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(bad_ext.status().message().find("kernel.py"), std::string::npos);
  EXPECT_NE(bad_ext.status().message().find(".cu"), std::string::npos);
  EXPECT_NE(bad_ext.status().message().find(".cpp"), std::string::npos);

  auto missing = toolchain_->Compile(dir_->path() / "nope.cpp", {}, CompileOptions{});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);

  REQUIRE_TOOL("g++");
  fs::path src = WriteSource("scale.cpp", kHostSource);
  auto bad_param = toolchain_->Compile(src, {{"BAD NAME", "1"}}, CompileOptions{});
  ASSERT_FALSE(bad_param.ok());
  EXPECT_EQ(bad_param.status().code(), StatusCode::kInvalidInput);

  REQUIRE_TOOL("nvcc");
  CompileOptions bad_arch;
  bad_arch.cuda_arch = "hopper";
  auto arch = toolchain_->Compile(WriteSource("small.cu", kCudaSmall), {}, bad_arch);
  ASSERT_FALSE(arch.ok());
  EXPECT_EQ(arch.status().code(), StatusCode::kInvalidInput);
}

TEST_F(ToolchainTest, SassExtractedWhenCuobjdumpIsAvailable) {
  REQUIRE_TOOL("nvcc");
  if (FindCuobjdump().empty())
    GTEST_SKIP() << "cuobjdump not found: run scripts/setup-venv.sh (PyPI nvidia-cuda-cuobjdump)";
  fs::path src = WriteSource("small.cu", kCudaSmall);
  auto out = toolchain_->Compile(src, {{"BLOCK", "128"}}, CompileOptions{});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_TRUE(out->ok) << out->log;
  ASSERT_EQ(out->sass_status, "ok");
  auto fns = ParseSass(out->sass);
  ASSERT_EQ(fns.size(), 1u) << out->sass;
  EXPECT_EQ(fns[0].name, "_Z5scalePK6float4PS_i");
  EXPECT_EQ(fns[0].arch, "sm_90a");
  EXPECT_TRUE(std::any_of(fns[0].instructions.begin(), fns[0].instructions.end(),
                          [](const SassInstruction& i) { return i.opcode.rfind("LDG.E.128", 0) == 0; }));
  EXPECT_TRUE(fs::exists(cache_ / out->key / "sass.txt"));

  auto hit = toolchain_->Compile(src, {{"BLOCK", "128"}}, CompileOptions{});
  ASSERT_TRUE(hit.ok());
  EXPECT_TRUE(hit->cache_hit);
  EXPECT_EQ(hit->sass_status, "ok");
  EXPECT_EQ(hit->sass, out->sass);
}

// The real process runner, recording what cuobjdump was asked to do.
class CuobjdumpRecorder : public ProcessRunner {
 public:
  Result<ProcessResult> Run(const ProcessSpec& spec) override {
    if (fs::path(spec.argv[0]).filename() == "nvcc" && Contains(spec.argv, "-cubin")) {
      std::lock_guard<std::mutex> lock(mu_);
      calls_.push_back("nvcc -cubin");
    }
    if (fs::path(spec.argv[0]).filename() == "cuobjdump") {
      std::lock_guard<std::mutex> lock(mu_);
      std::string call = spec.argv[1];
      for (size_t i = 2; i < spec.argv.size(); ++i) {
        const std::string ext = fs::path(spec.argv[i]).extension().string();
        call += " " + (ext.empty() ? spec.argv[i] : ext);  // a path by its extension
      }
      calls_.push_back(call);
    }
    return SystemProcessRunner().Run(spec);
  }
  std::vector<std::string> calls_;
  std::mutex mu_;
};

const ParamValues kRowSoftmaxParams = {{"REG_TILE", "8"}, {"ROWS_PER_BLOCK", "2"}, {"ROW_THREADS", "64"}, {"VEC", "2"}};
fs::path RowSoftmaxSource() {
  return fs::path(KPILOT_SOURCE_DIR) / "examples" / "cuda" / "row_softmax" / "candidates" / "block_in_registers.cu";
}

// An entry cached without SASS gets it from the kernels' ELF alone (docs: ExtractSass); it must
// hold every function and instruction that cuobjdump finds in the whole object.
TEST_F(ToolchainTest, SassOfTheKernelsElfMatchesTheWholeObjects) {
  REQUIRE_TOOL("nvcc");
  const std::string cuobjdump = FindCuobjdump();
  if (cuobjdump.empty()) GTEST_SKIP() << "cuobjdump not found: run scripts/setup-venv.sh";
  CuobjdumpRecorder recorder;
  toolchain_ = MakeSystemToolchain(cache_, kIncludeDir, recorder);
  CompileOptions no_sass;
  no_sass.want_sass = false;
  auto first = toolchain_->Compile(RowSoftmaxSource(), kRowSoftmaxParams, no_sass);
  ASSERT_TRUE(first.ok() && first->ok) << (first.ok() ? first->log : first.status().ToString());
  EXPECT_EQ(recorder.calls_, std::vector<std::string>{}) << "no SASS was asked for";
  auto out = toolchain_->Compile(RowSoftmaxSource(), kRowSoftmaxParams, CompileOptions{});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_TRUE(out->cache_hit);
  ASSERT_TRUE(out->ok) << out->log;
  ASSERT_EQ(out->sass_status, "ok");
  auto whole = SystemProcessRunner().Run({.argv = {cuobjdump, "-sass", out->object.string()}});
  ASSERT_TRUE(whole.ok() && whole->Succeeded());
  auto got = ParseSass(out->sass), want = ParseSass(whole->out);
  ASSERT_GE(want.size(), 2u);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].name, want[i].name);
    EXPECT_EQ(got[i].arch, want[i].arch);
    EXPECT_EQ(got[i].instructions.size(), want[i].instructions.size()) << want[i].name;
  }
  // nvcc -shared's layout: the listing, the extract, then the one cubin left, not the object.
  EXPECT_EQ(recorder.calls_, (std::vector<std::string>{"-lelf .so", "-xelf all .so", "-sass .cubin"}));
}

// A compile that wants SASS makes it beside the object, from a device-only compile's cubin
// (SystemToolchain::SassBeside): the same text, byte for byte, as the object's kernels' ELF gives,
// and no cuobjdump on the object.
TEST_F(ToolchainTest, SassBesideTheCompileIsTheObjectsSass) {
  REQUIRE_TOOL("nvcc");
  if (FindCuobjdump().empty()) GTEST_SKIP() << "cuobjdump not found: run scripts/setup-venv.sh";
  CuobjdumpRecorder recorder;
  toolchain_ = MakeSystemToolchain(cache_, kIncludeDir, recorder);
  auto beside = toolchain_->Compile(RowSoftmaxSource(), kRowSoftmaxParams, CompileOptions{});
  ASSERT_TRUE(beside.ok()) << beside.status().ToString();
  ASSERT_TRUE(beside->ok) << beside->log;
  ASSERT_EQ(beside->sass_status, "ok");
  EXPECT_EQ(recorder.calls_, (std::vector<std::string>{"nvcc -cubin", "-sass .cubin"}));
  EXPECT_TRUE(fs::exists(cache_ / beside->key / "sass.txt"));
  std::error_code ec;
  for (const auto& f : fs::directory_iterator(cache_ / beside->key, ec))
    EXPECT_NE(f.path().extension(), ".cubin") << "the cubin stays out of the cache entry";

  // The same compile in a cache of its own, SASS added later from the object.
  auto other = MakeSystemToolchain(dir_->path() / "other-cache", kIncludeDir);
  CompileOptions no_sass;
  no_sass.want_sass = false;
  ASSERT_TRUE(other->Compile(RowSoftmaxSource(), kRowSoftmaxParams, no_sass).ok());
  auto from_object = other->Compile(RowSoftmaxSource(), kRowSoftmaxParams, CompileOptions{});
  ASSERT_TRUE(from_object.ok() && from_object->cache_hit);
  ASSERT_EQ(from_object->sass_status, "ok");
  EXPECT_EQ(beside->sass, from_object->sass);
  EXPECT_GE(ParseSass(beside->sass).size(), 2u);
}

// sass_inline false: the SASS made beside the compile is kept, but an entry without SASS is
// given back as it is (kSassLater), with no cuobjdump on the object.
TEST_F(ToolchainTest, SassLeftForLaterRunsNoCuobjdumpOnTheObject) {
  REQUIRE_TOOL("nvcc");
  if (FindCuobjdump().empty()) GTEST_SKIP() << "cuobjdump not found: run scripts/setup-venv.sh";
  CuobjdumpRecorder recorder;
  toolchain_ = MakeSystemToolchain(cache_, kIncludeDir, recorder);
  CompileOptions ready_only;
  ready_only.sass_inline = false;
  auto beside = toolchain_->Compile(WriteSource("small.cu", kCudaSmall), {{"BLOCK", "64"}}, ready_only);
  ASSERT_TRUE(beside.ok() && beside->ok) << (beside.ok() ? beside->log : beside.status().ToString());
  EXPECT_EQ(beside->sass_status, "ok");
  EXPECT_EQ(ParseSass(beside->sass).size(), 1u);

  CompileOptions no_sass;
  no_sass.want_sass = false;
  ASSERT_TRUE(toolchain_->Compile(WriteSource("small.cu", kCudaSmall), {{"BLOCK", "32"}}, no_sass).ok());
  recorder.calls_.clear();
  auto later = toolchain_->Compile(WriteSource("small.cu", kCudaSmall), {{"BLOCK", "32"}}, ready_only);
  ASSERT_TRUE(later.ok() && later->ok);
  EXPECT_TRUE(later->cache_hit);
  EXPECT_EQ(later->sass_status, kSassLater);
  EXPECT_EQ(later->sass, "");
  EXPECT_EQ(recorder.calls_, std::vector<std::string>{});
  auto now = toolchain_->Compile(WriteSource("small.cu", kCudaSmall), {{"BLOCK", "32"}}, CompileOptions{});
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->sass_status, "ok") << "a second compile with sass_inline makes it";
}

// Flags the device-only compile cannot take (two targets: nvcc -cubin allows one) leave the SASS
// to the object, as before.
TEST_F(ToolchainTest, SassComesFromTheObjectWhenTheCubinCompileFails) {
  REQUIRE_TOOL("nvcc");
  if (FindCuobjdump().empty()) GTEST_SKIP() << "cuobjdump not found: run scripts/setup-venv.sh";
  CuobjdumpRecorder recorder;
  toolchain_ = MakeSystemToolchain(cache_, kIncludeDir, recorder);
  CompileOptions two_targets;
  two_targets.extra_flags = {"-gencode=arch=compute_90a,code=compute_90a"};
  auto out = toolchain_->Compile(WriteSource("small.cu", kCudaSmall), {{"BLOCK", "64"}}, two_targets);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_TRUE(out->ok) << out->log;
  ASSERT_EQ(out->sass_status, "ok");
  EXPECT_EQ(ParseSass(out->sass).size(), 1u) << out->sass;
  ASSERT_FALSE(recorder.calls_.empty());
  EXPECT_EQ(recorder.calls_.front(), "nvcc -cubin");
  EXPECT_TRUE(Contains(recorder.calls_, "-lelf .so")) << "the object was disassembled";
}

TEST_F(ToolchainTest, SassAddedToAnEntryCachedWithoutIt) {
  REQUIRE_TOOL("nvcc");
  if (FindCuobjdump().empty()) GTEST_SKIP() << "cuobjdump not found: run scripts/setup-venv.sh";
  fs::path src = WriteSource("small.cu", kCudaSmall);
  CompileOptions no_sass;
  no_sass.want_sass = false;
  auto first = toolchain_->Compile(src, {{"BLOCK", "32"}}, no_sass);
  ASSERT_TRUE(first.ok() && first->ok);
  EXPECT_EQ(first->sass, "");
  auto with_sass = toolchain_->Compile(src, {{"BLOCK", "32"}}, CompileOptions{});
  ASSERT_TRUE(with_sass.ok());
  EXPECT_TRUE(with_sass->cache_hit);
  EXPECT_EQ(with_sass->sass_status, "ok");
  EXPECT_FALSE(ParseSass(with_sass->sass).empty());
}

TEST_F(ToolchainTest, SassStatusSaysHowToGetCuobjdump) {
  REQUIRE_TOOL("nvcc");
  ToolSearch search;
  search.path = fs::path(FindTool("nvcc", DefaultToolSearch())).parent_path().string() + ":" +
                fs::path(FindTool("g++", DefaultToolSearch())).parent_path().string();
  if (!FindCuobjdump(search).empty()) GTEST_SKIP() << "cuobjdump sits beside nvcc here";
  auto toolchain = MakeSystemToolchain(cache_, kIncludeDir, SystemProcessRunner(), search);
  auto out = toolchain->Compile(WriteSource("small.cu", kCudaSmall), {{"BLOCK", "64"}}, CompileOptions{});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_TRUE(out->ok) << out->log;
  EXPECT_EQ(out->sass, "");
  EXPECT_EQ(out->sass_status.rfind("unavailable: cuobjdump not found", 0), 0u) << out->sass_status;
  EXPECT_NE(out->sass_status.find("nvidia-cuda-cuobjdump"), std::string::npos);
}

TEST_F(ToolchainTest, VersionsOfTheInstalledCompilers) {
  REQUIRE_TOOL("nvcc");
  REQUIRE_TOOL("g++");
  std::string nvcc = NvccVersion();
  std::string gxx = GxxVersion();
  EXPECT_EQ(nvcc.rfind("nvcc ", 0), 0u) << nvcc;
  EXPECT_EQ(std::count(nvcc.begin(), nvcc.end(), '.'), 2) << nvcc;
  EXPECT_EQ(gxx.rfind("g++ ", 0), 0u) << gxx;
}

}  // namespace
}  // namespace kpilot
