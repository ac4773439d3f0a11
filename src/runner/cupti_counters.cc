#include "runner/cupti_counters.h"

#include <dlfcn.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>

#include "runner/cupti_trace.h"

#ifdef KPILOT_HAVE_CUPTI
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_result.h>
#include <cupti_target.h>
#endif

namespace kpilot {

#ifndef KPILOT_HAVE_CUPTI

struct CuptiCounterSession::Impl {};
Result<std::unique_ptr<CuptiCounterSession>> CuptiCounterSession::Create(int, const std::vector<std::string>&, size_t,
                                                                         CounterReplay) {
  return Status::Unavailable("kpilot was built without the CUPTI headers (run scripts/setup-venv.sh and rebuild)");
}
Status CuptiCounterSession::Start() { return Status::Unavailable("no CUPTI"); }
Result<bool> CuptiCounterSession::EndPass() { return Status::Unavailable("no CUPTI"); }
Result<std::vector<RangeCounters>> CuptiCounterSession::Results() { return Status::Unavailable("no CUPTI"); }
CuptiCounterSession::~CuptiCounterSession() = default;

#else

namespace {

// The profiler entry points, resolved from libcupti once.
struct ProfilerApi {
  CUptiResult (*GetResultString)(CUptiResult, const char**) = nullptr;
  CUptiResult (*Initialize)(CUpti_Profiler_Initialize_Params*) = nullptr;
  CUptiResult (*GetChipName)(CUpti_Device_GetChipName_Params*) = nullptr;
  CUptiResult (*GetCounterAvailability)(CUpti_Profiler_GetCounterAvailability_Params*) = nullptr;
  CUptiResult (*HostInitialize)(CUpti_Profiler_Host_Initialize_Params*) = nullptr;
  CUptiResult (*HostDeinitialize)(CUpti_Profiler_Host_Deinitialize_Params*) = nullptr;
  CUptiResult (*HostConfigAddMetrics)(CUpti_Profiler_Host_ConfigAddMetrics_Params*) = nullptr;
  CUptiResult (*HostGetConfigImageSize)(CUpti_Profiler_Host_GetConfigImageSize_Params*) = nullptr;
  CUptiResult (*HostGetConfigImage)(CUpti_Profiler_Host_GetConfigImage_Params*) = nullptr;
  CUptiResult (*HostGetNumOfPasses)(CUpti_Profiler_Host_GetNumOfPasses_Params*) = nullptr;
  CUptiResult (*HostEvaluateToGpuValues)(CUpti_Profiler_Host_EvaluateToGpuValues_Params*) = nullptr;
  CUptiResult (*Enable)(CUpti_RangeProfiler_Enable_Params*) = nullptr;
  CUptiResult (*Disable)(CUpti_RangeProfiler_Disable_Params*) = nullptr;
  CUptiResult (*GetCounterDataSize)(CUpti_RangeProfiler_GetCounterDataSize_Params*) = nullptr;
  CUptiResult (*CounterDataImageInitialize)(CUpti_RangeProfiler_CounterDataImage_Initialize_Params*) = nullptr;
  CUptiResult (*SetConfig)(CUpti_RangeProfiler_SetConfig_Params*) = nullptr;
  CUptiResult (*Start)(CUpti_RangeProfiler_Start_Params*) = nullptr;
  CUptiResult (*Stop)(CUpti_RangeProfiler_Stop_Params*) = nullptr;
  CUptiResult (*DecodeData)(CUpti_RangeProfiler_DecodeData_Params*) = nullptr;
  CUptiResult (*GetCounterDataInfo)(CUpti_RangeProfiler_GetCounterDataInfo_Params*) = nullptr;
  CUptiResult (*GetRangeInfo)(CUpti_RangeProfiler_CounterData_GetRangeInfo_Params*) = nullptr;
  std::string path;

