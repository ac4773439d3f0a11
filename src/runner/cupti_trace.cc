#include "runner/cupti_trace.h"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "core/fs.h"

#if KPILOT_HAVE_CUPTI
#include <cupti_activity.h>
#include <cupti_result.h>
#include <cupti_version.h>
#endif

namespace kpilot {
namespace {

using nlohmann::json;

// ---- JSON ---------------------------------------------------------------------------------

// Thrown inside LaunchTraceFromJson only, caught at its top: carries the field path.
struct TraceJsonError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const json& Field(const json& obj, const char* key, const std::string& path) {
  if (!obj.is_object()) throw TraceJsonError(path + ": expected an object");
  auto it = obj.find(key);
  if (it == obj.end()) throw TraceJsonError(path + "." + key + ": missing");
  return *it;
}

template <typename T>
T Integer(const json& obj, const char* key, const std::string& path) {
  const json& v = Field(obj, key, path);
  if (!v.is_number_integer()) throw TraceJsonError(path + "." + key + ": expected an integer, got " + v.dump());
  if constexpr (std::is_unsigned_v<T>) {
    if (v.is_number_unsigned()) return static_cast<T>(v.get<uint64_t>());
    if (v.get<int64_t>() < 0)
      throw TraceJsonError(path + "." + key + ": expected a non-negative integer, got " + v.dump());
  }
  return static_cast<T>(v.get<int64_t>());
}

std::string String(const json& obj, const char* key, const std::string& path) {
  const json& v = Field(obj, key, path);
  if (!v.is_string()) throw TraceJsonError(path + "." + key + ": expected a string, got " + v.dump());
  return v.get<std::string>();
}

void Triple(const json& obj, const char* key, const std::string& path, int32_t out[3]) {
  const json& v = Field(obj, key, path);
  if (!v.is_array() || v.size() != 3 ||
      !std::all_of(v.begin(), v.end(), [](const json& e) { return e.is_number_integer(); }))
    throw TraceJsonError(path + "." + key + ": expected an array of 3 integers, got " + v.dump());
  for (int i = 0; i < 3; ++i) out[i] = v[i].get<int32_t>();
}

const json& Array(const json& obj, const char* key) {
  const json& v = Field(obj, key, "launch trace");
  if (!v.is_array()) throw TraceJsonError(std::string("launch trace.") + key + ": expected an array");
  return v;
}

template <size_t N>
void CheckKind(const std::string& kind, const char* const (&allowed)[N], const std::string& path) {
  for (const char* a : allowed)
    if (kind == a) return;
  std::string list;
  for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + a;
  throw TraceJsonError(path + ".kind: \"" + kind + "\" is not one of " + list);
}

constexpr const char* kMemopKinds[] = {"memcpy_HtoD", "memcpy_DtoH", "memcpy_DtoD", "memcpy_other", "memset"};
constexpr const char* kSyncKinds[] = {"event", "stream_wait_event", "stream", "context", "unknown"};

// ---- Summary ------------------------------------------------------------------------------

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool LooksLikeLibraryKernel(const std::string& name) {
  static const char* const kMarks[] = {"cublas", "cudnn", "cutlass", "cutensor", "nvjet", "gemv", "gemmsn"};
  std::string lower = Lower(name);
  for (const char* m : kMarks)
    if (lower.find(m) != std::string::npos) return true;
  return false;
}

void AddDistinct(std::vector<std::string>& names, const std::string& name) {
  if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
}

}  // namespace

json ToJson(const LaunchTrace& t) {
  json kernels = json::array(), memops = json::array(), syncs = json::array();
  for (const TraceKernel& k : t.kernels)
    kernels.push_back({{"name", k.name},
                       {"stream_id", k.stream_id},
                       {"correlation_id", k.correlation_id},
                       {"start_ns", k.start_ns},
                       {"end_ns", k.end_ns},
                       {"grid", {k.grid[0], k.grid[1], k.grid[2]}},
                       {"block", {k.block[0], k.block[1], k.block[2]}},
                       {"dynamic_shared_bytes", k.dynamic_shared_bytes},
                       {"static_shared_bytes", k.static_shared_bytes},
                       {"registers_per_thread", k.registers_per_thread}});
  for (const TraceMemop& m : t.memops)
    memops.push_back({{"kind", m.kind},
                      {"bytes", m.bytes},
                      {"stream_id", m.stream_id},
                      {"start_ns", m.start_ns},
                      {"end_ns", m.end_ns}});
  for (const TraceSync& s : t.syncs)
    syncs.push_back({{"kind", s.kind}, {"stream_id", s.stream_id}, {"start_ns", s.start_ns}, {"end_ns", s.end_ns}});
  return {{"version", 1},
          {"kernels", kernels},
          {"memops", memops},
          {"syncs", syncs},
          {"dropped_records", t.dropped_records}};
}

Result<LaunchTrace> LaunchTraceFromJson(const json& j) {
  try {
    if (!j.is_object()) throw TraceJsonError("launch trace: expected a JSON object");
    if (j.contains("version") && j["version"] != 1)
      throw TraceJsonError("launch trace.version: expected 1, got " + j["version"].dump());
    LaunchTrace t;
    const json& kernels = Array(j, "kernels");
    for (size_t i = 0; i < kernels.size(); ++i) {
      std::string path = "launch trace.kernels[" + std::to_string(i) + "]";
      const json& e = kernels[i];
      TraceKernel k;
      k.name = String(e, "name", path);
      k.stream_id = Integer<uint32_t>(e, "stream_id", path);
      k.correlation_id = Integer<uint32_t>(e, "correlation_id", path);
      k.start_ns = Integer<int64_t>(e, "start_ns", path);
      k.end_ns = Integer<int64_t>(e, "end_ns", path);
      Triple(e, "grid", path, k.grid);
      Triple(e, "block", path, k.block);
      k.dynamic_shared_bytes = Integer<int32_t>(e, "dynamic_shared_bytes", path);
      k.static_shared_bytes = Integer<int32_t>(e, "static_shared_bytes", path);
      k.registers_per_thread = Integer<int32_t>(e, "registers_per_thread", path);
      t.kernels.push_back(std::move(k));
    }
    const json& memops = Array(j, "memops");
    for (size_t i = 0; i < memops.size(); ++i) {
      std::string path = "launch trace.memops[" + std::to_string(i) + "]";
      TraceMemop m;
      m.kind = String(memops[i], "kind", path);
      CheckKind(m.kind, kMemopKinds, path);
      m.bytes = Integer<uint64_t>(memops[i], "bytes", path);
      m.stream_id = Integer<uint32_t>(memops[i], "stream_id", path);
      m.start_ns = Integer<int64_t>(memops[i], "start_ns", path);
      m.end_ns = Integer<int64_t>(memops[i], "end_ns", path);
      t.memops.push_back(std::move(m));
    }
    const json& syncs = Array(j, "syncs");
    for (size_t i = 0; i < syncs.size(); ++i) {
      std::string path = "launch trace.syncs[" + std::to_string(i) + "]";
      TraceSync s;
      s.kind = String(syncs[i], "kind", path);
      CheckKind(s.kind, kSyncKinds, path);
      s.stream_id = Integer<uint32_t>(syncs[i], "stream_id", path);
      s.start_ns = Integer<int64_t>(syncs[i], "start_ns", path);
      s.end_ns = Integer<int64_t>(syncs[i], "end_ns", path);
      t.syncs.push_back(std::move(s));
    }
    t.dropped_records = j.contains("dropped_records") ? Integer<uint64_t>(j, "dropped_records", "launch trace") : 0;
    return t;
  } catch (const TraceJsonError& e) {
    return Status::InvalidInput(e.what());
  } catch (const json::exception& e) {
    return Status::InvalidInput(std::string("launch trace: ") + e.what());
  }
}

TraceSummary SummarizeTrace(const LaunchTrace& t, uint32_t given_stream_id) {
  TraceSummary s;
  s.kernels = static_cast<int>(t.kernels.size());
  std::vector<std::pair<int64_t, int64_t>> intervals;
  int64_t first = 0, last = 0;
  bool any = false;
  auto extend = [&](int64_t start, int64_t end) {
    end = std::max(start, end);
    first = any ? std::min(first, start) : start;
    last = any ? std::max(last, end) : end;
    any = true;
  };
  for (const TraceKernel& k : t.kernels) {
    if (k.stream_id != given_stream_id) {
      ++s.kernels_off_stream;
      AddDistinct(s.off_stream_kernel_names, k.name);
    }
    if (LooksLikeLibraryKernel(k.name)) AddDistinct(s.library_kernels, k.name);
    intervals.emplace_back(k.start_ns, std::max(k.start_ns, k.end_ns));
    extend(k.start_ns, k.end_ns);
  }
  for (const TraceMemop& m : t.memops) {
    if (m.kind == "memset")
      ++s.memsets;
    else
      ++s.memcpys;
    extend(m.start_ns, m.end_ns);
  }
  s.syncs = static_cast<int>(t.syncs.size());
  s.span_ns = any ? static_cast<double>(last - first) : 0.0;

  // Union of kernel intervals: sort by start, merge overlaps.
  std::sort(intervals.begin(), intervals.end());
  int64_t open_start = 0, open_end = 0;
  bool open = false;
  for (const auto& [start, end] : intervals) {
    if (open && start <= open_end) {
      open_end = std::max(open_end, end);
      continue;
    }
    if (open) s.kernel_busy_ns += static_cast<double>(open_end - open_start);
    open_start = start;
    open_end = end;
    open = true;
  }
  if (open) s.kernel_busy_ns += static_cast<double>(open_end - open_start);
  return s;
}

// ---- CUPTI --------------------------------------------------------------------------------

#if KPILOT_HAVE_CUPTI
namespace {

// The CUPTI entry points kpilot calls, resolved from the loaded library.
struct CuptiApi {
  std::string path;
  uint32_t version = 0;
  CUptiResult (*ActivityEnable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*ActivityDisable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*ActivityRegisterCallbacks)(CUpti_BuffersCallbackRequestFunc,
                                           CUpti_BuffersCallbackCompleteFunc) = nullptr;
  CUptiResult (*ActivityFlushAll)(uint32_t) = nullptr;
  CUptiResult (*ActivityGetNextRecord)(uint8_t*, size_t, CUpti_Activity**) = nullptr;
  CUptiResult (*ActivityGetNumDroppedRecords)(CUcontext, uint32_t, size_t*) = nullptr;
  CUptiResult (*GetResultString)(CUptiResult, const char**) = nullptr;
  CUptiResult (*GetVersion)(uint32_t*) = nullptr;
  CUptiResult (*GetStreamIdEx)(CUcontext, CUstream, uint8_t, uint32_t*) = nullptr;  // may be missing
  CUptiResult (*GetStreamId)(CUcontext, CUstream, uint32_t*) = nullptr;
  bool callbacks_registered = false;

