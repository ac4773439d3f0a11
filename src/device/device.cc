#include "device/device.h"

#include <dlfcn.h>

#include <set>
#include <sstream>

namespace kpilot {
namespace {

// The few driver API entry points kpilot needs, with their C signatures (cuda.h is not needed).
using CUresult = int;
using CUdevice = int;
using FnInit = CUresult (*)(unsigned);
using FnCount = CUresult (*)(int*);
using FnGet = CUresult (*)(CUdevice*, int);
using FnName = CUresult (*)(char*, int, CUdevice);
using FnAttr = CUresult (*)(int*, int, CUdevice);
using FnMem = CUresult (*)(size_t*, CUdevice);
using FnVersion = CUresult (*)(int*);

// CUdevice_attribute values from cuda.h (stable across releases).
constexpr int kAttrMaxSharedPerBlockOptin = 97;
constexpr int kAttrClockRate = 13;
constexpr int kAttrMultiprocessorCount = 16;
constexpr int kAttrMemoryClockRate = 36;
constexpr int kAttrGlobalMemoryBusWidth = 37;
constexpr int kAttrL2CacheSize = 38;
constexpr int kAttrComputeCapabilityMajor = 75;
constexpr int kAttrComputeCapabilityMinor = 76;

class DriverGpuProbe : public GpuProbe {
 public:
  std::vector<GpuInfo> List(std::string* why_none) override {
    std::vector<GpuInfo> out;
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      if (why_none) *why_none = "no CUDA driver (libcuda.so.1 not found)";
      return out;
    }
    auto init = reinterpret_cast<FnInit>(dlsym(h, "cuInit"));
    auto count = reinterpret_cast<FnCount>(dlsym(h, "cuDeviceGetCount"));
    auto get = reinterpret_cast<FnGet>(dlsym(h, "cuDeviceGet"));
    auto name = reinterpret_cast<FnName>(dlsym(h, "cuDeviceGetName"));
    auto attr = reinterpret_cast<FnAttr>(dlsym(h, "cuDeviceGetAttribute"));
    auto mem = reinterpret_cast<FnMem>(dlsym(h, "cuDeviceTotalMem_v2"));
    auto version = reinterpret_cast<FnVersion>(dlsym(h, "cuDriverGetVersion"));
    if (!init || !count || !get || !name || !attr || !mem || !version) {
      if (why_none) *why_none = "libcuda.so.1 lacks the driver API entry points kpilot uses";
      return out;
    }
    CUresult rc = init(0);
    int n = 0;
    if (rc != 0 || count(&n) != 0 || n == 0) {
      if (why_none)
        *why_none = rc != 0 ? "cuInit failed with error " + std::to_string(rc) : "the driver reports no GPU";
      return out;
    }
    int drv = 0;
    version(&drv);
    for (int i = 0; i < n; ++i) {
      CUdevice d;
      if (get(&d, i) != 0) continue;
      GpuInfo g;
      g.index = i;
      char buf[256] = {0};
      name(buf, sizeof(buf) - 1, d);
      g.name = buf;
      attr(&g.sm_count, kAttrMultiprocessorCount, d);
      attr(&g.cc_major, kAttrComputeCapabilityMajor, d);
      attr(&g.cc_minor, kAttrComputeCapabilityMinor, d);
      attr(&g.sm_clock_khz, kAttrClockRate, d);
      attr(&g.memory_clock_khz, kAttrMemoryClockRate, d);
      attr(&g.memory_bus_bits, kAttrGlobalMemoryBusWidth, d);
      int l2 = 0, smem = 0;
      attr(&l2, kAttrL2CacheSize, d);
      attr(&smem, kAttrMaxSharedPerBlockOptin, d);
      g.l2_bytes = l2;
      g.shared_per_block_optin = smem;
      size_t bytes = 0;
      mem(&bytes, d);
      g.memory_bytes = static_cast<int64_t>(bytes);
      g.driver_version = std::to_string(drv / 1000) + "." + std::to_string((drv % 1000) / 10);
      out.push_back(g);
    }
    // The handle stays open: the driver does not support being unloaded after cuInit.
    return out;
  }
};

}  // namespace

std::string ArchForComputeCapability(int major, int minor) {
  std::string arch = "sm_" + std::to_string(major) + std::to_string(minor);
  if ((major == 9 && minor == 0) || (major == 10 && minor == 0) || (major == 12 && minor == 0)) arch += "a";
  return arch;
}

std::string GpuInfo::Arch() const { return ArchForComputeCapability(cc_major, cc_minor); }

GpuProbe& SystemGpuProbe() {
  static DriverGpuProbe probe;
  return probe;
}

Result<std::vector<int>> ChooseDevices(const std::vector<GpuInfo>& visible, const std::string& spec) {
  if (visible.empty()) return Status::Unavailable("no GPU is visible");
  std::string listed;
  for (const auto& g : visible) listed += (listed.empty() ? "" : ", ") + std::to_string(g.index) + " (" + g.name + ")";
  std::vector<int> out;
  if (spec.empty() || spec == "all") {
    for (const auto& g : visible)
      if (g.name == visible.front().name) out.push_back(g.index);
    return out;
  }
  std::set<int> seen;
  std::string model;
  std::stringstream in(spec + (spec.back() == ',' ? "," : ""));  // "0," ends with an empty item too
  for (std::string item; std::getline(in, item, ',');) {
    size_t used = 0;
    int index = -1;
    try {
      index = std::stoi(item, &used);
    } catch (...) {
      used = 0;
    }
    if (item.empty() || used != item.size() || index < 0)
      return Status::InvalidInput("--devices " + spec +
                                  ": expected all, or GPU indices such as 0,1 (visible: " + listed + ")");
    const GpuInfo* g = nullptr;
    for (const auto& v : visible)
      if (v.index == index) g = &v;
    const std::string what = "--devices " + spec + ": ";
    if (!g) return Status::InvalidInput(what + "GPU " + item + " is not visible (visible: " + listed + ")");
    if (!seen.insert(index).second) return Status::InvalidInput(what + "GPU " + item + " is listed twice");
    if (!model.empty() && g->name != model)
      return Status::InvalidInput(what + model + " and " + g->name +
                                  " in one run — speedups timed on different models do not compare; "
                                  "list GPUs of one model");
    model = g->name;
    out.push_back(index);
  }
  if (out.empty()) return Status::InvalidInput("--devices " + spec + ": no GPU listed (visible: " + listed + ")");
  return out;
}

Result<GpuInfo> GpuAtIndex(GpuProbe& probe, int index) {
  std::string why;
  std::vector<GpuInfo> gpus = probe.List(&why);
  if (gpus.empty()) return Status::Unavailable("no usable GPU (" + why + ")");
  if (index < 0 || index >= static_cast<int>(gpus.size()))
    return Status::InvalidInput("--device " + std::to_string(index) + ": this machine has " +
                                std::to_string(gpus.size()) + " GPU(s)");
  return gpus[static_cast<size_t>(index)];
}

}  // namespace kpilot
