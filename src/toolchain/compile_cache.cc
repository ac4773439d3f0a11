// The system toolchain's cache entries: reading one back (LoadEntry), and compiling a miss into a
// staging folder that is published as the entry with one rename (CompileMiss).
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>
#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "toolchain/system_toolchain.h"

namespace kpilot::toolchain {
namespace {

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

}  // namespace

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
    return Status::Internal(cache_dir_.string() + ": cannot create a cache staging folder: " + std::strerror(errno));
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

}  // namespace kpilot::toolchain
