// What GPUs this machine has, through the CUDA driver API loaded at run time (libcuda.so.1),
// so kpilot builds and runs on machines without a GPU or driver.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace kpilot {

struct GpuInfo {
  int index = 0;
  std::string name;
  int sm_count = 0;
  int cc_major = 0;
  int cc_minor = 0;
  int64_t memory_bytes = 0;
  int sm_clock_khz = 0;      // max SM clock
  int memory_clock_khz = 0;  // max memory clock
  int memory_bus_bits = 0;
  int64_t l2_bytes = 0;
  int64_t shared_per_block_optin = 0;
  std::string driver_version;  // "13.0" from cuDriverGetVersion
  // The nvcc target for this GPU's architecture-specific features, e.g. "sm_90a".
  std::string Arch() const;
};

// The seam for GPU discovery; tests substitute a double.
class GpuProbe {
 public:
  virtual ~GpuProbe() = default;
  // Empty list (not an error) when there is no driver or no device; the reason is in `why_none`.
  virtual std::vector<GpuInfo> List(std::string* why_none) = 0;
};

GpuProbe& SystemGpuProbe();

// The GPUs one run evaluates on (`--devices`), from the visible ones: "all" is every GPU of the
// first one's model (speedups from different models would not compare), "0,2" those indices.
// InvalidInput naming the visible GPUs for an index that is not one of them, a repeated index,
// two models, or a spec that is neither; Unavailable when none is visible. Pure.
Result<std::vector<int>> ChooseDevices(const std::vector<GpuInfo>& visible, const std::string& spec);

// The GPU a command runs on: device `index` of those `probe` lists. InvalidInput for an index
// this machine does not have ("--device 3: this machine has 1 GPU(s)"); Unavailable, with the
// probe's reason, where it lists none.
Result<GpuInfo> GpuAtIndex(GpuProbe& probe, int index);

// "sm_90a" for compute capability 9.0 and 10.0/12.0 ("sm_100a", "sm_120a"), else "sm_XY".
std::string ArchForComputeCapability(int major, int minor);

}  // namespace kpilot
