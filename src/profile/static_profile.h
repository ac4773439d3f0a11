// The static profile (no GPU): instruction mix from SASS and theoretical occupancy from the
// ptxas report and the target SM's rules.
#pragma once

#include "profile/profile.h"

namespace kpilot {

// Counts one function's instructions by class (see InstructionMix). Pure.
InstructionMix ClassifySass(const SassFunction& f);

// The occupancy rules of a target ("sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100a", …):
// the documented per-architecture table. InvalidInput for an unknown target.
Result<SmLimits> SmLimitsFor(const std::string& arch);

// Theoretical occupancy of a kernel using `registers` per thread and `shared_bytes` of shared
// memory per block (static + dynamic) at `block_threads`, following the CUDA occupancy rules
// (register allocation per warp in units, shared memory in units plus the per-block reserve).
// The limiter is the resource that allows the fewest blocks.
Occupancy ComputeOccupancy(const SmLimits& sm, int block_threads, int registers, int64_t shared_bytes);

// Static profiles of every kernel in a compile: resources from ptxas joined with the SASS
// function of the same (mangled) name.
std::vector<KernelStaticProfile> StaticProfiles(const CompileOutput& compile);

// Replays (a sweep's space has no SASS): kernels without one take the instruction mix the sweep
// stored, `stored` = [{"kernel": name, "mix": {...}}] matched by resources.name. Others untouched.
void AdoptStoredMixes(const nlohmann::json& stored, std::vector<KernelStaticProfile>* profiles);

}  // namespace kpilot
