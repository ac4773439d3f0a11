// The profile module's shared vocabulary: metrics, the static profile of a kernel, bottleneck
// classes, and findings. Each piece has its own header (static_profile.h, ncu.h, roofline.h,
// tool.h); this one holds only the types they all speak.
//
// Metric names are Nsight Compute's (e.g. "dram__throughput.avg.pct_of_peak_sustained_elapsed").
// Values are numbers in ncu's base units after parsing: times in nanoseconds, sizes in bytes,
// percentages in 0–100, rates as reported per second.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "toolchain/toolchain.h"

namespace kpilot {

using MetricMap = std::map<std::string, double>;

// One profiled kernel launch.
struct KernelMetrics {
  std::string kernel;       // demangled function name as ncu prints it
  int id = 0;               // ncu's launch id, in order
  std::string grid, block;  // "(132, 1, 1)"
  MetricMap metrics;
  std::vector<std::string> unavailable;  // metrics ncu printed as n/a or could not collect
};

// SASS instruction counts of one function, by class (static: each instruction once).
struct InstructionMix {
  int total = 0;
  int global_loads_32 = 0, global_loads_64 = 0, global_loads_128 = 0;  // LDG by width (8/16-bit count as 32)
  int global_stores_32 = 0, global_stores_64 = 0, global_stores_128 = 0;
  int shared_loads = 0, shared_stores = 0;  // LDS/LDSM, STS
  int local_loads = 0, local_stores = 0;    // LDL, STL (spills and local arrays)
  int async_copies = 0;                     // LDGSTS (cp.async), UBLKCP/UTMALDG (TMA)
  int hmma = 0, hgmma = 0, imma = 0;        // tensor-core MMA (HGMMA = wgmma on sm_90a)
  int ffma = 0, fmul = 0, fadd = 0;
  int fp64 = 0;               // DFMA, DMUL, DADD, … and F2F.F64 conversions
  int mufu = 0;               // special functions (exp, rcp, sqrt, …)
  int int_div_sequences = 0;  // software integer division/modulo sequences
  int barriers = 0;           // BAR, BAR.SYNC, …
  int atomics = 0;            // ATOM, ATOMS, ATOMG, RED
  int branches = 0;           // BRA, BRX, JMP, …
  int shuffles = 0;           // SHFL
};

// Theoretical occupancy of a kernel at a block size on an SM, with what limits it.
struct Occupancy {
  int block_threads = 0;
  int blocks_per_sm = 0;
  int active_warps = 0;
  int max_warps = 0;
  double fraction = 0;  // active_warps / max_warps
  std::string limiter;  // "registers" | "shared_memory" | "block_size" | "blocks" | "warps"
  int blocks_by_registers = 0, blocks_by_shared = 0, blocks_by_warps = 0, blocks_by_block_limit = 0;
};

// The architecture rules an occupancy calculation needs. From the device when one is present
// (cudaDeviceProp); otherwise from the documented table for the target (static profiles).
struct SmLimits {
  std::string arch;  // "sm_90a"
  int max_threads_per_sm = 2048;
  int max_warps_per_sm = 64;
  int max_blocks_per_sm = 32;
  int registers_per_sm = 65536;
  int max_registers_per_thread = 255;
  int register_allocation_unit = 256;  // registers, per warp
  int64_t shared_per_sm = 233472;      // bytes usable by blocks (228 KiB on sm_90)
  int64_t shared_per_block_optin = 232448;
  int64_t shared_reserved_per_block = 1024;
  int shared_allocation_unit = 128;
  int warp_size = 32;
};

struct KernelStaticProfile {
  KernelResources resources;  // from ptxas -v
  InstructionMix mix;         // from SASS ("" mix when SASS is unavailable)
  bool have_sass = false;
};

enum class Bottleneck { kCompute, kMemory, kLatency, kLaunch, kMixed, kUnknown };
std::string_view BottleneckName(Bottleneck b);                     // "compute-bound", "memory-bound", …
std::optional<Bottleneck> ParseBottleneck(std::string_view name);  // also accepts "compute", "memory", …

// A finding of a micro-profiling tool: plain-language guidance with the numbers behind it.
struct Finding {
  std::string id;                                      // e.g. "uncoalesced-global-access"
  std::string tool;                                    // the tool that produced it
  double severity = 0;                                 // 0..1; findings are ranked by it
  nlohmann::json evidence = nlohmann::json::object();  // the numbers, by name
  std::string guidance;                                // what to change and why, with the numbers in it
  std::vector<std::string> skills;                     // suggested skill ids
};

nlohmann::json ToJson(const Finding& f);
// The inverse of ToJson(Finding); missing fields stay empty (records written before a field existed).
Finding FindingFromJson(const nlohmann::json& j);

// The instruction mix as `kpilot profile --json` prints it under "static.mix" ("ldg32", "hmma",
// …), and back (missing keys read 0).
nlohmann::json ToJson(const InstructionMix& m);
InstructionMix InstructionMixFromJson(const nlohmann::json& j);

}  // namespace kpilot
