// The Task model: what a kernel must compute, on which shapes, checked how.
//
// One model serves every task source: native `task.toml` folders (loader.h), and later
// KernelBench problems and flashinfer-bench definitions — so tensors are ordered, shapes are
// symbolic over named axes bound per workload, and the reference may be a non-C++ program.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "task/dtype.h"

namespace kpilot {

enum class Backend { kHost, kCuda };
std::string_view BackendName(Backend b);  // "host" | "cuda"

// Where a task came from: a `task.toml` folder, a KernelBench problem file or a flashinfer-bench
// definition (docs/pytorch.md). The last two have a Python reference run by the torch worker.
enum class TaskFormat { kNative, kKernelBench, kFlashInfer };
std::string_view TaskFormatName(TaskFormat f);  // "native" | "kernelbench" | "flashinfer"

// How an input's elements are drawn. Parameters by kind:
//   normal:  mean (0), std (1)
//   uniform: low (0), high (1)
//   randint: low (0), high (10) — integers in [low, high)
//   range:   start (0), step (1) — element i = start + i·step (wrapping in the dtype)
//   constant: value
enum class InitKind { kNormal, kUniform, kRandint, kRange, kConstant };
std::string_view InitKindName(InitKind k);

struct InitSpec {
  InitKind kind = InitKind::kNormal;
  double a = 0;  // mean | low | start | value
  double b = 1;  // std  | high | step
};

struct Tolerance {
  double atol = 1e-5;
  double rtol = 1e-5;
  // Share of elements that must match (1.0 = all). An element matches when
  // |out − ref| ≤ atol + rtol·|ref| (NaN/Inf only where the reference has the same).
  double matched_ratio = 1.0;
};

struct TensorSpec {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<std::string> shape;      // axis names, outermost first; empty = a 0-d tensor
  InitSpec init;                       // inputs only
  std::optional<Tolerance> tolerance;  // outputs only: overrides Task::tolerance
  int line = 0;                        // where it was declared (0 when not from a file)
  // KernelBench inputs: "input" (returned by get_inputs()) or "param" (a parameter or buffer of
  // the model, in state_dict() order); "" for other tasks.
  std::string role;
};

struct ScalarSpec {
  std::string name;
  DType dtype = DType::kF32;
  double value = 0;
  int line = 0;
};

struct Workload {
  std::string name;
  std::map<std::string, int64_t> axes;          // every axis used by any tensor is bound
  std::map<std::string, double> scalar_values;  // overrides of ScalarSpec::value
  double flops = 0;                             // evaluated from Task::flops_formula (0 when none)
  double min_bytes = 0;                         // evaluated from Task::bytes_formula (0 when none)
  int line = 0;
  // flashinfer: the workload's JSONL record (uuid, axes, inputs), input paths made absolute.
  std::string record;
};

struct TunableParam {
  std::string name;                 // becomes -DNAME=VALUE
  std::vector<std::string> values;  // allowed values, in declaration order
  int line = 0;
};

enum class ReferenceKind { kNative, kPython };

struct SourceRef {
  std::string name;            // "reference", or the baseline's name
  std::filesystem::path path;  // absolute
  ReferenceKind kind = ReferenceKind::kNative;
  std::string entry;  // entry point for non-native references ("" for native)
};

struct Task {
  std::string name;
  std::string description;
  Backend backend = Backend::kHost;
  TaskFormat format = TaskFormat::kNative;
  std::filesystem::path dir;        // the task folder (absolute)
  std::vector<TensorSpec> inputs;   // in ABI order
  std::vector<TensorSpec> outputs;  // in ABI order
  std::vector<ScalarSpec> scalars;  // in ABI order
  Tolerance tolerance;
  std::vector<Workload> workloads;
  std::string flops_formula;  // muparser expression over axis names ("" = unknown)
  std::string bytes_formula;
  SourceRef reference;
  std::vector<SourceRef> baselines;
  std::vector<TunableParam> params;
  std::vector<std::string> constraints;  // muparser boolean expressions over param names
  // Whether candidates may call vendor libraries (cuBLAS, cuDNN, CUTLASS kernels). Library use is
  // always reported; with `libraries = false` it makes the verdict `incorrect`.
  bool libraries = true;
  // Whether CUDA candidates compile with the CUTLASS/CuTe headers on their include path (when
  // kpilot has them: FindCutlass). `cutlass = false` keeps a task to plain CUDA.
  bool cutlass = true;
  // [draw]: axis ranges (inclusive) from which every evaluation draws one extra workload with
  // shapes no candidate has seen, checked for correctness and not timed. Axes not drawn keep the
  // first workload's sizes. Empty: no drawn workload.
  std::map<std::string, std::pair<int64_t, int64_t>> draw_axes;
  // The precision the computation is declared to need; a candidate whose error distribution shows
  // it computed in a lower one is `incorrect`. Unset: the first output's dtype.
  std::optional<DType> compute_precision;

  const Workload* FindWorkload(const std::string& name) const;
  // The baseline speedups are measured against: the first named baseline, else the reference.
  const SourceRef& Baseline() const;
  // Concrete shape of a tensor under a workload's axis bindings.
  std::vector<int64_t> ShapeOf(const TensorSpec& t, const Workload& w) const;
  // Effective tolerance for an output.
  Tolerance ToleranceOf(const TensorSpec& output) const;
};

// The task as `task.toml` text: the file itself for a native task; for a KernelBench problem or a
// flashinfer definition, a generated description of its native candidate ABI (tensors in ABI
// order with dtypes and axis names, scalars, workloads, params), for prompts and agent workspaces.
std::string TaskTomlText(const Task& task);

// A choice of tunable parameter values, name → value.
using ParamValues = std::map<std::string, std::string>;

// "BM=64 BN=128" (names in order), or `if_empty` when there are none.
std::string ParamsText(const ParamValues& p, std::string_view if_empty = "");

}  // namespace kpilot
