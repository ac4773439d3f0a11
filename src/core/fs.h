// Filesystem helpers: whole-file reads, atomic writes, temporary directories, file locks.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "core/status.h"

namespace kpilot {

// Reads a whole file. NotFound names the path when it does not exist.
Result<std::string> ReadFile(const std::filesystem::path& path);

// Writes `data` to a temporary file beside `path`, fsyncs it and renames it over `path`, so a
// crash leaves either the old or the new content, never a torn file. Creates parent folders.
Status WriteFileAtomic(const std::filesystem::path& path, const std::string& data);

// A fresh directory under $TMPDIR (or /tmp) removed with its content on destruction unless
// Keep() was called. Move-only.
class TempDir {
 public:
  // `prefix` starts the folder's name, e.g. "kpilot-eval-".
  static Result<TempDir> Create(const std::string& prefix);
  // The same inside `parent`.
  static Result<TempDir> CreateIn(const std::filesystem::path& parent, const std::string& prefix);
  TempDir(TempDir&& other) noexcept;
  TempDir& operator=(TempDir&& other) noexcept;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();

  const std::filesystem::path& path() const { return path_; }
  void Keep() { keep_ = true; }

 private:
  explicit TempDir(std::filesystem::path p) : path_(std::move(p)) {}
  std::filesystem::path path_;
  bool keep_ = false;
};

// The last `max_bytes` of `text` or fewer, prefixed with "…" when cut. The cut never splits a
// UTF-8 character (at most 3 more bytes are dropped), so the tail stays valid JSON text.
std::string Tail(const std::string& text, size_t max_bytes);

// An exclusive advisory lock (flock) on a file, held until destruction or the process's end —
// a kill -9 included, so a lock never outlives its holder. Move-only.
class FileLock {
 public:
  // The lock on `path` (created with its folders if missing), or nullopt when another open file
  // description holds it and does not let go within `wait_s` seconds (0: do not wait; a probe
  // that takes and drops a lock at once holds it for microseconds).
  static Result<std::optional<FileLock>> TryLock(const std::filesystem::path& path, double wait_s = 0);
  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// The folder of the running executable (/proc/self/exe); the current folder when unreadable.
std::filesystem::path ExecutableDir();
// The source tree this executable was built from, when it runs from that build's tree (a
// developer's build/bin); nullopt for an installed or copied executable, which must find what it
// needs through its install prefix, PATH or the environment, never a source checkout.
std::optional<std::filesystem::path> BuildTreeSourceDir();

}  // namespace kpilot
