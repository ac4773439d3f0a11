// The kpilot binary as a user runs it, for the CLI tests: one process from `cwd`, its output
// and exit code (an empty result, with a test failure, when it cannot start).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/subprocess.h"
#include "test_paths.h"

namespace kpilot::testing {

inline ProcessResult RunKpilot(const std::filesystem::path& cwd, const std::vector<std::string>& args,
                               double timeout_s = 300) {
  ProcessSpec spec;
  spec.argv = {(BinaryDir() / "bin" / "kpilot").string()};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.cwd = cwd;
  spec.timeout_s = timeout_s;
  auto r = SystemProcessRunner().Run(spec);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : ProcessResult{};
}

}  // namespace kpilot::testing
