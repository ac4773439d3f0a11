// The system toolchain: nvcc / g++ as subprocesses, a content-addressed cache of results.
#include "toolchain/toolchain.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "core/sha256.h"

namespace kpilot {
namespace fs = std::filesystem;
namespace {

constexpr const char* kObjectName = "object.so";
constexpr const char* kLogName = "log.txt";
constexpr const char* kMetaName = "meta.json";
constexpr const char* kSassName = "sass.txt";
constexpr const char* kDefaultArch = "sm_90a";
constexpr double kCuobjdumpTimeoutS = 60;
constexpr double kProbeTimeoutS = 15;

// A compile's argv: the keyed part (compiler and flags), then the output and the source's name.
std::vector<std::string> CommandWithOutput(const std::vector<std::string>& keyed, const fs::path& object,
                                           const std::string& file_name) {
  std::vector<std::string> argv = keyed;
  argv.push_back("-o");
  argv.push_back(object.string());
  argv.push_back(file_name);
  return argv;
}

// The device-only compile beside a full one: the same argv, with `-cubin` and the cubin as its
// output, and without `-shared` (nothing is linked). nvcc makes the same cubin either way: the
// SASS of both was byte for byte the same (row_softmax, nvcc 13.0).
std::vector<std::string> CubinCommand(std::vector<std::string> argv, const fs::path& cubin) {
  std::erase(argv, std::string("-shared"));
  for (size_t i = 0; i + 1 < argv.size(); ++i)
    if (argv[i] == "-o") argv[i + 1] = cubin.string();
  argv.insert(argv.begin() + 1, "-cubin");
  return argv;
}

// Whether SASS from the device-only compile stands for the object's: its functions are the
// kernels ptxas reported for the full compile, no more and no fewer. Nothing to compare (flags
// without `-Xptxas -v`) is not a match.
bool SassCoversKernels(const std::string& sass, const std::vector<KernelResources>& resources) {
  if (resources.empty()) return false;
  std::set<std::string> functions, kernels;
  for (const auto& f : ParseSass(sass)) functions.insert(f.name);
  for (const auto& k : resources) kernels.insert(k.mangled.empty() ? k.name : k.mangled);
  return functions == kernels;
}

// Runs `spec` (a cuobjdump -sass) and takes its output as the SASS when it succeeded and found
// a function; false leaves `out` as it was.
bool TakeSass(ProcessRunner& runner, const ProcessSpec& spec, CompileOutput& out) {
  auto r = runner.Run(spec);
  if (!r.ok() || !r->Succeeded() || r->out.find("Function : ") == std::string::npos) return false;
  out.sass = r->out;
  out.sass_status = "ok";
  return true;
}

// Whether `cuobjdump -xelf all` into one folder keeps every ELF that can hold kernels, from the
// `cuobjdump -lelf` listing ("ELF file    1: name.sm_90a.cubin"): all names differ, or there are
// two of one name (nvcc -shared's empty device-link ELF, then the kernels' one, which is kept).
bool ElfsExtractWhole(const std::string& listing) {
  std::vector<std::string> names;
  std::istringstream in(listing);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("ELF file", 0) != 0) continue;
    auto colon = line.find(": ");
    if (colon != std::string::npos) names.push_back(line.substr(colon + 2));
  }
  if (names.empty()) return false;
  if (names.size() == 2 && names[0] == names[1]) return true;
  std::sort(names.begin(), names.end());
  return std::adjacent_find(names.begin(), names.end()) == names.end();
}

const char* const kNoCuobjdump =
    "unavailable: cuobjdump not found — run the setup script or install the "
    "nvidia-cuda-cuobjdump PyPI package";

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

std::string FormatSeconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", s);
  return buf;
}

Status SyncFile(const fs::path& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Internal(path.string() + ": cannot open: " + std::strerror(errno));
  int rc = fsync(fd);
  close(fd);
  if (rc != 0) return Status::Internal(path.string() + ": fsync failed: " + std::strerror(errno));
  return Status::Ok();
}

nlohmann::json ResourcesToJson(const std::vector<KernelResources>& resources) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& k : resources) {
    out.push_back({{"name", k.name},
                   {"mangled", k.mangled},
                   {"arch", k.arch},
                   {"registers", k.registers},
                   {"shared_bytes", k.shared_bytes},
                   {"stack_bytes", k.stack_bytes},
                   {"spill_stores", k.spill_stores},
                   {"spill_loads", k.spill_loads},
                   {"constant_bytes", k.constant_bytes},
                   {"barriers", k.barriers}});
  }
  return out;
}