  std::string Error(const char* what, CUptiResult r) const {
    const char* s = nullptr;
    std::string text =
        GetResultString && GetResultString(r, &s) == CUPTI_SUCCESS && s ? s : "error " + std::to_string(r);
    return std::string(what) + ": " + text;
  }
};

template <typename F>
bool Resolve(void* h, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(h, name));
  return fn != nullptr;
}

Result<const ProfilerApi*> LoadProfilerApi() {
  static std::mutex mu;
  static const ProfilerApi* loaded = nullptr;
  std::lock_guard<std::mutex> lock(mu);
  if (loaded) return loaded;
  std::string reasons;
  for (const std::string& path : CuptiLibraryPaths()) {
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* err = dlerror();
      reasons += "\n  " + path + ": " + (err ? err : "dlopen failed");
      continue;
    }
    auto api = std::make_unique<ProfilerApi>();
    api->path = path;
    bool ok = Resolve(h, "cuptiGetResultString", api->GetResultString) &&
              Resolve(h, "cuptiProfilerInitialize", api->Initialize) &&
              Resolve(h, "cuptiDeviceGetChipName", api->GetChipName) &&
              Resolve(h, "cuptiProfilerGetCounterAvailability", api->GetCounterAvailability) &&
              Resolve(h, "cuptiProfilerHostInitialize", api->HostInitialize) &&
              Resolve(h, "cuptiProfilerHostDeinitialize", api->HostDeinitialize) &&
              Resolve(h, "cuptiProfilerHostConfigAddMetrics", api->HostConfigAddMetrics) &&
              Resolve(h, "cuptiProfilerHostGetConfigImageSize", api->HostGetConfigImageSize) &&
              Resolve(h, "cuptiProfilerHostGetConfigImage", api->HostGetConfigImage) &&
              Resolve(h, "cuptiProfilerHostGetNumOfPasses", api->HostGetNumOfPasses) &&
              Resolve(h, "cuptiProfilerHostEvaluateToGpuValues", api->HostEvaluateToGpuValues) &&
              Resolve(h, "cuptiRangeProfilerEnable", api->Enable) &&
              Resolve(h, "cuptiRangeProfilerDisable", api->Disable) &&
              Resolve(h, "cuptiRangeProfilerGetCounterDataSize", api->GetCounterDataSize) &&
              Resolve(h, "cuptiRangeProfilerCounterDataImageInitialize", api->CounterDataImageInitialize) &&
              Resolve(h, "cuptiRangeProfilerSetConfig", api->SetConfig) &&
              Resolve(h, "cuptiRangeProfilerStart", api->Start) && Resolve(h, "cuptiRangeProfilerStop", api->Stop) &&
              Resolve(h, "cuptiRangeProfilerDecodeData", api->DecodeData) &&
              Resolve(h, "cuptiRangeProfilerGetCounterDataInfo", api->GetCounterDataInfo) &&
              Resolve(h, "cuptiRangeProfilerCounterDataGetRangeInfo", api->GetRangeInfo);
    if (!ok) {
      reasons += "\n  " + path + ": no range-profiler entry points (CUPTI older than 12.6?)";
      dlclose(h);
      continue;
    }
    loaded = api.release();  // libcupti stays loaded: the driver keeps CUPTI's callbacks
    return loaded;
  }
  return Status::Unavailable("no usable libcupti for counters:" + reasons);
}

