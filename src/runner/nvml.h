// NVML, the driver's management library, loaded with dlopen("libnvidia-ml.so.1") so that kpilot
// builds and runs on machines without the NVIDIA driver (Open() then says so). Used for board
// energy around a timed run and for the processes that share the GPU with it.
//
// Device indices here are NVML's, which follow PCI bus order and ignore CUDA_VISIBLE_DEVICES;
// a CUDA device index can name another board. Map a CUDA device to NVML through its PCI bus id
// (cudaDeviceGetPCIBusId) and NvmlIndexForPciBusId.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace kpilot {

struct GpuProcess {
  uint32_t pid = 0;
  uint64_t used_bytes = 0;  // device memory the process holds; 0 where NVML cannot tell
  std::string name;         // /proc/PID/comm when readable (same PID namespace), else empty
};

// An initialized NVML session (nvmlInit_v2 ... nvmlShutdown); owns the library handle.
// Methods may be called from any thread (NVML is thread-safe). Every failure is a Status naming
// the NVML function and NVML's own message; an `index` NVML does not know is InvalidInput.
class Nvml {
 public:
  // Loads libnvidia-ml.so.1 and initializes NVML. Unavailable when the library is missing (no
  // NVIDIA driver: the message names libnvidia-ml.so.1) or nvmlInit_v2 fails.
  static Result<std::unique_ptr<Nvml>> Open();

  // Energy the board has used since the driver was loaded, in millijoules
  // (nvmlDeviceGetTotalEnergyConsumption; Volta and newer). Take the difference of two reads.
  Result<uint64_t> TotalEnergyMillijoules(int index);

  // Processes with a compute context on the device (nvmlDeviceGetComputeRunningProcesses_v3).
  // Inside a PID namespace NVML may report PIDs of the host namespace.
  Result<std::vector<GpuProcess>> ComputeProcesses(int index);

  // "GPU-xxxxxxxx-xxxx-..." (nvmlDeviceGetUUID).
  Result<std::string> Uuid(int index);

  // The installed driver's version, e.g. "580.82.07" (nvmlSystemGetDriverVersion).
  Result<std::string> DriverVersion();

  // The product name, e.g. "NVIDIA H200" (nvmlDeviceGetName).
  Result<std::string> Name(int index);

  // NVML's index of the device at a PCI bus id such as "0000:19:00.0" (the form
  // cudaDeviceGetPCIBusId writes). NotFound when no device sits there.
  Result<int> NvmlIndexForPciBusId(const std::string& pci_bus_id);

  ~Nvml();  // nvmlShutdown, then the library is unloaded
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  struct Api;  // the resolved entry points (nvml.cc)

 private:
  explicit Nvml(std::unique_ptr<Api> api);
  std::unique_ptr<Api> api_;
};

}  // namespace kpilot