std::vector<KernelResources> ResourcesFromJson(const nlohmann::json& in) {
  std::vector<KernelResources> out;
  for (const auto& j : in) {
    KernelResources k;
    k.name = j.value("name", "");
    k.mangled = j.value("mangled", "");
    k.arch = j.value("arch", "");
    k.registers = j.value("registers", 0);
    k.shared_bytes = j.value("shared_bytes", int64_t{0});
    k.stack_bytes = j.value("stack_bytes", int64_t{0});
    k.spill_stores = j.value("spill_stores", int64_t{0});
    k.spill_loads = j.value("spill_loads", int64_t{0});
    k.constant_bytes = j.value("constant_bytes", int64_t{0});
    k.barriers = j.value("barriers", 0);
    out.push_back(std::move(k));
  }
  return out;
}

std::string MetaJson(const CompileOutput& out, const std::string& compiler_version) {
  nlohmann::json meta = {{"format", 1},
                         {"ok", out.ok},
                         {"first_error", out.first_error},
                         {"compile_seconds", out.seconds},
                         {"compiler_version", compiler_version},
                         {"command", out.command},
                         {"resources", ResourcesToJson(out.resources)},
                         {"sass_status", out.sass_status}};
  return meta.dump(2) + "\n";
}

// Removes a staging folder when the compile ends without publishing it.
class StagingFolder {
 public:
  explicit StagingFolder(fs::path path) : path_(std::move(path)) {}
  StagingFolder(const StagingFolder&) = delete;
  StagingFolder& operator=(const StagingFolder&) = delete;
  ~StagingFolder() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  void Release() { path_.clear(); }

 private:
  fs::path path_;
};

class SystemToolchain : public Toolchain {
 public:
  SystemToolchain(fs::path cache_dir, fs::path include_dir, ProcessRunner& runner, ToolSearch search)
      : cache_dir_(std::move(cache_dir)),
        include_dir_(std::move(include_dir)),
        runner_(runner),
        search_(std::move(search)) {}

  Result<CompileOutput> Compile(const fs::path& source, const ParamValues& params,
                                const CompileOptions& options) override;

 private:
  struct Compiler {
    std::string path;
    std::string version;      // "nvcc 13.0.88"
    std::string version_key;  // every --version output that affects the object
  };

  Result<Compiler> FindCompiler(bool cuda);
  std::string DefaultCudaArch();
  Result<std::vector<std::string>> Flags(bool cuda, const CompileOptions& options);
  std::optional<CompileOutput> LoadEntry(const fs::path& entry, const CompileOptions& options, bool cuda);
  // Runs cuobjdump on `object`; fills out.sass / out.sass_status.
  // `cancel` as CompileOptions::cancel; a cancelled extraction leaves sass_status unavailable.
  void ExtractSass(const fs::path& object, CompileOutput& out,
                   std::shared_ptr<const std::atomic<bool>> cancel = nullptr, int nice = 0);
  // The SASS of a cuda compile, made while the compiler builds the object: a device-only
  // compile of the same argv into a cubin (CubinCommand), then `cuobjdump -sass` on the cubin.
  // The object is ready later than the cubin (nvcc compiles the host side and links after
  // ptxas), so its SASS is ready with it rather than after a cuobjdump on the object (0.6 s on
  // the H200's host; docs/results.md, "SASS beside the compile"). `stop` ends it early (the
  // caller sets it on a cancel); fills out.sass / out.sass_status.
  void SassBeside(const ProcessSpec& compile, const std::string& cuobjdump, std::shared_ptr<const std::atomic<bool>> stop,
                  CompileOutput& out);
  // Runs the compiler for a key no other call of this toolchain is compiling (Compile).
  Result<CompileOutput> CompileMiss(const fs::path& source, bool cuda, const Compiler& compiler,
                                    const std::vector<std::string>& keyed, const std::string& key,
                                    const CompileOptions& options);
  // Cache entries being built by a call of Compile, by key: a second call for one waits for it.
  struct Flight {
    bool done = false;
  };
  // Claims `key` for this call (empty: it is claimed already; `theirs` is that claim).
  std::shared_ptr<Flight> Claim(const std::string& key, std::shared_ptr<Flight>& theirs);
  void Release(const std::string& key, const std::shared_ptr<Flight>& mine);