// A host object (metric configuration) for one chip; deinitialized on destruction.
class HostObject {
 public:
  static Result<HostObject> Create(const ProfilerApi* api, const std::string& chip, const std::vector<uint8_t>& avail) {
    CUpti_Profiler_Host_Initialize_Params p{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
    p.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    p.pChipName = chip.c_str();
    p.pCounterAvailabilityImage = avail.empty() ? nullptr : avail.data();
    if (CUptiResult r = api->HostInitialize(&p); r != CUPTI_SUCCESS)
      return Status::Unavailable(api->Error("cuptiProfilerHostInitialize", r));
    return HostObject(api, p.pHostObject);
  }
  HostObject(HostObject&& o) noexcept : api_(o.api_), obj_(o.obj_) { o.obj_ = nullptr; }
  HostObject& operator=(HostObject&& o) noexcept {
    std::swap(api_, o.api_);
    std::swap(obj_, o.obj_);
    return *this;
  }
  ~HostObject() {
    if (!obj_) return;
    CUpti_Profiler_Host_Deinitialize_Params p{CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
    p.pHostObject = obj_;
    api_->HostDeinitialize(&p);
  }
  CUptiResult AddMetrics(std::vector<const char*> names) {
    CUpti_Profiler_Host_ConfigAddMetrics_Params p{CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
    p.pHostObject = obj_;
    p.ppMetricNames = names.data();
    p.numMetrics = names.size();
    return api_->HostConfigAddMetrics(&p);
  }
  CUpti_Profiler_Host_Object* get() const { return obj_; }

 private:
  HostObject(const ProfilerApi* api, CUpti_Profiler_Host_Object* obj) : api_(api), obj_(obj) {}
  const ProfilerApi* api_;
  CUpti_Profiler_Host_Object* obj_;
};

std::vector<const char*> CStrings(const std::vector<std::string>& v) {
  std::vector<const char*> out;
  for (const auto& s : v) out.push_back(s.c_str());
  return out;
}

}  // namespace

struct CuptiCounterSession::Impl {
  const ProfilerApi* api = nullptr;
  std::optional<HostObject> host;
  CUpti_RangeProfiler_Object* profiler = nullptr;
  std::vector<std::string> metrics;  // the supported ones, in request order
  std::vector<uint8_t> config;
  std::vector<uint8_t> counter_data;
  bool started = false;
};

Result<std::unique_ptr<CuptiCounterSession>> CuptiCounterSession::Create(int device,
                                                                         const std::vector<std::string>& metrics,
                                                                         size_t max_ranges, CounterReplay replay) {
  using Clock = std::chrono::steady_clock;
  auto mark = Clock::now();
  std::vector<std::pair<std::string, double>> steps;
  auto step = [&](const std::string& name) {
    auto now = Clock::now();
    steps.emplace_back(name, std::chrono::duration<double>(now - mark).count());
    mark = now;
  };
  auto api = LoadProfilerApi();
  if (!api.ok()) return api.status();
  step("load_libcupti");
  const ProfilerApi* a = *api;
  std::unique_ptr<CuptiCounterSession> s(new CuptiCounterSession);
  s->impl_ = std::make_unique<Impl>();
  s->impl_->api = a;
  s->replay_ = replay;

  CUpti_Profiler_Initialize_Params init{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
  if (CUptiResult r = a->Initialize(&init); r != CUPTI_SUCCESS)
    return Status::Unavailable(a->Error("cuptiProfilerInitialize", r));
  CUpti_Device_GetChipName_Params chip{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
  chip.deviceIndex = static_cast<size_t>(device);
  if (CUptiResult r = a->GetChipName(&chip); r != CUPTI_SUCCESS)
    return Status::Unavailable(a->Error("cuptiDeviceGetChipName", r));
  s->chip_ = chip.pChipName ? chip.pChipName : "";
  step("initialize");

  // The counters this context can read now (another profiler may hold some).
  std::vector<uint8_t> avail;
  CUpti_Profiler_GetCounterAvailability_Params ca{CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
  ca.ctx = nullptr;  // the current context
  if (CUptiResult r = a->GetCounterAvailability(&ca); r != CUPTI_SUCCESS)
    return Status::Unavailable(a->Error("cuptiProfilerGetCounterAvailability", r));
  avail.resize(ca.counterAvailabilityImageSize);
  ca.pCounterAvailabilityImage = avail.data();
  if (CUptiResult r = a->GetCounterAvailability(&ca); r != CUPTI_SUCCESS)
    return Status::Unavailable(a->Error("cuptiProfilerGetCounterAvailability", r));
  step("counter_availability");

  // Metrics the chip does not know make the whole configuration fail: find them by bisection
  // (each probe is a host object of its own, tens of milliseconds).
  std::vector<std::string> good;
  std::optional<HostObject> whole;  // the host object that took every metric at once, kept
  int probes = 0;
  std::function<Status(const std::vector<std::string>&)> probe = [&](const std::vector<std::string>& some) -> Status {
    if (some.empty()) return Status::Ok();
    ++probes;
    auto host = HostObject::Create(a, s->chip_, avail);
    if (!host.ok()) return host.status();
    if (host->AddMetrics(CStrings(some)) == CUPTI_SUCCESS) {
      good.insert(good.end(), some.begin(), some.end());
      if (some.size() == metrics.size()) whole.emplace(std::move(host).value());
      return Status::Ok();
    }
    if (some.size() == 1) {
      s->unsupported_.push_back(some.front());
      return Status::Ok();
    }
    size_t half = some.size() / 2;
    KPILOT_RETURN_IF_ERROR(probe({some.begin(), some.begin() + half}));
    return probe({some.begin() + half, some.end()});
  };
  KPILOT_RETURN_IF_ERROR(probe(metrics));
  if (good.empty())
    return Status::Unavailable("CUPTI knows none of the " + std::to_string(metrics.size()) + " metrics");
  s->impl_->metrics = good;
  step("host_objects (" + std::to_string(probes) + " probes)");

  Result<HostObject> host = whole ? Result<HostObject>(std::move(*whole)) : HostObject::Create(a, s->chip_, avail);
  if (!host.ok()) return host.status();
  if (!whole) {
    if (CUptiResult r = host->AddMetrics(CStrings(good)); r != CUPTI_SUCCESS)
      return Status::Unavailable(a->Error("cuptiProfilerHostConfigAddMetrics", r));
  }
  CUpti_Profiler_Host_GetConfigImageSize_Params cs{CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
  cs.pHostObject = host->get();
  if (CUptiResult r = a->HostGetConfigImageSize(&cs); r != CUPTI_SUCCESS)
    return Status::Unavailable(a->Error("cuptiProfilerHostGetConfigImageSize", r));
  s->impl_->config.resize(cs.configImageSize);
  CUpti_Profiler_Host_GetConfigImage_Params ci{CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
  ci.pHostObject = host->get();
  ci.configImageSize = s->impl_->config.size();
  ci.pConfigImage = s->impl_->config.data();
  if (CUptiResult r = a->HostGetConfigImage(&ci); r != CUPTI_SUCCESS)
    return Status::Unavailable(a->Error("cuptiProfilerHostGetConfigImage", r));
  CUpti_Profiler_Host_GetNumOfPasses_Params np{CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
  np.configImageSize = s->impl_->config.size();
  np.pConfigImage = s->impl_->config.data();
  if (CUptiResult r = a->HostGetNumOfPasses(&np); r != CUPTI_SUCCESS)
    return Status::Unavailable(a->Error("cuptiProfilerHostGetNumOfPasses", r));
  s->passes_ = np.numOfPasses;
  s->impl_->host.emplace(std::move(host).value());
  step("config_image");

  CUpti_RangeProfiler_Enable_Params en{CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
  en.ctx = nullptr;
  if (CUptiResult r = a->Enable(&en); r != CUPTI_SUCCESS)
    return Status::Unavailable(a->Error("cuptiRangeProfilerEnable", r));
  s->impl_->profiler = en.pRangeProfilerObject;
  step("enable");

  auto names = CStrings(good);
  CUpti_RangeProfiler_GetCounterDataSize_Params ds{CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
  ds.pRangeProfilerObject = s->impl_->profiler;
  ds.pMetricNames = names.data();
  ds.numMetrics = names.size();
  ds.maxNumOfRanges = max_ranges;
  ds.maxNumRangeTreeNodes = static_cast<uint32_t>(max_ranges);
  if (CUptiResult r = a->GetCounterDataSize(&ds); r != CUPTI_SUCCESS)
    return Status::Unavailable(a->Error("cuptiRangeProfilerGetCounterDataSize", r));
  s->impl_->counter_data.resize(ds.counterDataSize);
  CUpti_RangeProfiler_CounterDataImage_Initialize_Params cdi{
      CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
  cdi.pRangeProfilerObject = s->impl_->profiler;
  cdi.counterDataSize = s->impl_->counter_data.size();
  cdi.pCounterData = s->impl_->counter_data.data();
  if (CUptiResult r = a->CounterDataImageInitialize(&cdi); r != CUPTI_SUCCESS)
    return Status::Unavailable(a->Error("cuptiRangeProfilerCounterDataImageInitialize", r));

  CUpti_RangeProfiler_SetConfig_Params sc{CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
  sc.pRangeProfilerObject = s->impl_->profiler;
  sc.configSize = s->impl_->config.size();
  sc.pConfig = s->impl_->config.data();
  sc.counterDataImageSize = s->impl_->counter_data.size();
  sc.pCounterDataImage = s->impl_->counter_data.data();
  sc.range = CUPTI_AutoRange;
  sc.replayMode = replay == CounterReplay::kUser ? CUPTI_UserReplay : CUPTI_KernelReplay;
  sc.maxRangesPerPass = max_ranges;
  sc.numNestingLevels = 1;
  sc.minNestingLevel = 1;
  sc.passIndex = 0;
  sc.targetNestingLevel = 1;
  if (CUptiResult r = a->SetConfig(&sc); r != CUPTI_SUCCESS)
    return Status::Unavailable(a->Error("cuptiRangeProfilerSetConfig", r));
  step("counter_data_and_config");
  s->steps_ = std::move(steps);
  return s;
}

Status CuptiCounterSession::Start() {
  CUpti_RangeProfiler_Start_Params p{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
  p.pRangeProfilerObject = impl_->profiler;
  if (CUptiResult r = impl_->api->Start(&p); r != CUPTI_SUCCESS)
    return Status::Unavailable(impl_->api->Error("cuptiRangeProfilerStart", r));
  impl_->started = true;
  return Status::Ok();
}

Result<bool> CuptiCounterSession::EndPass() {
  const ProfilerApi* a = impl_->api;
  CUpti_RangeProfiler_Stop_Params stop{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
  stop.pRangeProfilerObject = impl_->profiler;
  if (CUptiResult r = a->Stop(&stop); r != CUPTI_SUCCESS)
    return Status::Internal(a->Error("cuptiRangeProfilerStop", r));
  impl_->started = false;
  if (!stop.isAllPassSubmitted && replay_ == CounterReplay::kKernel)
    return Status::Internal("CUPTI did not submit every pass (kernel replay incomplete)");
  return stop.isAllPassSubmitted != 0;
}

Result<std::vector<RangeCounters>> CuptiCounterSession::Results() {
  const ProfilerApi* a = impl_->api;
  CUpti_RangeProfiler_DecodeData_Params dd{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
  dd.pRangeProfilerObject = impl_->profiler;
  if (CUptiResult r = a->DecodeData(&dd); r != CUPTI_SUCCESS)
    return Status::Internal(a->Error("cuptiRangeProfilerDecodeData", r));
  dropped_ = dd.numOfRangeDropped;
  CUpti_RangeProfiler_GetCounterDataInfo_Params di{CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
  di.pCounterDataImage = impl_->counter_data.data();
  di.counterDataImageSize = impl_->counter_data.size();
  if (CUptiResult r = a->GetCounterDataInfo(&di); r != CUPTI_SUCCESS)
    return Status::Internal(a->Error("cuptiRangeProfilerGetCounterDataInfo", r));

  auto names = CStrings(impl_->metrics);
  std::vector<double> values(names.size());
  std::vector<RangeCounters> out;
  for (size_t i = 0; i < di.numTotalRanges; ++i) {
    RangeCounters rc;
    CUpti_RangeProfiler_CounterData_GetRangeInfo_Params ri{
        CUpti_RangeProfiler_CounterData_GetRangeInfo_Params_STRUCT_SIZE};
    ri.pCounterDataImage = impl_->counter_data.data();
    ri.counterDataImageSize = impl_->counter_data.size();
    ri.rangeIndex = i;
    ri.rangeDelimiter = "/";
    if (a->GetRangeInfo(&ri) == CUPTI_SUCCESS && ri.rangeName) rc.range = ri.rangeName;
    CUpti_Profiler_Host_EvaluateToGpuValues_Params ev{CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
    ev.pHostObject = impl_->host->get();
    ev.pCounterDataImage = impl_->counter_data.data();
    ev.counterDataImageSize = impl_->counter_data.size();
    ev.rangeIndex = i;
    ev.ppMetricNames = names.data();
    ev.numMetrics = names.size();
    ev.pMetricValues = values.data();
    if (CUptiResult r = a->HostEvaluateToGpuValues(&ev); r != CUPTI_SUCCESS)
      return Status::Internal(a->Error("cuptiProfilerHostEvaluateToGpuValues", r) + " (range " + std::to_string(i) +
                              ")");
    for (size_t m = 0; m < names.size(); ++m) rc.metrics[impl_->metrics[m]] = values[m];
    out.push_back(std::move(rc));
  }
  return out;
}

CuptiCounterSession::~CuptiCounterSession() {
  if (!impl_ || !impl_->profiler) return;
  if (impl_->started) {
    CUpti_RangeProfiler_Stop_Params stop{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
    stop.pRangeProfilerObject = impl_->profiler;
    impl_->api->Stop(&stop);
  }
  CUpti_RangeProfiler_Disable_Params p{CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
  p.pRangeProfilerObject = impl_->profiler;
  impl_->api->Disable(&p);
}

#endif  // KPILOT_HAVE_CUPTI

}  // namespace kpilot
