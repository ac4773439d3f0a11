// Compiling candidates, references and baselines to shared objects, with resource reports.
//
// `.cu` sources go through nvcc (default `-O3 -lineinfo`, `-gencode=arch=compute_XXa,code=sm_XXa`
// for the visible GPU's architecture, sm_90a when none is visible), `.cpp` through g++ (default
// `-O3 -march=native -fopenmp`). Every compile is bounded by a timeout, keeps its full log,
// summarizes the first error as "file:line: message", and is cached by
// sha256(source, flags, params, toolchain version).
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/subprocess.h"
#include "task/task.h"

namespace kpilot {

// Per-kernel resources from `ptxas -v` (cuda only).
struct KernelResources {
  std::string name;  // demangled where possible
  std::string mangled;
  std::string arch;  // "sm_90a"
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
  std::string opcode;  // "LDG.E.128", predicate stripped
  std::string text;    // the instruction as printed, predicate included; without the
                       // offset, the trailing ";" and the encoding comment
  // Added: where it sits and what guards it.
  uint32_t offset = 0;    // byte offset in the function, from "/*0070*/"
  std::string predicate;  // "@P0", "@!PT", ... ("" when unpredicated)
};
struct SassFunction {
  std::string name;  // as printed by cuobjdump (mangled)
  std::vector<SassInstruction> instructions;
  std::string arch;  // added: "sm_90a", from the enclosing "code for sm_90a"
};

struct CompileOptions {
  std::string cuda_arch;                          // e.g. "sm_90a"; empty = visible GPU, else sm_90a
  std::vector<std::string> extra_flags;           // appended to the defaults
  std::optional<std::vector<std::string>> flags;  // replaces the defaults when set
  double timeout_s = 120;
  bool want_sass = true;  // run cuobjdump -sass on cuda objects
  // With want_sass: false takes only the SASS that is ready with the object (made beside the
  // compile, or cached), never a cuobjdump on the object after it (0.6 s on the H200's host):
  // where that would be needed, CompileOutput::sass_status is kSassLater, and a second Compile
  // with this true makes it (a cache hit then). Not part of the cache key.
  bool sass_inline = true;
  // When set and it turns true, a running compiler is killed and Compile returns Unavailable
  // ("compile cancelled"); nothing is cached. Not part of the cache key. May be null.
  std::shared_ptr<const std::atomic<bool>> cancel;
  // The compiler's and cuobjdump's nice value (ProcessSpec::nice): compiles that run beside a
  // GPU's timing yield the cores to its runner, and guesses yield them to the drafts. Not part
  // of the cache key.
  int nice = 0;
  // CUDA sources only: the CUTLASS/CuTe headers the toolchain found (FindCutlass) on the include
  // path, their version part of the cache key. Off for a task or run that must not use them.
  bool cutlass = true;
};

struct CompileOutput {
  bool ok = false;               // false: a compile_error verdict, not a kpilot error
  std::filesystem::path object;  // the shared object (inside the cache)
  std::string log;               // full compiler output (stdout + stderr)
  std::string first_error;       // "file:line: message" when !ok
  bool timed_out = false;
  double seconds = 0;  // compiler wall time (0 on a cache hit)
  bool cache_hit = false;
  std::string key;                         // the cache key (sha256 hex)
  std::vector<std::string> command;        // the argv that was (or would have been) run
  std::vector<KernelResources> resources;  // cuda only
  std::string sass;                        // raw cuobjdump output, "" when unavailable
  std::string sass_status;                 // "ok", or why it is unavailable
  std::string compiler_version;            // "nvcc 13.0.88", "g++ 12.2.0" ("" when unknown)
  std::string cutlass_version;             // "4.2.0" when CUTLASS was on the include path, else ""
};

// CompileOutput::sass_status of a compile whose SASS was left for later (sass_inline false).
inline constexpr const char* kSassLater = "later: needs cuobjdump on the object";

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

// Where the toolchain looks for its programs, in this order: the directories of `path`, then
// `cuda_home`/bin, then `dirs`, then the `nvidia/*/bin` folders of the Python venvs in `venvs`
// (PyPI's nvidia-cuda-cuobjdump puts cuobjdump in
// .venv/lib/python3.X/site-packages/nvidia/cu13/bin/). A seam so tests can hide a compiler.
struct ToolSearch {
  std::string path;                          // colon-separated, like $PATH
  std::string cuda_home;                     // like $CUDA_HOME; "" = none
  std::vector<std::filesystem::path> dirs;   // fixed fallbacks
  std::vector<std::filesystem::path> venvs;  // venv roots (the folder holding lib/)
  std::string cuobjdump_override;            // used as is for cuobjdump when set
  // Folders that may hold a CUTLASS tree (include/cute beside include/cutlass), tried before the
  // venvs' nvidia-cutlass wheel: $KPILOT_CUTLASS, then <prefix>/share/kpilot/cutlass of an
  // installed kpilot (what scripts/stage.sh carries to a GPU machine).
  std::vector<std::filesystem::path> cutlass_roots;
};
// $PATH, $CUDA_HOME, {/usr/local/cuda/bin}, the venvs {<kpilot source dir>/.venv (a build tree's
// executable only: BuildTreeSourceDir), ./.venv},
// and $KPILOT_CUOBJDUMP.
ToolSearch DefaultToolSearch();
// Absolute path of an executable `name` found per `search`; "" when absent.
std::string FindTool(const std::string& name, const ToolSearch& search);

// The real toolchain. `cache_dir` holds one folder per cache key (object, log, report).
// `include_dir` is where <kpilot/kernel.h> lives (its parent of `kpilot/`).
//
// Cache entry `<cache_dir>/<key>/`: object.so, log.txt, meta.json (ok, first error, resources,
// command, sass status) and sass.txt when SASS was extracted. An entry is built in a staging
// folder beside it and renamed into place, so a crash never leaves a half entry; concurrent
// compiles of one key are safe (the first rename wins). Failed compiles are cached (same input,
// same verdict); timed-out compiles are not (a timeout depends on the machine's load).
// A compile of a key that this toolchain is compiling already waits for that compile instead of
// running the compiler again, then reads its entry; when that compile published none (it was
// cancelled, timed out or failed without an error line), the waiter compiles it itself. A
// waiter whose own `cancel` turns true stops waiting at once; its `timeout_s` counts only its
// own compiler run.
// The key covers the source text, the argv (less the output path), the params, the compiler's
// `--version` output (and g++'s for .cu, as nvcc's host compiler) and the bytes of
// <kpilot/kernel.h>; headers the source includes from its own folder are not covered.
// The compiler runs in the source's folder with the source named by its file name, so error
// locations read "file.cu:12: ..." and the key does not depend on where the file lies.
// `command` is reported with `-o <cache_dir>/<key>/object.so`, where the object ends up.
// A cuda compile that wants SASS runs a device-only compile of the same argv (`nvcc -cubin`) and
// `cuobjdump -sass` on its cubin beside the full compile, so the SASS is ready with the object;
// when that fails or its functions are not the kernels ptxas reported, the object's own SASS is
// extracted after it (or left for later: CompileOptions::sass_inline).
// An empty CompileOptions::cuda_arch asks `nvidia-smi` for the first GPU's compute capability
// (9.0 → sm_90a, 8.0 → sm_80: the arch-specific "a" variant from 9.0 on) and uses sm_90a when
// no GPU answers.
std::unique_ptr<Toolchain> MakeSystemToolchain(std::filesystem::path cache_dir, std::filesystem::path include_dir,
                                               ProcessRunner& runner = SystemProcessRunner(),
                                               ToolSearch search = DefaultToolSearch());

// The nvcc target for an arch: "sm_90a" → "-gencode=arch=compute_90a,code=sm_90a".
// InvalidInput for anything not shaped like sm_NN[a|f].
Result<std::string> GencodeFlag(const std::string& cuda_arch);

// Pure parsers, tested on real tool output.
std::vector<KernelResources> ParsePtxasReport(const std::string& log);
std::vector<SassFunction> ParseSass(const std::string& cuobjdump_output);
// Tensor-core instructions whose operands are narrower than 32 bits, as "OPCODE in FUNCTION"
// (distinct, in order of appearance): HMMA and HGMMA on f16 (no type suffix), bf16 or fp8
// operands, and the 8-bit and smaller forms (IMMA, IGMMA, QGMMA, OMMA, BMMA). TF32 operands (an
// f32 GEMM may split them three ways and keep f32 accuracy) and DMMA are not narrow.
std::vector<std::string> NarrowTensorCoreOps(const std::vector<SassFunction>& functions);
// First error of a compiler log as "file:line: message" (nvcc and g++ formats); "" if none found.
// An nvcc error inside a template adds its context: "[in FUNCTION, instantiated from file.cu:N]".
std::string FirstCompileError(const std::string& log);
// The log from the line of its first error on, at most `max_bytes` and cut at a line end: the
// error with its own context (a CuTe log's tail is the last of a dozen template backtraces). The
// log's tail when no line is an error.
std::string CompileLogExcerpt(const std::string& log, size_t max_bytes);

// Version strings ("nvcc 13.0.88", "g++ 12.2.0"), "" when the tool is absent.
std::string NvccVersion(ProcessRunner& runner = SystemProcessRunner());
std::string GxxVersion(ProcessRunner& runner = SystemProcessRunner());
// The same from `--version` output: "release 13.0, V13.0.88" → "nvcc 13.0.88"; g++'s first line
// "g++ (Debian 12.2.0-14) 12.2.0" → "g++ 12.2.0". "" when the text does not match.
std::string ParseNvccVersion(const std::string& version_output);
std::string ParseGxxVersion(const std::string& version_output);
// Path of cuobjdump ($KPILOT_CUOBJDUMP, PATH, $CUDA_HOME/bin, /usr/local/cuda/bin, the project
// venv), "" when absent.
// The CUTLASS/CuTe trees of FindCutlass's headers: their include folder, then the examples folder
// beside it when there is one (the nvidia-cutlass wheel's cutlass_library/source/{include,examples};
// scripts/setup-venv.sh installs it): the LLM generator's default code_roots. Empty when none.
std::vector<std::string> FindCutlassTrees(const ToolSearch& search);
// The CUTLASS headers candidates compile against: `include` (cute/, cutlass/) and, when present,
// `util_include` (tools/util/include: cutlass/util/...), with the version from
// cutlass/version.h. The first of ToolSearch::cutlass_roots, then of the venvs' wheels, that
// holds include/cute; nullopt when none does.
struct CutlassHeaders {
  std::filesystem::path include;
  std::filesystem::path util_include;  // "" when the tree has no tools/util/include
  std::string version;                 // "4.2.0"
};
std::optional<CutlassHeaders> FindCutlass(const ToolSearch& search);
// "4.2.0" from cutlass/version.h's CUTLASS_MAJOR/MINOR/PATCH defines; "" when they are missing.
std::string ParseCutlassVersion(const std::string& version_h);
std::string FindCuobjdump();
std::string FindCuobjdump(const ToolSearch& search);
// The whole `--version` output (stdout + stderr) of `program`, "" when it cannot be run.
std::string ToolVersionOutput(ProcessRunner& runner, const std::string& program);

}  // namespace kpilot
