// The system toolchain: nvcc / g++ as subprocesses, a content-addressed cache of results. This
// file finds the compilers, picks the flags, computes the cache key and lets one call compile a
// key at a time; compile_cache.cc reads and writes the entries, sass_extraction.cc runs cuobjdump.
#include "toolchain/toolchain.h"

#include <cctype>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/fs.h"
#include "core/sha256.h"
#include "toolchain/system_toolchain.h"

namespace kpilot::toolchain {
namespace {

constexpr const char* kDefaultArch = "sm_90a";
constexpr double kProbeTimeoutS = 15;

bool IsIdentifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

// The CPU's model and feature flags: objects built with -march=native are only valid for them.
std::string HostCpuIdentity() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model, flags;
  while (std::getline(in, line) && (model.empty() || flags.empty())) {
    if (model.empty() && line.rfind("model name", 0) == 0) model = line;
    if (flags.empty() && line.rfind("flags", 0) == 0) flags = line;
  }
  return model + "\n" + flags;
}

// "9.0" (nvidia-smi's compute_cap) → "sm_90a"; "8.6" → "sm_86". "" when unparseable.
std::string ArchFromComputeCap(const std::string& cap) {
  int major = 0, minor = 0;
  if (std::sscanf(cap.c_str(), "%d.%d", &major, &minor) != 2 || major <= 0) return "";
  return "sm_" + std::to_string(major) + std::to_string(minor) + (major >= 9 ? "a" : "");
}

}  // namespace

std::vector<std::string> CommandWithOutput(const std::vector<std::string>& keyed, const fs::path& object,
                                           const std::string& file_name) {
  std::vector<std::string> argv = keyed;
  argv.push_back("-o");
  argv.push_back(object.string());
  argv.push_back(file_name);
  return argv;
}

Result<SystemToolchain::Compiler> SystemToolchain::FindCompiler(bool cuda) {
  std::lock_guard<std::mutex> lock(mu_);
  auto probe_gxx = [&]() -> Result<Compiler> {
    if (gxx_) return *gxx_;
    std::string path = FindTool("g++", search_);
    if (path.empty()) return Status::Unavailable("g++ not found on PATH: install it (Debian: apt-get install g++)");
    std::string text = ToolVersionOutput(runner_, path);
    gxx_ = Compiler{path, ParseGxxVersion(text), text};
    return *gxx_;
  };
  if (!cuda) return probe_gxx();
  if (nvcc_) return *nvcc_;
  std::string path = FindTool("nvcc", search_);
  if (path.empty())
    return Status::Unavailable(
        "nvcc not found (looked on PATH, in $CUDA_HOME/bin and /usr/local/cuda/bin): install the CUDA "
        "toolkit and put nvcc on PATH, or set CUDA_HOME");
  std::string text = ToolVersionOutput(runner_, path);
  Compiler c{path, ParseNvccVersion(text), text};
  // nvcc compiles the host half with g++; its version shapes the object too.
  if (std::string host = FindTool("g++", search_); !host.empty())
    c.version_key += "\n" + ToolVersionOutput(runner_, host);
  nvcc_ = c;
  return c;
}

const CutlassHeaders* SystemToolchain::Cutlass() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!cutlass_) cutlass_ = FindCutlass(search_);
  return *cutlass_ ? &**cutlass_ : nullptr;
}

std::string SystemToolchain::DefaultCudaArch() {
  std::lock_guard<std::mutex> lock(mu_);
  if (default_arch_) return *default_arch_;
  default_arch_ = kDefaultArch;
  std::string smi = FindTool("nvidia-smi", search_);
  if (smi.empty()) return *default_arch_;
  ProcessSpec spec;
  spec.argv = {smi, "--query-gpu=compute_cap", "--format=csv,noheader"};
  spec.timeout_s = kProbeTimeoutS;
  auto r = runner_.Run(spec);
  if (r.ok() && r->Succeeded()) {
    std::string arch = ArchFromComputeCap(r->out.substr(0, r->out.find('\n')));
    if (!arch.empty()) default_arch_ = arch;
  }
  return *default_arch_;
}

Result<std::vector<std::string>> SystemToolchain::Flags(bool cuda, const CompileOptions& options) {
  std::vector<std::string> flags;
  if (options.flags) {
    flags = *options.flags;
  } else if (cuda) {
    auto gencode = GencodeFlag(options.cuda_arch.empty() ? DefaultCudaArch() : options.cuda_arch);
    if (!gencode.ok()) return gencode.status();
    flags = {"-O3", "-lineinfo", "-std=c++17", "-Xcompiler", "-fPIC", "-shared", "-Xptxas", "-v", *gencode};
  } else {
    flags = {"-O3", "-march=native", "-fopenmp", "-std=c++17", "-fPIC", "-shared"};
  }
  flags.insert(flags.end(), options.extra_flags.begin(), options.extra_flags.end());
  return flags;
}

