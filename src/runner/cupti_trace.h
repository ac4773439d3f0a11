// Launch tracing: what the GPU actually ran while a candidate was called, taken from the CUPTI
// Activity API. Unlike events recorded on the runner's stream, the activity records list every
// kernel, copy and memset on every stream of the process (H200-NOTES: a kernel a candidate
// launches on a stream of its own shows up here and nowhere else), so the harness can tell a
// candidate that did its work off the timed stream, or that called into cuBLAS.
//
// libcupti is loaded with dlopen at run time: a runner without CUPTI (or built without its
// headers) still works, and CuptiTracer::Start() says why tracing is unavailable.
//
// The LaunchTrace structs, their JSON form and SummarizeTrace are pure data and logic; they need
// neither CUPTI nor a GPU and are tested on saved traces (tests/fixtures/traces/).
//
// Units: every *_ns is nanoseconds on CUPTI's timestamp clock (a process-wide monotonic clock
// whose origin is unspecified: compare timestamps only with each other). Byte counts in bytes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace kpilot {

// One kernel execution (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL).
struct TraceKernel {
  std::string name;             // as CUPTI reports it: mangled for C++ kernels
  uint32_t stream_id = 0;       // CUPTI's context-unique stream id (see CuptiTracer::StreamId)
  uint32_t correlation_id = 0;  // ties the kernel to the API call that launched it
  int64_t start_ns = 0, end_ns = 0;
  int32_t grid[3] = {0, 0, 0};
  int32_t block[3] = {0, 0, 0};
  int32_t dynamic_shared_bytes = 0;  // per block
  int32_t static_shared_bytes = 0;   // per block
  int32_t registers_per_thread = 0;
};

// One memory copy or memset executed by the device.
struct TraceMemop {
  // "memcpy_HtoD", "memcpy_DtoH", "memcpy_DtoD", "memcpy_other" (host-to-host, arrays, peer),
  // or "memset".
  std::string kind;
  uint64_t bytes = 0;
  uint32_t stream_id = 0;
  int64_t start_ns = 0, end_ns = 0;
};

// One host-side synchronization call (CUPTI_ACTIVITY_KIND_SYNCHRONIZATION): the interval is the
// time the host thread spent in the API call, not device time.
struct TraceSync {
  // "event" (cudaEventSynchronize), "stream_wait_event" (cudaStreamWaitEvent), "stream"
  // (cudaStreamSynchronize), "context" (cudaDeviceSynchronize / cuCtxSynchronize), or "unknown".
  std::string kind;
  uint32_t stream_id = 0;  // 0xFFFFFFFF where the call names no stream ("event", "context")
  int64_t start_ns = 0, end_ns = 0;
};

struct LaunchTrace {
  std::vector<TraceKernel> kernels;  // in the order CUPTI delivered them (not sorted by time)
  std::vector<TraceMemop> memops;
  std::vector<TraceSync> syncs;
  // Records CUPTI reported as dropped (buffers full) plus records delivered without timestamps
  // (still running when collected): anything > 0 means the lists above are incomplete.
  uint64_t dropped_records = 0;
};

// JSON form of a trace: {"version": 1, "kernels": [...], "memops": [...], "syncs": [...],
// "dropped_records": N}, each element an object with the struct's field names
// (grid and block as arrays of 3 integers). LaunchTraceFromJson accepts exactly what ToJson
// writes; "version" may be missing (taken as 1). Errors are InvalidInput naming the field, e.g.
// "launch trace: kernels[2].grid: expected an array of 3 integers".
nlohmann::json ToJson(const LaunchTrace& t);
Result<LaunchTrace> LaunchTraceFromJson(const nlohmann::json& j);

