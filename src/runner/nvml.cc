#include "runner/nvml.h"

#include <dlfcn.h>

#include <fstream>
#include <limits>
#include <type_traits>
#include <utility>

namespace kpilot {
namespace {

// The few NVML declarations kpilot needs, as nvml.h (not installed here) defines them.
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr nvmlReturn_t kNvmlErrorInvalidArgument = 2;
constexpr nvmlReturn_t kNvmlErrorNotSupported = 3;
constexpr nvmlReturn_t kNvmlErrorNoPermission = 4;
constexpr nvmlReturn_t kNvmlErrorNotFound = 6;
constexpr nvmlReturn_t kNvmlErrorInsufficientSize = 7;
constexpr unsigned kNvmlStringBytes = 96;  // NVML_DEVICE_UUID_V2_BUFFER_SIZE, NVML_DEVICE_NAME_V2_BUFFER_SIZE
constexpr unsigned long long kNvmlValueNotAvailable = std::numeric_limits<unsigned long long>::max();

// nvmlProcessInfo_t as nvmlDeviceGetComputeRunningProcesses_v3 fills it.
struct NvmlProcessInfo {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

struct DlCloser {
  void operator()(void* h) const {
    if (h) dlclose(h);
  }
};

std::string ReadComm(uint32_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

}  // namespace

struct Nvml::Api {
  std::unique_ptr<void, DlCloser> lib;
  nvmlReturn_t (*Init)() = nullptr;
  nvmlReturn_t (*Shutdown)() = nullptr;
  nvmlReturn_t (*GetHandleByIndex)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*GetHandleByPciBusId)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*GetIndex)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*GetTotalEnergy)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*GetComputeProcesses)(nvmlDevice_t, unsigned int*, NvmlProcessInfo*) = nullptr;
  nvmlReturn_t (*GetUuid)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*GetName)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*GetDriverVersion)(char*, unsigned int) = nullptr;  // optional: older libraries may lack it
  const char* (*ErrorString)(nvmlReturn_t) = nullptr;

  // A Status for a failed call: "NVML <function>: <NVML's message>", coded by what went wrong.
  Status Error(const std::string& what, nvmlReturn_t r) const {
    const char* s = ErrorString ? ErrorString(r) : nullptr;
    std::string msg = "NVML " + what + ": " + (s ? s : "error " + std::to_string(r));
    switch (r) {
      case kNvmlErrorInvalidArgument:
        return Status::InvalidInput(msg);
      case kNvmlErrorNotFound:
        return Status::NotFound(msg);
      case kNvmlErrorNotSupported:
      case kNvmlErrorNoPermission:
        return Status::Unavailable(msg);
      default:
        return Status::Internal(msg);
    }
  }

  Result<nvmlDevice_t> Device(int index, const std::string& what) const {
    nvmlDevice_t dev = nullptr;
    if (index < 0)
      return Status::InvalidInput("NVML " + what + ": device index " + std::to_string(index) + " is negative");
    if (nvmlReturn_t r = GetHandleByIndex(static_cast<unsigned>(index), &dev); r != kNvmlSuccess)
      return Error("nvmlDeviceGetHandleByIndex_v2(" + std::to_string(index) + ") for " + what, r);
    return dev;
  }

  Result<std::string> DeviceString(int index, nvmlReturn_t (*fn)(nvmlDevice_t, char*, unsigned int),
                                   const char* fn_name) const {
    Result<nvmlDevice_t> dev = Device(index, fn_name);
    if (!dev.ok()) return dev.status();
    char buf[kNvmlStringBytes] = {};
    if (nvmlReturn_t r = fn(*dev, buf, sizeof buf); r != kNvmlSuccess) return Error(fn_name, r);
    return std::string(buf);
  }
};

