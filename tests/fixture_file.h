// Fixture files as captured: large profiler output is kept gzip-compressed (NAME.gz beside the
// name the test asks for) and read back whole. Tests that include this link ZLIB::ZLIB.
#pragma once

#include <zlib.h>

#include <filesystem>
#include <string>

#include "core/fs.h"
#include "core/status.h"

namespace kpilot::testing {

// The text of `path`, or of `path`.gz decompressed when only that exists.
inline Result<std::string> ReadFixture(const std::filesystem::path& path) {
  if (std::filesystem::exists(path)) return ReadFile(path);
  const std::filesystem::path gz = path.string() + ".gz";
  gzFile f = gzopen(gz.c_str(), "rb");
  if (!f) return Status::NotFound(path.string() + " (nor " + gz.string() + ") exists");
  std::string text;
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) text.append(buf, static_cast<size_t>(n));
  const bool failed = n < 0;
  gzclose(f);
  if (failed) return Status::InvalidInput(gz.string() + ": not a readable gzip file");
  return text;
}

}  // namespace kpilot::testing