// What a trace says about one candidate call, computed without CUPTI (tests run it on saved
// traces).
struct TraceSummary {
  int kernels = 0;
  int kernels_off_stream = 0;                        // kernels whose stream_id != given_stream_id
  std::vector<std::string> off_stream_kernel_names;  // distinct, in order of first appearance
  double kernel_busy_ns = 0;                         // length of the union of kernel intervals: overlap counts once
  double span_ns = 0;                                // first start to last end over kernels and memops; 0 if none
  int memcpys = 0;
  int memsets = 0;
  int syncs = 0;
  // Distinct kernel names that look like vendor-library kernels: they contain, ignoring case,
  // cublas, cudnn, cutlass, cutensor, nvjet, gemv or gemmSN. In order of first appearance.
  std::vector<std::string> library_kernels;
};

// given_stream_id: the CUPTI id of the stream the runner handed the candidate
// (CuptiTracer::StreamId). Records with inverted intervals (end < start) count as empty.
TraceSummary SummarizeTrace(const LaunchTrace& t, uint32_t given_stream_id);

// Records kernels, memcpys, memsets and synchronizations of the whole process while it lives.
//
// CUPTI's activity state is process-wide: at most one CuptiTracer exists at a time (a second
// Start() fails with Unavailable while the first lives). Start it before the work to be traced;
// launches before Start() are not recorded. Records come back only for work that has finished:
// synchronize the device (or the streams involved) before Collect().
//
// Once loaded, libcupti stays loaded for the rest of the process: CUPTI attaches itself to the
// CUDA driver, and unloading it while the driver holds its callbacks is not safe.
//
// Thread safety: CUPTI hands completed buffers over on a thread of its own; the records are
// parsed there under a mutex. Call the methods of one tracer from one thread.
// Where libcupti is looked for, in order: $KPILOT_CUPTI (a path), "libcupti.so.13",
// "libcupti.so", /usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13, and, for an executable of a
// build tree (BuildTreeSourceDir), the project venv's nvidia-cuda-cupti wheel
// (<source>/.venv/lib/python3*/site-packages/nvidia/cu13/lib).
std::vector<std::string> CuptiLibraryPaths();

class CuptiTracer {
 public:
  // Loads libcupti and enables CONCURRENT_KERNEL, MEMCPY, MEMSET and SYNCHRONIZATION.
  // libcupti is looked for, in order, at: $KPILOT_CUPTI (a path), "libcupti.so.13",
  // "libcupti.so", /usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13, and (a build tree's
  // executable only) <source>/.venv/lib/python3*/site-packages/nvidia/cu13/lib/libcupti.so.13
  // (installed by scripts/setup-venv.sh). A library whose API major version differs from the headers kpilot was
  // built with is skipped (its records have another layout).
  // Unavailable, with every reason, when no candidate loads, when kpilot was built without the
  // CUPTI headers, when CUPTI refuses to enable a kind (no driver, no GPU, another profiler such
  // as ncu holding it), or while another CuptiTracer lives.
  static Result<std::unique_ptr<CuptiTracer>> Start();

  // Flushes CUPTI's buffers (a forced flush) and returns every record delivered since Start() or
  // the previous Collect(); the tracer keeps recording. Internal if CUPTI's flush fails.
  Result<LaunchTrace> Collect();

  // The CUPTI stream id of a CUDA stream (a cudaStream_t / CUstream, borrowed), the id that
  // TraceKernel::stream_id etc. carry. Uses cuptiGetStreamIdEx(context, stream,
  // perThreadStream = 0) (cuptiGetStreamId when the library lacks it), where context is the
  // calling thread's current context from cuCtxGetCurrent in libcuda.so.1 — looked up only if
  // the process has already loaded libcuda (dlopen with RTLD_NOLOAD), else NULL, which CUPTI
  // accepts for non-default streams. Call it from the thread that owns the stream's context;
  // pass nullptr for the legacy default stream. Unavailable/InvalidInput with CUPTI's reason.
  Result<uint32_t> StreamId(void* cuda_stream);

  // "CUPTI API <runtime version> (headers <compile-time version>) from <library path>".
  std::string version() const;

  // Disables the four kinds and flushes; records not yet collected are discarded.
  ~CuptiTracer();

  CuptiTracer(const CuptiTracer&) = delete;
  CuptiTracer& operator=(const CuptiTracer&) = delete;

 private:
  CuptiTracer() = default;
  std::string version_;
};

}  // namespace kpilot