  std::string Error(CUptiResult r) const {
    const char* s = nullptr;
    if (GetResultString && GetResultString(r, &s) == CUPTI_SUCCESS && s) return s;
    return "CUPTI error " + std::to_string(static_cast<int>(r));
  }
};

struct DlCloser {
  void operator()(void* h) const {
    if (h) dlclose(h);
  }
};
using DlHandle = std::unique_ptr<void, DlCloser>;

constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                         CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION};
constexpr size_t kBufferBytes = 8u << 20;

// Process-wide state: CUPTI's activity API is global, so is this. `api` is loaded once and
// never unloaded (see the header); `pending` collects records from the buffer callback.
struct TracerState {
  std::mutex mu;  // guards pending and active
  LaunchTrace pending;
  bool active = false;      // a CuptiTracer lives
  CuptiApi* api = nullptr;  // set once under load_mu, then read-only
  std::mutex load_mu;
};

TracerState& State() {
  static TracerState* state = new TracerState;  // leaked: CUPTI's thread may call in at exit
  return *state;
}

}  // namespace

std::vector<std::string> CuptiLibraryPaths() {
  std::vector<std::string> paths;
  if (const char* env = std::getenv("KPILOT_CUPTI"); env && *env) paths.emplace_back(env);
  paths.emplace_back("libcupti.so.13");
  paths.emplace_back("libcupti.so");
  paths.emplace_back("/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13");
  // The project venv's CUPTI wheel, for an executable of a build tree only.
  auto source = BuildTreeSourceDir();
  if (!source) return paths;
  std::error_code ec;
  std::vector<std::string> venv;
  for (const auto& e : std::filesystem::directory_iterator(*source / ".venv" / "lib", ec)) {
    if (e.path().filename().string().rfind("python3", 0) != 0) continue;
    auto lib = e.path() / "site-packages/nvidia/cu13/lib/libcupti.so.13";
    if (std::filesystem::exists(lib, ec)) venv.push_back(lib.string());
  }
  std::sort(venv.begin(), venv.end());
  paths.insert(paths.end(), venv.begin(), venv.end());
  return paths;
}