Result<CompileOutput> SystemToolchain::Compile(const fs::path& source, const ParamValues& params,
                                               const CompileOptions& options) {
  std::string ext = source.extension().string();
  if (ext != ".cu" && ext != ".cpp")
    return Status::InvalidInput(source.string() + ": unsupported source extension \"" + ext +
                                "\": expected .cu (compiled with nvcc) or .cpp (compiled with g++)");
  const bool cuda = ext == ".cu";
  auto text = ReadFile(source);
  if (!text.ok()) return text.status();
  for (const auto& [name, value] : params) {
    if (!IsIdentifier(name))
      return Status::InvalidInput(source.string() + ": parameter name \"" + name +
                                  "\" is not a C identifier (it becomes -D" + name + "=...)");
  }
  auto compiler = FindCompiler(cuda);
  if (!compiler.ok()) return compiler.status();
  auto flags = Flags(cuda, options);
  if (!flags.ok()) return flags.status();

  // argv less the output path: what the key covers. The compiler runs in the source's folder.
  std::vector<std::string> keyed = {compiler->path};
  keyed.insert(keyed.end(), flags->begin(), flags->end());
  keyed.push_back("-I");
  std::error_code ec;
  keyed.push_back(fs::absolute(include_dir_, ec).lexically_normal().string());
  const CutlassHeaders* cutlass = cuda && options.cutlass ? Cutlass() : nullptr;
  if (cutlass) {
    keyed.insert(keyed.end(), {"-I", cutlass->include.string()});
    if (!cutlass->util_include.empty()) keyed.insert(keyed.end(), {"-I", cutlass->util_include.string()});
  }
  for (const auto& [name, value] : params) keyed.push_back("-D" + name + "=" + value);
  const std::string file_name = source.filename().string();

  Sha256Builder key_builder;
  key_builder.Add("kpilot-compile-1").Add(*text).Add(file_name);
  for (size_t i = 1; i < keyed.size(); ++i) key_builder.Add(keyed[i]);
  key_builder.Add("params");
  for (const auto& [name, value] : params) key_builder.Add(name).Add(value);
  key_builder.Add(compiler->version_key);
  auto abi_header = ReadFile(include_dir_ / "kpilot" / "kernel.h");
  key_builder.Add(abi_header.ok() ? *abi_header : std::string());
  // The headers' version, not only their path: a wheel upgraded in place compiles anew.
  if (cutlass) key_builder.Add("cutlass " + cutlass->version);
  for (const auto& f : *flags)
    if (f.find("native") != std::string::npos) key_builder.Add(HostCpuIdentity());
  const std::string key = key_builder.HexDigest();

  const fs::path entry = cache_dir_ / key;
  for (;;) {
    auto hit = LoadEntry(entry, options, cuda);
    // Entries appear whole (one rename), so one that exists but does not load was damaged by
    // hand — unless a concurrent compile published it just now: look once more before removing.
    if (!hit && fs::exists(entry, ec)) {
      hit = LoadEntry(entry, options, cuda);
      if (!hit) fs::remove_all(entry, ec);
    }
    if (hit) {
      hit->key = key;
      hit->command = CommandWithOutput(keyed, entry / kObjectName, file_name);
      hit->compiler_version = compiler->version;
      if (cutlass) hit->cutlass_version = cutlass->version;
      return *std::move(hit);
    }
    std::shared_ptr<Flight> theirs;
    if (auto mine = Claim(key, theirs)) {
      struct Releaser {
        SystemToolchain* toolchain;
        const std::string& key;
        std::shared_ptr<Flight> flight;
        ~Releaser() { toolchain->Release(key, flight); }
      } releaser{this, key, std::move(mine)};
      // A compile of this key may have published it between the look above and the claim.
      if (auto late = LoadEntry(entry, options, cuda)) {
        late->key = key;
        late->command = CommandWithOutput(keyed, entry / kObjectName, file_name);
        late->compiler_version = compiler->version;
        if (cutlass) late->cutlass_version = cutlass->version;
        return *std::move(late);
      }
      auto fresh = CompileMiss(source, cuda, *compiler, keyed, key, options);
      if (fresh.ok()) {
        fresh->compiler_version = compiler->version;
        if (cutlass) fresh->cutlass_version = cutlass->version;
      }
      return fresh;
    }
    // Another call compiles this key: wait for it, then read what it published (next round), or
    // compile it here when it published nothing.
    std::unique_lock<std::mutex> lock(flight_mu_);
    while (!theirs->done) {
      if (options.cancel && options.cancel->load())
        return Status::Unavailable("compiling " + source.string() + ": compile cancelled");
      flight_cv_.wait_for(lock, std::chrono::milliseconds(50));
    }
  }
}

std::shared_ptr<SystemToolchain::Flight> SystemToolchain::Claim(const std::string& key,
                                                                std::shared_ptr<Flight>& theirs) {
  std::lock_guard<std::mutex> lock(flight_mu_);
  auto [it, claimed] = in_flight_.try_emplace(key, nullptr);
  if (!claimed) {
    theirs = it->second;
    return nullptr;
  }
  it->second = std::make_shared<Flight>();
  return it->second;
}

void SystemToolchain::Release(const std::string& key, const std::shared_ptr<Flight>& mine) {
  {
    std::lock_guard<std::mutex> lock(flight_mu_);
    mine->done = true;
    in_flight_.erase(key);
  }
  flight_cv_.notify_all();
}

}  // namespace kpilot::toolchain

namespace kpilot {
namespace fs = std::filesystem;

std::unique_ptr<Toolchain> MakeSystemToolchain(fs::path cache_dir, fs::path include_dir, ProcessRunner& runner,
                                               ToolSearch search) {
  // Compilers run in the source's folder, so every path handed to them must be absolute.
  std::error_code ec;
  fs::path cache = fs::absolute(cache_dir, ec), include = fs::absolute(include_dir, ec);
  return std::make_unique<toolchain::SystemToolchain>(std::move(cache), std::move(include), runner, std::move(search));
}

}  // namespace kpilot
