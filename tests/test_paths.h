// Where tests find the source tree and the built binaries: the paths compiled in, unless
// KPILOT_TEST_SOURCE_DIR / KPILOT_TEST_BINARY_DIR say otherwise (as on the GPU machine, where a
// copy of the tree and carried binaries live elsewhere).
#pragma once

#include <cstdlib>
#include <filesystem>

namespace kpilot::testing {

inline std::filesystem::path SourceDir() {
  const char* env = std::getenv("KPILOT_TEST_SOURCE_DIR");
  return env && *env ? env : KPILOT_SOURCE_DIR;
}

inline std::filesystem::path BinaryDir() {
  const char* env = std::getenv("KPILOT_TEST_BINARY_DIR");
  return env && *env ? env : KPILOT_BINARY_DIR;
}

inline std::filesystem::path RunnerPath() { return BinaryDir() / "bin" / "kpilot-runner"; }

}  // namespace kpilot::testing