namespace {

template <typename F>
bool Resolve(void* h, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(h, name));
  return fn != nullptr;
}

// Loads one candidate library; on failure returns why, and the handle is closed.
Result<CuptiApi*> LoadFrom(const std::string& path) {
  DlHandle h(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL));
  if (!h) {
    const char* err = dlerror();
    return Status::Unavailable(err ? err : "dlopen failed");
  }
  auto api = std::make_unique<CuptiApi>();
  api->path = path;
  bool ok = Resolve(h.get(), "cuptiActivityEnable", api->ActivityEnable) &&
            Resolve(h.get(), "cuptiActivityDisable", api->ActivityDisable) &&
            Resolve(h.get(), "cuptiActivityRegisterCallbacks", api->ActivityRegisterCallbacks) &&
            Resolve(h.get(), "cuptiActivityFlushAll", api->ActivityFlushAll) &&
            Resolve(h.get(), "cuptiActivityGetNextRecord", api->ActivityGetNextRecord) &&
            Resolve(h.get(), "cuptiActivityGetNumDroppedRecords", api->ActivityGetNumDroppedRecords) &&
            Resolve(h.get(), "cuptiGetResultString", api->GetResultString) &&
            Resolve(h.get(), "cuptiGetVersion", api->GetVersion) &&
            Resolve(h.get(), "cuptiGetStreamId", api->GetStreamId);
  if (!ok) {
    const char* err = dlerror();
    return Status::Unavailable("lacks a CUPTI activity entry point (" + std::string(err ? err : "dlsym failed") + ")");
  }
  Resolve(h.get(), "cuptiGetStreamIdEx", api->GetStreamIdEx);
  if (CUptiResult r = api->GetVersion(&api->version); r != CUPTI_SUCCESS)
    return Status::Unavailable("cuptiGetVersion failed: " + api->Error(r));
  // Record layouts are versioned per API major release (13.x: CUpti_ActivityKernel10 etc.).
  if (api->version / 10000 != CUPTI_API_VERSION / 10000)
    return Status::Unavailable("CUPTI API version " + std::to_string(api->version) + ", kpilot was built with " +
                               std::to_string(CUPTI_API_VERSION) + " (another major version: record layouts differ)");
  (void)h.release();  // stays loaded for the life of the process
  return api.release();
}