  const fs::path cache_dir_;
  const fs::path include_dir_;
  ProcessRunner& runner_;
  const ToolSearch search_;

  std::mutex mu_;  // guards the lazily probed facts below
  std::optional<Compiler> nvcc_, gxx_;
  std::optional<std::string> default_arch_;

  std::mutex flight_mu_;
  std::condition_variable flight_cv_;
  std::map<std::string, std::shared_ptr<Flight>> in_flight_;
};

Result<SystemToolchain::Compiler> SystemToolchain::FindCompiler(bool cuda) {
  std::lock_guard<std::mutex> lock(mu_);
  auto probe_gxx = [&]() -> Result<Compiler> {
    if (gxx_) return *gxx_;
    std::string path = FindTool("g++", search_);
    if (path.empty())
      return Status::Unavailable("g++ not found on PATH: install it (Debian: apt-get install g++)");
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

void SystemToolchain::ExtractSass(const fs::path& object, CompileOutput& out,
                                  std::shared_ptr<const std::atomic<bool>> cancel, int nice) {
  std::string tool = FindCuobjdump(search_);
  if (tool.empty()) {
    out.sass_status = kNoCuobjdump;
    return;
  }
  ProcessSpec spec;
  spec.timeout_s = kCuobjdumpTimeoutS;
  spec.cancel = std::move(cancel);
  spec.nice = nice;
  // cuobjdump disassembles each ELF of an object at a fixed cost (0.3 s on the development
  // machine, 0.6 s on the H200's host), and nvcc -shared puts an empty device-link ELF first,
  // under the name of the kernels' one. Extracted into one folder, the kernels' ELF is the one
  // left: disassembling that alone halves the cost. Only for the layouts ElfsExtractWhole
  // accepts; the whole object is disassembled otherwise, and when the extract finds no function.
  std::error_code ec;
  const std::string absolute = fs::absolute(object, ec).string();
  spec.argv = {tool, "-lelf", absolute};
  auto listed = runner_.Run(spec);
  std::optional<TempDir> dir;
  if (listed.ok() && listed->Succeeded() && ElfsExtractWhole(listed->out))
    if (auto made = TempDir::Create("kpilot-sass-"); made.ok()) dir.emplace(std::move(*made));
  if (dir) {
    spec.argv = {tool, "-xelf", "all", absolute};
    spec.cwd = dir->path();
    auto extracted = runner_.Run(spec);
    std::vector<std::string> cubins;
    if (extracted.ok() && extracted->Succeeded())
      for (const auto& f : fs::directory_iterator(dir->path(), ec))
        if (f.path().extension() == ".cubin") cubins.push_back(f.path().filename().string());
    if (!cubins.empty()) {
      std::sort(cubins.begin(), cubins.end());
      spec.argv = {tool, "-sass"};
      spec.argv.insert(spec.argv.end(), cubins.begin(), cubins.end());
      if (TakeSass(runner_, spec, out)) return;
    }
    spec.cwd.reset();
  }
  if (spec.cancel && spec.cancel->load()) {
    out.sass_status = "unavailable: cancelled";
    return;
  }
  spec.argv = {tool, "-sass", object.string()};
  auto r = runner_.Run(spec);
  if (!r.ok()) {
    out.sass_status = "unavailable: " + r.status().message();
  } else if (!r->Succeeded()) {
    out.sass_status = "unavailable: " + tool + " -sass " + r->Describe(spec.timeout_s) + ": " + Tail(r->err, 300);
  } else {
    out.sass = r->out;
    out.sass_status = "ok";
  }
}

void SystemToolchain::SassBeside(const ProcessSpec& compile, const std::string& cuobjdump,
                                 std::shared_ptr<const std::atomic<bool>> stop, CompileOutput& out) {
  auto dir = TempDir::Create("kpilot-cubin-");
  if (!dir.ok()) {
    out.sass_status = "unavailable: " + dir.status().message();
    return;
  }
  const fs::path cubin = dir->path() / "device.cubin";
  ProcessSpec spec = compile;
  spec.argv = CubinCommand(compile.argv, cubin);
  spec.cancel = stop;
  auto built = runner_.Run(spec);
  if (!built.ok() || !built->Succeeded()) {
    out.sass_status = "unavailable: the device-only compile did not succeed";
    return;
  }
  ProcessSpec dump;
  dump.argv = {cuobjdump, "-sass", cubin.string()};
  dump.timeout_s = kCuobjdumpTimeoutS;
  dump.cancel = stop;
  dump.nice = compile.nice;
  if (!TakeSass(runner_, dump, out))
    out.sass_status = "unavailable: cuobjdump on the device-only compile's cubin did not succeed";
}

std::optional<CompileOutput> SystemToolchain::LoadEntry(const fs::path& entry, const CompileOptions& options,
                                                        bool cuda) {
  auto meta_text = ReadFile(entry / kMetaName);
  if (!meta_text.ok()) return std::nullopt;
  auto meta = nlohmann::json::parse(*meta_text, nullptr, /*allow_exceptions=*/false);
  if (meta.is_discarded() || !meta.is_object()) return std::nullopt;
  CompileOutput out;
  try {
    out.ok = meta.value("ok", false);
    out.first_error = meta.value("first_error", "");
    out.resources = ResourcesFromJson(meta.value("resources", nlohmann::json::array()));
    out.sass_status = meta.value("sass_status", "");
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;  // a hand-edited or foreign meta.json: rebuild the entry
  }
  auto log = ReadFile(entry / kLogName);
  if (!log.ok()) return std::nullopt;
  out.log = std::move(*log);
  std::error_code ec;
  if (out.ok) {
    out.object = entry / kObjectName;
    if (!fs::exists(out.object, ec)) return std::nullopt;
  }
  out.cache_hit = true;

  if (!cuda || !out.ok) return out;
  if (!options.want_sass) {
    out.sass_status = "not requested";
    return out;
  }
  if (auto sass = ReadFile(entry / kSassName); sass.ok()) {
    out.sass = std::move(*sass);
    out.sass_status = "ok";
    return out;
  }
  if (!options.sass_inline) {
    out.sass_status = kSassLater;
    return out;
  }
  // Cached before cuobjdump was available (or without SASS): add it to the entry now.
  ExtractSass(out.object, out, nullptr, options.nice);
  if (out.sass_status == "ok" && WriteFileAtomic(entry / kSassName, out.sass).ok()) {
    nlohmann::json updated = meta;
    updated["sass_status"] = "ok";
    (void)WriteFileAtomic(entry / kMetaName, updated.dump(2) + "\n");
  }
  return out;
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
        return *std::move(late);
      }
      auto fresh = CompileMiss(source, cuda, *compiler, keyed, key, options);
      if (fresh.ok()) fresh->compiler_version = compiler->version;
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

Result<CompileOutput> SystemToolchain::CompileMiss(const fs::path& source, bool cuda, const Compiler& compiler,
                                                   const std::vector<std::string>& keyed, const std::string& key,
                                                   const CompileOptions& options) {
  std::error_code ec;
  const fs::path entry = cache_dir_ / key;
  const std::string file_name = source.filename().string();
  auto command_with_output = [&](const fs::path& object) { return CommandWithOutput(keyed, object, file_name); };
  fs::create_directories(cache_dir_, ec);
  std::string staging_template = (cache_dir_ / (".staging-" + key.substr(0, 16) + "-XXXXXX")).string();
  if (mkdtemp(staging_template.data()) == nullptr)
    return Status::Internal(cache_dir_.string() + ": cannot create a cache staging folder: " +
                            std::strerror(errno));
  const fs::path staging = staging_template;
  StagingFolder staging_guard(staging);  // removed on every return below unless published

  CompileOutput out;
  out.key = key;
  out.command = command_with_output(entry / kObjectName);
  ProcessSpec spec;
  spec.argv = command_with_output(staging / kObjectName);
  spec.cwd = source.has_parent_path() ? fs::absolute(source.parent_path(), ec) : fs::current_path(ec);
  spec.env = ScrubbedEnvironment();
  spec.timeout_s = options.timeout_s;
  spec.cancel = options.cancel;
  spec.nice = options.nice;
  // The SASS is made beside the object (SassBeside), and stopped with the compile on any return
  // but the one that reads it.
  struct Beside {
    std::shared_ptr<std::atomic<bool>> stop = std::make_shared<std::atomic<bool>>(false);
    std::atomic<bool> done{false};
    CompileOutput got;
    std::thread thread;
    // Waits for it; a `cancel` that turns true meanwhile stops it (its processes watch `stop`).
    void Join(const std::shared_ptr<const std::atomic<bool>>& cancel = nullptr) {
      while (cancel && thread.joinable() && !done.load()) {
        if (cancel->load()) stop->store(true);
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      if (thread.joinable()) thread.join();
    }
    ~Beside() {
      stop->store(true);
      Join();
    }
  } beside;
  const std::string cuobjdump = cuda && options.want_sass ? FindCuobjdump(search_) : std::string();
  if (!cuobjdump.empty())
    beside.thread = std::thread([&, cuobjdump] {
      SassBeside(spec, cuobjdump, beside.stop, beside.got);
      beside.done.store(true);
    });
  auto run = runner_.Run(spec);
  if (!run.ok()) {
    return run.status().WithContext("compiling " + source.string());
  }
  auto cancelled = [&] { return Status::Unavailable("compiling " + source.string() + ": compile cancelled"); };
  if (run->cancelled) return cancelled();
  out.log = run->out + run->err;
  out.seconds = run->wall_s;
  if (run->timed_out) {
    // Not cached: a timeout says as much about the machine's load as about the source.
    out.timed_out = true;
    out.first_error = file_name + ": compile timed out after " + FormatSeconds(options.timeout_s) +
                      " s (raise CompileOptions::timeout_s if the source is just slow to compile)";
    out.sass_status = "unavailable: compile timed out";
    return out;
  }
  out.ok = run->Succeeded() && fs::exists(staging / kObjectName);
  // A failure is cached only when the compiler located an error in the source; anything else
  // (a linker that cannot write, a killed compiler) may say more about the machine than the code.
  bool cacheable = out.ok;
  if (!out.ok) {
    out.first_error = FirstCompileError(out.log);
    cacheable = !out.first_error.empty() && out.log.find("cannot open output file") == std::string::npos;
    if (out.first_error.empty())
      out.first_error = file_name + ": " + fs::path(compiler.path).filename().string() + " failed (" +
                        run->Describe(options.timeout_s) + "); no error line found, see the log";
  }
  if (cuda) out.resources = ParsePtxasReport(out.log);
  if (!cuda) {
    out.sass_status = "not applicable: host object";
  } else if (!out.ok) {
    out.sass_status = "unavailable: compile failed";
  } else if (!options.want_sass) {
    out.sass_status = "not requested";
  } else {
    beside.Join(options.cancel);
    if (beside.got.sass_status == "ok" && SassCoversKernels(beside.got.sass, out.resources)) {
      out.sass = std::move(beside.got.sass);
      out.sass_status = "ok";
    } else if (!options.sass_inline) {
      out.sass_status = kSassLater;
    } else {
      ExtractSass(staging / kObjectName, out, options.cancel, options.nice);
    }
    // cuobjdump cancelled: an entry without its SASS must not be cached.
    if (out.sass_status != "ok" && options.cancel && options.cancel->load()) return cancelled();
  }

  if (!cacheable) return out;

  // Fill the staging folder, then publish it with one rename.
  KPILOT_RETURN_IF_ERROR(WriteFileAtomic(staging / kLogName, out.log));
  if (out.sass_status == "ok") KPILOT_RETURN_IF_ERROR(WriteFileAtomic(staging / kSassName, out.sass));
  if (out.ok) KPILOT_RETURN_IF_ERROR(SyncFile(staging / kObjectName));
  CompileOutput stored = out;
  if ((!options.want_sass && stored.sass_status == "not requested") || stored.sass_status == kSassLater)
    stored.sass_status = "";
  KPILOT_RETURN_IF_ERROR(WriteFileAtomic(staging / kMetaName, MetaJson(stored, compiler.version)));
  if (rename(staging.c_str(), entry.c_str()) == 0) {
    staging_guard.Release();
  } else {
    int err = errno;
    // Another compile of the same key published first; its entry holds the same result.
    if (!(err == EEXIST || err == ENOTEMPTY) || !fs::exists(entry / kMetaName, ec))
      return Status::Internal(entry.string() + ": cannot publish the cache entry: " + std::strerror(err));
  }
  if (out.ok) out.object = entry / kObjectName;
  return out;
}

}  // namespace

std::unique_ptr<Toolchain> MakeSystemToolchain(fs::path cache_dir, fs::path include_dir, ProcessRunner& runner,
                                               ToolSearch search) {
  // Compilers run in the source's folder, so every path handed to them must be absolute.
  std::error_code ec;
  fs::path cache = fs::absolute(cache_dir, ec), include = fs::absolute(include_dir, ec);
  return std::make_unique<SystemToolchain>(std::move(cache), std::move(include), runner, std::move(search));
}

}  // namespace kpilot
