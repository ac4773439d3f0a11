// Internal to src/toolchain: the system toolchain's class and what its parts share. Its members
// are defined by part: toolchain.cc (compilers, flags, the cache key, one compile per key),
// compile_cache.cc (reading a cache entry, compiling a miss and publishing its entry) and
// sass_extraction.cc (cuobjdump). Not part of the module's contract: include toolchain.h and
// call MakeSystemToolchain instead.
#pragma once

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "toolchain/toolchain.h"

namespace kpilot::toolchain {
namespace fs = std::filesystem;

// The files of a cache entry `<cache_dir>/<key>/`.
inline constexpr const char* kObjectName = "object.so";
inline constexpr const char* kLogName = "log.txt";
inline constexpr const char* kMetaName = "meta.json";
inline constexpr const char* kSassName = "sass.txt";

// A compile's argv: the keyed part (compiler and flags), then the output and the source's name.
std::vector<std::string> CommandWithOutput(const std::vector<std::string>& keyed, const fs::path& object,
                                           const std::string& file_name);

// Whether SASS from the device-only compile stands for the object's: its functions are the
// kernels ptxas reported for the full compile, no more and no fewer. Nothing to compare (flags
// without `-Xptxas -v`) is not a match.
bool SassCoversKernels(const std::string& sass, const std::vector<KernelResources>& resources);

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
  // The CUTLASS headers of search_ (FindCutlass), looked up once; null when there are none.
  const CutlassHeaders* Cutlass();
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
  void SassBeside(const ProcessSpec& compile, const std::string& cuobjdump,
                  std::shared_ptr<const std::atomic<bool>> stop, CompileOutput& out);
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
  std::optional<std::optional<CutlassHeaders>> cutlass_;  // outer: looked up yet

  std::mutex flight_mu_;
  std::condition_variable flight_cv_;
  std::map<std::string, std::shared_ptr<Flight>> in_flight_;
};

}  // namespace kpilot::toolchain