Result<CuptiApi*> LoadCupti() {
  TracerState& st = State();
  std::lock_guard<std::mutex> lock(st.load_mu);
  if (st.api) return st.api;
  std::string reasons;
  for (const std::string& path : CuptiLibraryPaths()) {
    Result<CuptiApi*> api = LoadFrom(path);
    if (api.ok()) return st.api = *api;
    reasons += "\n  " + path + ": " + api.status().message();
  }
  return Status::Unavailable(
      "libcupti could not be loaded (set KPILOT_CUPTI to its path, or run "
      "scripts/setup-venv.sh); tried:" +
      reasons);
}

const char* MemcpyKindName(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return "memcpy_HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return "memcpy_DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return "memcpy_DtoD";
    default:
      return "memcpy_other";
  }
}

const char* SyncKindName(CUpti_ActivitySynchronizationType type) {
  switch (type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE:
      return "event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT:
      return "stream_wait_event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE:
      return "stream";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE:
      return "context";
    default:
      return "unknown";
  }
}

// Appends one record to `out`; records without timestamps (0, 0: not collected) count as dropped.
void AppendRecord(const CUpti_Activity* rec, LaunchTrace& out) {
  switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
      if (k->start == 0 && k->end == 0) {
        ++out.dropped_records;
        return;
      }
      TraceKernel t;
      t.name = k->name ? k->name : "";  // CUPTI owns the string: copy it now
      t.stream_id = k->streamId;
      t.correlation_id = k->correlationId;
      t.start_ns = static_cast<int64_t>(k->start);
      t.end_ns = static_cast<int64_t>(k->end);
      t.grid[0] = k->gridX;
      t.grid[1] = k->gridY;
      t.grid[2] = k->gridZ;
      t.block[0] = k->blockX;
      t.block[1] = k->blockY;
      t.block[2] = k->blockZ;
      t.dynamic_shared_bytes = k->dynamicSharedMemory;
      t.static_shared_bytes = k->staticSharedMemory;
      t.registers_per_thread = k->registersPerThread;
      out.kernels.push_back(std::move(t));
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
      if (m->start == 0 && m->end == 0) {
        ++out.dropped_records;
        return;
      }
      out.memops.push_back({MemcpyKindName(m->copyKind), m->bytes, m->streamId, static_cast<int64_t>(m->start),
                            static_cast<int64_t>(m->end)});
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(rec);
      if (m->start == 0 && m->end == 0) {
        ++out.dropped_records;
        return;
      }
      out.memops.push_back(
          {"memset", m->bytes, m->streamId, static_cast<int64_t>(m->start), static_cast<int64_t>(m->end)});
      return;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto* s = reinterpret_cast<const CUpti_ActivitySynchronization2*>(rec);
      out.syncs.push_back(
          {SyncKindName(s->type), s->streamId, static_cast<int64_t>(s->start), static_cast<int64_t>(s->end)});
      return;
    }
    default:
      return;  // a kind kpilot did not enable
  }
}

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  // CUPTI requires ACTIVITY_RECORD_ALIGNMENT (8); kBufferBytes is a multiple of it.
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

