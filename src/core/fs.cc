#include "core/fs.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace kpilot {
namespace fs = std::filesystem;

Result<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::error_code ec;
    if (!fs::exists(path, ec)) return Status::NotFound(path.string() + ": no such file");
    return Status::Internal(path.string() + ": cannot open: " + std::strerror(errno));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Status WriteFileAtomic(const fs::path& path, const std::string& data) {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  std::string tmp = path.string() + ".tmp.XXXXXX";
  int fd = mkstemp(tmp.data());
  if (fd < 0) return Status::Internal(path.string() + ": cannot create temporary file: " + std::strerror(errno));
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      close(fd);
      unlink(tmp.c_str());
      return Status::Internal(path.string() + ": write failed: " + std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  fchmod(fd, 0644);
  if (fsync(fd) != 0 || close(fd) != 0) {
    unlink(tmp.c_str());
    return Status::Internal(path.string() + ": fsync/close failed: " + std::strerror(errno));
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    unlink(tmp.c_str());
    return Status::Internal(path.string() + ": rename failed: " + std::strerror(err));
  }
  return Status::Ok();
}

Result<TempDir> TempDir::Create(const std::string& prefix) {
  const char* base = getenv("TMPDIR");
  return CreateIn(base && *base ? base : "/tmp", prefix);
}

Result<TempDir> TempDir::CreateIn(const fs::path& parent, const std::string& prefix) {
  std::string templ = (parent / (prefix + "XXXXXX")).string();
  if (mkdtemp(templ.data()) == nullptr)
    return Status::Internal("cannot create temporary directory " + templ + ": " + std::strerror(errno));
  return TempDir(fs::path(templ));
}

TempDir::TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)), keep_(other.keep_) { other.path_.clear(); }

TempDir& TempDir::operator=(TempDir&& other) noexcept {
  if (this != &other) {
    if (!path_.empty() && !keep_) {
      std::error_code ec;
      fs::remove_all(path_, ec);
    }
    path_ = std::move(other.path_);
    keep_ = other.keep_;
    other.path_.clear();
  }
  return *this;
}

TempDir::~TempDir() {
  if (!path_.empty() && !keep_) {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
}

std::string Tail(const std::string& text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t start = text.size() - max_bytes;
  // Continuation bytes are 10xxxxxx: start at the next character's first byte.
  for (int i = 0; i < 3 && start < text.size() && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80; ++i)
    ++start;
  return "…" + text.substr(start);
}

Result<std::optional<FileLock>> FileLock::TryLock(const std::filesystem::path& path, double wait_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status::Unavailable(path.string() + ": cannot open the lock file: " + std::strerror(errno));
  while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    int err = errno;
    if (err == EWOULDBLOCK && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    close(fd);
    if (err == EWOULDBLOCK) return std::optional<FileLock>();
    return Status::Unavailable(path.string() + ": cannot lock: " + std::strerror(err));
  }
  return std::optional<FileLock>(FileLock(fd));
}

FileLock::FileLock(FileLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

FileLock::~FileLock() {
  if (fd_ >= 0) close(fd_);  // closing the last descriptor releases the flock
}

std::filesystem::path ExecutableDir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return std::filesystem::current_path();
  buf[n] = 0;
  return std::filesystem::path(buf).parent_path();
}

std::optional<std::filesystem::path> BuildTreeSourceDir() {
  const std::filesystem::path build = std::filesystem::path(KPILOT_BUILD_DIR).lexically_normal();
  const std::filesystem::path exe = ExecutableDir().lexically_normal();
  auto [b, e] = std::mismatch(build.begin(), build.end(), exe.begin(), exe.end());
  if (b != build.end()) return std::nullopt;
  return std::filesystem::path(KPILOT_SOURCE_DIR);
}

}  // namespace kpilot
