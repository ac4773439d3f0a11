// Compiling candidates, references and baselines to shared objects, with resource reports.
//
// `.cu` sources go through nvcc (default `-O3 -lineinfo`, `-gencode=arch=compute_XXa,code=sm_XXa`
// for the visible GPU's architecture, sm_90a when none is visible), `.cpp` through g++ (default
// `-O3 -march=native -fopenmp`). Every compile is bounded by a timeout, keeps its full log,
// summarizes the first error as "file:line: message", and is cached by
// sha256(source, flags, params, toolchain version).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/subprocess.h"
#include "task/task.h"

namespace kpilot {

// Per-kernel resources from `ptxas -v` (cuda only).
struct KernelResources {
  std::string name;            // demangled where possible
  std::string mangled;
  std::string arch;            // "sm_90a"
  int registers = 0;
  int64_t shared_bytes = 0;    // static shared memory ("smem")
  int64_t stack_bytes = 0;     // stack frame
  int64_t spill_stores = 0;    // bytes
  int64_t spill_loads = 0;     // bytes
  int64_t constant_bytes = 0;  // cmem[0]
  int barriers = 0;
};

// SASS of one function, from `cuobjdump -sass`.
struct SassInstruction {
  std::string opcode;          // "LDG.E.128", predicate stripped
  std::string text;            // the whole instruction as printed
};
struct SassFunction {
  std::string name;            // as printed by cuobjdump (mangled)
  std::vector<SassInstruction> instructions;
};

struct CompileOptions {
  std::string cuda_arch;                 // e.g. "sm_90a"; empty = visible GPU, else sm_90a
  std::vector<std::string> extra_flags;  // appended to the defaults
  std::optional<std::vector<std::string>> flags;  // replaces the defaults when set
  double timeout_s = 120;
  bool want_sass = true;                 // run cuobjdump -sass on cuda objects
};

struct CompileOutput {
  bool ok = false;                       // false: a compile_error verdict, not a kpilot error
  std::filesystem::path object;          // the shared object (inside the cache)
  std::string log;                       // full compiler output (stdout + stderr)
  std::string first_error;               // "file:line: message" when !ok
  bool timed_out = false;
  double seconds = 0;                    // compiler wall time (0 on a cache hit)
  bool cache_hit = false;
  std::string key;                       // the cache key (sha256 hex)
  std::vector<std::string> command;      // the argv that was (or would have been) run
  std::vector<KernelResources> resources;  // cuda only
  std::string sass;                      // raw cuobjdump output, "" when unavailable
  std::string sass_status;               // "ok", or why it is unavailable
};

// The seam the harness compiles through. The real one runs nvcc / g++ as subprocesses.
class Toolchain {
 public:
  virtual ~Toolchain() = default;
  // Compiles `source` (its extension picks the compiler) with `params` as -D macros.
  // A source that fails to compile is CompileOutput{ok=false}; a missing compiler is
  // Status::Unavailable with the fix; an unreadable source is Status::NotFound.
  virtual Result<CompileOutput> Compile(const std::filesystem::path& source, const ParamValues& params,
                                        const CompileOptions& options) = 0;
};

// The real toolchain. `cache_dir` holds one folder per cache key (object, log, report).
// `include_dir` is where <kpilot/kernel.h> lives (its parent of `kpilot/`).
std::unique_ptr<Toolchain> MakeSystemToolchain(std::filesystem::path cache_dir,
                                               std::filesystem::path include_dir,
                                               ProcessRunner& runner = SystemProcessRunner());

// Pure parsers, tested on real tool output.
std::vector<KernelResources> ParsePtxasReport(const std::string& log);
std::vector<SassFunction> ParseSass(const std::string& cuobjdump_output);
// First error of a compiler log as "file:line: message" (nvcc and g++ formats); "" if none found.
std::string FirstCompileError(const std::string& log);

// Version strings ("nvcc 13.0.88", "g++ 12.2.0"), "" when the tool is absent.
std::string NvccVersion(ProcessRunner& runner = SystemProcessRunner());
std::string GxxVersion(ProcessRunner& runner = SystemProcessRunner());
// Path of cuobjdump (PATH, $CUDA_HOME/bin, the project venv), "" when absent.
std::string FindCuobjdump();

}  // namespace kpilot