// Runs on a CUPTI thread, or inside cuptiActivityFlushAll on the caller's.
void CUPTIAPI BufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid_size) {
  TracerState& st = State();
  LaunchTrace parsed;
  if (st.api && valid_size > 0) {
    CUpti_Activity* rec = nullptr;
    while (st.api->ActivityGetNextRecord(buffer, valid_size, &rec) == CUPTI_SUCCESS) AppendRecord(rec, parsed);
    size_t dropped = 0;
    if (st.api->ActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS) parsed.dropped_records += dropped;
  }
  std::free(buffer);
  std::lock_guard<std::mutex> lock(st.mu);
  if (!st.active) return;  // no tracer to hand them to
  auto move_into = [](auto& from, auto& to) {
    to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
  };
  move_into(parsed.kernels, st.pending.kernels);
  move_into(parsed.memops, st.pending.memops);
  move_into(parsed.syncs, st.pending.syncs);
  st.pending.dropped_records += parsed.dropped_records;
}

void DisableKinds(CuptiApi& api, size_t count) {
  for (size_t i = 0; i < count; ++i) api.ActivityDisable(kKinds[i]);
}

}  // namespace

Result<std::unique_ptr<CuptiTracer>> CuptiTracer::Start() {
  Result<CuptiApi*> loaded = LoadCupti();
  if (!loaded.ok()) return loaded.status();
  CuptiApi& api = **loaded;
  TracerState& st = State();
  {
    std::lock_guard<std::mutex> lock(st.mu);
    if (st.active) return Status::Unavailable("CUPTI tracing: another CuptiTracer is active in this process");
    st.active = true;
    st.pending = LaunchTrace();
  }
  auto fail = [&](Status s) {
    std::lock_guard<std::mutex> lock(st.mu);
    st.active = false;
    return s;
  };
  if (!api.callbacks_registered) {
    if (CUptiResult r = api.ActivityRegisterCallbacks(BufferRequested, BufferCompleted); r != CUPTI_SUCCESS)
      return fail(
          Status::Unavailable("CUPTI tracing (" + api.path + "): cuptiActivityRegisterCallbacks: " + api.Error(r)));
    api.callbacks_registered = true;
  }
  static const char* const kKindNames[] = {"CONCURRENT_KERNEL", "MEMCPY", "MEMSET", "SYNCHRONIZATION"};
  for (size_t i = 0; i < std::size(kKinds); ++i) {
    if (CUptiResult r = api.ActivityEnable(kKinds[i]); r != CUPTI_SUCCESS) {
      DisableKinds(api, i);
      return fail(Status::Unavailable("CUPTI tracing (" + api.path + "): cuptiActivityEnable(" + kKindNames[i] +
                                      "): " + api.Error(r) + " (no GPU or driver, or another profiler holds CUPTI?)"));
    }
  }
  std::unique_ptr<CuptiTracer> tracer(new CuptiTracer);
  tracer->version_ = "CUPTI API " + std::to_string(api.version) + " (headers " + std::to_string(CUPTI_API_VERSION) +
                     ") from " + api.path;
  return tracer;
}

