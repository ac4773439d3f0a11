// The host saxpy task and a job on it, shared by the local executor's tests (host evaluations
// stand in for GPU ones: the host runner ignores the device).
#pragma once

#include <memory>
#include <optional>

#include "core/fs.h"
#include "exec/executor.h"
#include "task/loader.h"
#include "test_paths.h"
#include "toolchain/toolchain.h"

namespace kpilot {

// A temporary folder, the host saxpy task and a system toolchain caching in that folder.
struct Saxpy {
  std::optional<TempDir> dir;
  Task task;
  std::unique_ptr<Toolchain> toolchain;
  void Load() {
    auto d = TempDir::Create("kpilot-local-executor-");
    ASSERT_TRUE(d.ok());
    dir.emplace(std::move(*d));
    auto t = LoadTask(testing::SourceDir() / "examples" / "host" / "saxpy");
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    task = std::move(*t);
    toolchain = MakeSystemToolchain(dir->path() / "cache", testing::SourceDir() / "include");
  }
};

// A job evaluating the host saxpy task's omp_simd candidate on its first workload.
inline EvalJob SaxpyJob(const Task& task, double max_timing_s) {
  EvalJob j;
  j.task = &task;
  j.source = task.dir / "candidates" / "omp_simd.cpp";
  j.options.workloads = {task.workloads.front().name};
  j.options.timing.max_seconds = max_timing_s;
  return j;
}

}  // namespace kpilot