Result<std::unique_ptr<Nvml>> Nvml::Open() {
  auto api = std::make_unique<Api>();
  api->lib.reset(dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL));
  if (!api->lib) {
    const char* err = dlerror();
    return Status::Unavailable("NVML: libnvidia-ml.so.1 could not be loaded (" +
                               std::string(err ? err : "dlopen failed") + "); is the NVIDIA driver installed?");
  }
  void* h = api->lib.get();
  auto resolve = [h](const char* name, auto& fn) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
    return fn != nullptr;
  };
  const char* missing = nullptr;
  auto need = [&](const char* name, auto& fn) {
    if (!missing && !resolve(name, fn)) missing = name;
  };
  need("nvmlInit_v2", api->Init);
  need("nvmlShutdown", api->Shutdown);
  need("nvmlDeviceGetHandleByIndex_v2", api->GetHandleByIndex);
  need("nvmlDeviceGetHandleByPciBusId_v2", api->GetHandleByPciBusId);
  need("nvmlDeviceGetIndex", api->GetIndex);
  need("nvmlDeviceGetTotalEnergyConsumption", api->GetTotalEnergy);
  need("nvmlDeviceGetComputeRunningProcesses_v3", api->GetComputeProcesses);
  need("nvmlDeviceGetUUID", api->GetUuid);
  need("nvmlDeviceGetName", api->GetName);
  need("nvmlErrorString", api->ErrorString);
  if (missing)
    return Status::Unavailable(std::string("NVML: libnvidia-ml.so.1 lacks ") + missing + " (driver too old?)");
  resolve("nvmlSystemGetDriverVersion", api->GetDriverVersion);
  if (nvmlReturn_t r = api->Init(); r != kNvmlSuccess) {
    Status s = api->Error("nvmlInit_v2", r);
    return Status::Unavailable(s.message());
  }
  return std::unique_ptr<Nvml>(new Nvml(std::move(api)));
}

Nvml::Nvml(std::unique_ptr<Api> api) : api_(std::move(api)) {}

Result<std::string> Nvml::DriverVersion() {
  if (!api_->GetDriverVersion) return Status::Unavailable("NVML: libnvidia-ml.so.1 lacks nvmlSystemGetDriverVersion");
  char buf[kNvmlStringBytes] = {};
  if (nvmlReturn_t r = api_->GetDriverVersion(buf, sizeof buf); r != kNvmlSuccess)
    return api_->Error("nvmlSystemGetDriverVersion", r);
  return std::string(buf);
}

Nvml::~Nvml() {
  if (api_ && api_->Shutdown) api_->Shutdown();
}

Result<uint64_t> Nvml::TotalEnergyMillijoules(int index) {
  Result<nvmlDevice_t> dev = api_->Device(index, "nvmlDeviceGetTotalEnergyConsumption");
  if (!dev.ok()) return dev.status();
  unsigned long long mj = 0;
  if (nvmlReturn_t r = api_->GetTotalEnergy(*dev, &mj); r != kNvmlSuccess)
    return api_->Error("nvmlDeviceGetTotalEnergyConsumption", r);
  return static_cast<uint64_t>(mj);
}

Result<std::vector<GpuProcess>> Nvml::ComputeProcesses(int index) {
  const char* fn = "nvmlDeviceGetComputeRunningProcesses_v3";
  Result<nvmlDevice_t> dev = api_->Device(index, fn);
  if (!dev.ok()) return dev.status();
  // Ask for the count, then fetch; processes may start in between, so retry with headroom.
  std::vector<NvmlProcessInfo> infos;
  unsigned int count = 0;
  nvmlReturn_t r = api_->GetComputeProcesses(*dev, &count, nullptr);
  for (int attempt = 0; r == kNvmlErrorInsufficientSize && attempt < 4; ++attempt) {
    infos.resize(count + 8);
    count = static_cast<unsigned int>(infos.size());
    r = api_->GetComputeProcesses(*dev, &count, infos.data());
  }
  if (r != kNvmlSuccess) return api_->Error(fn, r);
  std::vector<GpuProcess> out;
  for (unsigned int i = 0; i < count && i < infos.size(); ++i) {
    GpuProcess p;
    p.pid = infos[i].pid;
    p.used_bytes = infos[i].usedGpuMemory == kNvmlValueNotAvailable ? 0 : infos[i].usedGpuMemory;
    p.name = ReadComm(p.pid);
    out.push_back(std::move(p));
  }
  return out;
}

Result<std::string> Nvml::Uuid(int index) { return api_->DeviceString(index, api_->GetUuid, "nvmlDeviceGetUUID"); }

Result<std::string> Nvml::Name(int index) { return api_->DeviceString(index, api_->GetName, "nvmlDeviceGetName"); }

Result<int> Nvml::NvmlIndexForPciBusId(const std::string& pci_bus_id) {
  nvmlDevice_t dev = nullptr;
  if (nvmlReturn_t r = api_->GetHandleByPciBusId(pci_bus_id.c_str(), &dev); r != kNvmlSuccess) {
    Status s = api_->Error("nvmlDeviceGetHandleByPciBusId_v2(\"" + pci_bus_id + "\")", r);
    // NVML answers an unknown or malformed bus id with NOT_FOUND or INVALID_ARGUMENT alike.
    if (r == kNvmlErrorInvalidArgument) return Status::NotFound(s.message());
    return s;
  }
  unsigned int index = 0;
  if (nvmlReturn_t r = api_->GetIndex(dev, &index); r != kNvmlSuccess) return api_->Error("nvmlDeviceGetIndex", r);
  return static_cast<int>(index);
}

}  // namespace kpilot