Result<LaunchTrace> CuptiTracer::Collect() {
  TracerState& st = State();
  // Not under st.mu: the flush calls BufferCompleted on this thread, which takes it.
  if (CUptiResult r = st.api->ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); r != CUPTI_SUCCESS)
    return Status::Internal("CUPTI tracing: cuptiActivityFlushAll: " + st.api->Error(r));
  std::lock_guard<std::mutex> lock(st.mu);
  return std::exchange(st.pending, LaunchTrace());
}

Result<uint32_t> CuptiTracer::StreamId(void* cuda_stream) {
  CuptiApi& api = *State().api;
  CUcontext ctx = nullptr;
  // Only a libcuda the process already loaded: without one there is no context to ask about.
  if (DlHandle cuda(dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD)); cuda) {
    using CtxGetCurrent = CUresult (*)(CUcontext*);
    if (auto get = reinterpret_cast<CtxGetCurrent>(dlsym(cuda.get(), "cuCtxGetCurrent"));
        get && get(&ctx) != CUDA_SUCCESS)
      ctx = nullptr;
  }
  auto stream = static_cast<CUstream>(cuda_stream);
  uint32_t id = 0;
  CUptiResult r = api.GetStreamIdEx ? api.GetStreamIdEx(ctx, stream, 0, &id) : api.GetStreamId(ctx, stream, &id);
  if (r == CUPTI_SUCCESS) return id;
  std::string msg =
      "CUPTI tracing: cuptiGetStreamId" + std::string(api.GetStreamIdEx ? "Ex" : "") + ": " + api.Error(r);
  if (r == CUPTI_ERROR_INVALID_STREAM || r == CUPTI_ERROR_INVALID_CONTEXT)
    return Status::InvalidInput(msg + " (the stream does not belong to this thread's current CUDA context)");
  return Status::Unavailable(msg);
}

CuptiTracer::~CuptiTracer() {
  TracerState& st = State();
  DisableKinds(*st.api, std::size(kKinds));
  st.api->ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> lock(st.mu);
  st.active = false;
  st.pending = LaunchTrace();
}

#else  // !KPILOT_HAVE_CUPTI

Result<std::unique_ptr<CuptiTracer>> CuptiTracer::Start() {
  return Status::Unavailable(
      "CUPTI tracing: kpilot was built without the CUPTI headers (cupti_activity.h); run "
      "scripts/setup-venv.sh and configure again");
}
Result<LaunchTrace> CuptiTracer::Collect() { return Status::Unavailable("CUPTI tracing: not built in"); }
Result<uint32_t> CuptiTracer::StreamId(void*) { return Status::Unavailable("CUPTI tracing: not built in"); }
CuptiTracer::~CuptiTracer() = default;

#endif  // KPILOT_HAVE_CUPTI

std::string CuptiTracer::version() const { return version_; }

}  // namespace kpilot
