#include "core/fs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

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
  std::string templ = std::string(base && *base ? base : "/tmp") + "/" + prefix + "XXXXXX";
  if (mkdtemp(templ.data()) == nullptr)
    return Status::Internal("cannot create temporary directory " + templ + ": " + std::strerror(errno));
  return TempDir(fs::path(templ));
}

TempDir::TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)), keep_(other.keep_) {
  other.path_.clear();
}

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
  return "…" + text.substr(text.size() - max_bytes);
}

}  // namespace kpilot
