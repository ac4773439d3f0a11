// The static profile: SASS instruction classes, the per-architecture occupancy table, and the
// occupancy calculation. Pure functions; no GPU.
#include "profile/static_profile.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

namespace kpilot {
namespace {

// "LDG.E.128.CONSTANT" → {"LDG", "E", "128", "CONSTANT"}.
std::vector<std::string> SplitOpcode(const std::string& opcode) {
  std::vector<std::string> parts;
  std::istringstream in(opcode);
  std::string part;
  while (std::getline(in, part, '.')) parts.push_back(part);
  if (parts.empty()) parts.push_back("");
  return parts;
}

bool HasModifier(const std::vector<std::string>& parts, const std::string& mod) {
  return std::find(parts.begin() + 1, parts.end(), mod) != parts.end();
}

// Access width in bits from the modifiers, by whole token: ".LTC128B" (an L2 prefetch hint) is
// not a width. 8- and 16-bit accesses count as 32; 256-bit ones (Blackwell) as 128, the widest
// class InstructionMix has.
int AccessWidth(const std::vector<std::string>& parts) {
  if (HasModifier(parts, "128") || HasModifier(parts, "256")) return 128;
  if (HasModifier(parts, "64")) return 64;
  return 32;
}

// The operands after the opcode as bare names: "I2F.U32.RP R0, R5" → {"R0", "R5"};
// "-R5.reuse" and "|R5|" → "R5".
std::vector<std::string> Operands(const SassInstruction& ins) {
  std::string rest = ins.text;
  size_t at = rest.find(ins.opcode);
  rest = at == std::string::npos ? "" : rest.substr(at + ins.opcode.size());
  std::vector<std::string> ops;
  std::istringstream in(rest);
  std::string op;
  while (std::getline(in, op, ',')) {
    size_t b = op.find_first_not_of(" \t-|!~");
    size_t e = b == std::string::npos ? b : op.find_first_of(" \t.|", b);
    ops.push_back(b == std::string::npos ? "" : op.substr(b, e == std::string::npos ? e : e - b));
  }
  return ops;
}

// The padding trap every function ends with: "BRA 0x250" at offset 0x250 (never executed).
bool IsSelfBranch(const SassInstruction& ins, const std::string& base) {
  if (base != "BRA" || !ins.predicate.empty()) return false;
  size_t space = ins.text.find_last_of(' ');
  if (space == std::string::npos) return false;
  std::string target = ins.text.substr(space + 1);
  if (target.rfind("0x", 0) != 0) return false;
  char* end = nullptr;
  unsigned long value = std::strtoul(target.c_str() + 2, &end, 16);
  return end && *end == '\0' && value == ins.offset;
}

const std::set<std::string> kFp64Ops = {"DFMA", "DMUL", "DADD", "DSETP", "DMNMX", "DSET"};
const std::set<std::string> kConversions = {"F2F", "I2F", "F2I", "FRND"};
const std::set<std::string> kAtomics = {"ATOM", "ATOMS", "ATOMG", "RED", "REDG"};
const std::set<std::string> kBranches = {"BRA", "BRX", "JMP", "JMX", "CALL"};
const std::set<std::string> kAsyncCopies = {"LDGSTS", "UBLKCP", "UTMALDG", "UTMASTG"};
// Synchronous MMA (mma.sync / wmma): HMMA for fp16/bf16/tf32, DMMA fp64, QMMA/OMMA fp8/fp4.
const std::set<std::string> kWarpMma = {"HMMA", "DMMA", "QMMA", "OMMA"};
const std::set<std::string> kIntegerMma = {"IMMA", "BMMA"};
// Asynchronous warpgroup MMA (wgmma on sm_90a): HGMMA, and IGMMA/QGMMA/BGMMA for int8/fp8/b1.
const std::set<std::string> kWarpgroupMma = {"HGMMA", "IGMMA", "QGMMA", "BGMMA"};

// Instructions further apart than this are not one division sequence.
constexpr int kDivisionWindow = 16;

}  // namespace

// Integer division by a runtime divisor has no hardware instruction; nvcc (checked with 13.0 on
// sm_90a, tests/fixtures/profile/intdiv.cu) emits the same idiom for `/` and `%`, signed and
// unsigned:
//   I2F.RP | I2F.U32.RP | I2F.U64.RP  Rf, |divisor|     int→float, rounding towards +inf
//   MUFU.RCP                          Rf, Rf             approximate reciprocal
//   VIADD 0xffffffe; F2I.FTZ.U32.TRUNC; IMAD.HI.U32 …   refine the quotient, then correct it
// Float division and __frcp_rn use MUFU.RCP without an .RP conversion, and division by a
// constant is a multiply-high (IMAD.HI) with no MUFU at all, so the signature is an I2F with the
// .RP modifier whose result feeds a MUFU.RCP within a few instructions; each such pair counts
// once. A 64-bit division counts twice: nvcc emits a 32-bit fast path beside the 64-bit routine.
InstructionMix ClassifySass(const SassFunction& f) {
  InstructionMix mix;
  std::map<std::string, size_t> rp_conversions;  // destination register → instruction index
  for (size_t i = 0; i < f.instructions.size(); ++i) {
    const SassInstruction& ins = f.instructions[i];
    const std::vector<std::string> parts = SplitOpcode(ins.opcode);
    const std::string& base = parts[0];
    if (base == "NOP" || base.empty() || IsSelfBranch(ins, base)) continue;  // padding
    ++mix.total;

    if (base == "LDG") {
      int width = AccessWidth(parts);
      ++(width == 128 ? mix.global_loads_128 : width == 64 ? mix.global_loads_64 : mix.global_loads_32);
    } else if (base == "STG") {
      int width = AccessWidth(parts);
      ++(width == 128 ? mix.global_stores_128 : width == 64 ? mix.global_stores_64 : mix.global_stores_32);
    } else if (base == "LDS" || base == "LDSM") {
      ++mix.shared_loads;
    } else if (base == "STS" || base == "STSM") {
      ++mix.shared_stores;
    } else if (base == "LDL") {
      ++mix.local_loads;
    } else if (base == "STL") {
      ++mix.local_stores;
    } else if (kAsyncCopies.count(base)) {
      ++mix.async_copies;
    } else if (kWarpMma.count(base)) {
      ++mix.hmma;
    } else if (kIntegerMma.count(base)) {
      ++mix.imma;
    } else if (kWarpgroupMma.count(base) || (base.rfind("UTC", 0) == 0 && base.size() > 6 && base.ends_with("MMA"))) {
      ++mix.hgmma;  // UTCHMMA, UTCQMMA, …: tcgen05.mma on sm_100a, the successor of wgmma
    } else if (base == "FFMA" || base == "FFMA2" || base == "FFMA32I") {
      ++mix.ffma;
    } else if (base == "FMUL" || base == "FMUL2" || base == "FMUL32I") {
      ++mix.fmul;
    } else if (base == "FADD" || base == "FADD2" || base == "FADD32I") {
      ++mix.fadd;
    } else if (kFp64Ops.count(base) || (kConversions.count(base) && HasModifier(parts, "F64"))) {
      ++mix.fp64;
    } else if (base == "MUFU") {
      ++mix.mufu;
    } else if (base == "SHFL") {
      ++mix.shuffles;
    } else if (base == "BAR") {
      ++mix.barriers;
    } else if (kAtomics.count(base)) {
      ++mix.atomics;
    } else if (kBranches.count(base)) {
      ++mix.branches;
    }

    // Integer division sequences (see above).
    if (base == "I2F" && HasModifier(parts, "RP")) {
      auto ops = Operands(ins);
      if (!ops.empty() && !ops[0].empty()) rp_conversions[ops[0]] = i;
    } else if (base == "MUFU" && HasModifier(parts, "RCP") && !rp_conversions.empty()) {
      auto ops = Operands(ins);
      if (ops.size() >= 2) {
        auto it = rp_conversions.find(ops[1]);
        if (it != rp_conversions.end() && i - it->second <= kDivisionWindow) {
          ++mix.int_div_sequences;
          rp_conversions.erase(it);
        }
      }
    }
  }
  return mix;
}

// The per-architecture limits, from the CUDA C++ Programming Guide's "Technical Specifications
// per Compute Capability" table (threads, warps, blocks, registers per SM, shared memory per SM
// and per block) and from the rules of the CUDA Occupancy Calculator / cuda_occupancy.h
// (cudaOccRegAllocationGranularity = 256 registers per warp, cudaOccSMemAllocationGranularity =
// 128 bytes, 1 KiB of shared memory reserved per block by the system from compute capability 8.0
// on — cudaDeviceProp::reservedSharedMemPerBlock). "Shared memory per SM" is the largest carveout
// (the unified L1/shared array minus what L1 keeps); the opt-in per-block maximum is that minus
// the 1 KiB reserve.
Result<SmLimits> SmLimitsFor(const std::string& arch) {
  // The family variant suffixes ("a": arch-specific, "f": family) share the base's limits.
  std::string base = arch;
  if (base.size() > 5 && (base.back() == 'a' || base.back() == 'f')) base.pop_back();

  SmLimits sm;  // defaults are sm_90's
  sm.arch = arch;
  sm.max_registers_per_thread = 255;
  sm.registers_per_sm = 65536;
  sm.register_allocation_unit = 256;
  sm.shared_allocation_unit = 128;
  sm.shared_reserved_per_block = 1024;
  sm.warp_size = 32;
  if (base == "sm_80") {
    // A100: 2048 threads / 64 warps / 32 blocks; 164 KiB shared per SM, 163 KiB per block.
    sm.max_threads_per_sm = 2048, sm.max_warps_per_sm = 64, sm.max_blocks_per_sm = 32;
    sm.shared_per_sm = 167936, sm.shared_per_block_optin = 166912;
  } else if (base == "sm_86" || base == "sm_89") {
    // GA10x / AD10x: 1536 threads / 48 warps; 16 blocks (8.6), 24 blocks (8.9); 100 KiB shared
    // per SM, 99 KiB per block.
    sm.max_threads_per_sm = 1536, sm.max_warps_per_sm = 48;
    sm.max_blocks_per_sm = base == "sm_89" ? 24 : 16;
    sm.shared_per_sm = 102400, sm.shared_per_block_optin = 101376;
  } else if (base == "sm_90" || base == "sm_100") {
    // H100/H200 and B200: 2048 threads / 64 warps / 32 blocks; 228 KiB shared per SM, 227 KiB
    // per block.
    sm.max_threads_per_sm = 2048, sm.max_warps_per_sm = 64, sm.max_blocks_per_sm = 32;
    sm.shared_per_sm = 233472, sm.shared_per_block_optin = 232448;
  } else {
    return Status::InvalidInput("no occupancy table for target '" + arch +
                                "': known targets are sm_80, sm_86, sm_89, sm_90, sm_90a, sm_100, sm_100a");
  }
  return sm;
}

namespace {

int64_t RoundUp(int64_t value, int64_t unit) { return unit <= 0 ? value : (value + unit - 1) / unit * unit; }

// Register-file partitions (SM sub-partitions, one per warp scheduler) from compute capability
// 7.0 on: registers are allocated per partition, and the hardware checks a block's registers
// as if its warps were spread evenly over all four (cuda_occupancy.h,
// cudaOccMaxBlocksPerSMRegsLimit).
constexpr int kSubPartitions = 4;
// Threads per block, every architecture since compute capability 2.0.
constexpr int kMaxThreadsPerBlock = 1024;

}  // namespace

// Follows cuda_occupancy.h: warps per block rounded up; registers per warp rounded up to the
// allocation unit, warps that fit in each register partition times the partitions, divided by
// the block's warps; shared memory per block plus the reserve, rounded up to the allocation
// unit, into the SM's shared memory; the warp and block limits. The limiter is the resource
// allowing the fewest blocks; on a tie the hardware limits (warps, then blocks) are named before
// registers and shared memory, since raising those would not help.
Occupancy ComputeOccupancy(const SmLimits& sm, int block_threads, int registers, int64_t shared_bytes) {
  Occupancy occ;
  occ.block_threads = block_threads;
  occ.max_warps = sm.max_warps_per_sm;
  if (block_threads <= 0 || block_threads > kMaxThreadsPerBlock || block_threads > sm.max_threads_per_sm ||
      sm.warp_size <= 0) {
    occ.limiter = "block_size";
    return occ;
  }
  const int warps_per_block = static_cast<int>(RoundUp(block_threads, sm.warp_size) / sm.warp_size);

  occ.blocks_by_warps = sm.max_warps_per_sm / warps_per_block;
  occ.blocks_by_block_limit = sm.max_blocks_per_sm;

  // Registers.
  const int64_t regs_per_warp = RoundUp(int64_t{std::max(registers, 0)} * sm.warp_size, sm.register_allocation_unit);
  if (registers > sm.max_registers_per_thread ||
      regs_per_warp * RoundUp(warps_per_block, kSubPartitions) > sm.registers_per_sm ||
      regs_per_warp * warps_per_block > sm.registers_per_sm) {
    occ.blocks_by_registers = 0;
  } else if (regs_per_warp == 0) {
    occ.blocks_by_registers = INT_MAX;
  } else {
    int64_t warps_per_partition = sm.registers_per_sm / kSubPartitions / regs_per_warp;
    occ.blocks_by_registers = static_cast<int>(warps_per_partition * kSubPartitions / warps_per_block);
  }

  // Shared memory.
  const int64_t smem = std::max<int64_t>(shared_bytes, 0);
  const int64_t smem_per_block = RoundUp(smem + sm.shared_reserved_per_block, sm.shared_allocation_unit);
  if (smem > sm.shared_per_block_optin) {
    occ.blocks_by_shared = 0;
  } else if (smem_per_block == 0) {
    occ.blocks_by_shared = INT_MAX;
  } else {
    occ.blocks_by_shared = static_cast<int>(std::min<int64_t>(sm.shared_per_sm / smem_per_block, INT_MAX));
  }

  // Ties name the first in this order.
  const std::pair<const char*, int> limits[] = {
      {"warps", occ.blocks_by_warps},
      {"blocks", occ.blocks_by_block_limit},
      {"registers", occ.blocks_by_registers},
      {"shared_memory", occ.blocks_by_shared},
  };
  const auto* least = std::min_element(std::begin(limits), std::end(limits),
                                       [](const auto& a, const auto& b) { return a.second < b.second; });
  occ.limiter = least->first;
  occ.blocks_per_sm = least->second;
  occ.active_warps = occ.blocks_per_sm * warps_per_block;
  occ.fraction = occ.max_warps > 0 ? static_cast<double>(occ.active_warps) / occ.max_warps : 0;
  return occ;
}

nlohmann::json ToJson(const InstructionMix& m) {
  return {{"total", m.total},
          {"ldg32", m.global_loads_32},
          {"ldg64", m.global_loads_64},
          {"ldg128", m.global_loads_128},
          {"stg32", m.global_stores_32},
          {"stg64", m.global_stores_64},
          {"stg128", m.global_stores_128},
          {"lds", m.shared_loads},
          {"sts", m.shared_stores},
          {"ldl", m.local_loads},
          {"stl", m.local_stores},
          {"async_copies", m.async_copies},
          {"hmma", m.hmma},
          {"hgmma", m.hgmma},
          {"imma", m.imma},
          {"ffma", m.ffma},
          {"fmul", m.fmul},
          {"fadd", m.fadd},
          {"fp64", m.fp64},
          {"mufu", m.mufu},
          {"int_div_sequences", m.int_div_sequences},
          {"barriers", m.barriers},
          {"atomics", m.atomics},
          {"branches", m.branches},
          {"shuffles", m.shuffles}};
}

InstructionMix InstructionMixFromJson(const nlohmann::json& j) {
  InstructionMix m;
  auto get = [&](const char* key, int* field) {
    if (j.is_object() && j.contains(key) && j[key].is_number_integer()) *field = j[key].get<int>();
  };
  get("total", &m.total);
  get("ldg32", &m.global_loads_32);
  get("ldg64", &m.global_loads_64);
  get("ldg128", &m.global_loads_128);
  get("stg32", &m.global_stores_32);
  get("stg64", &m.global_stores_64);
  get("stg128", &m.global_stores_128);
  get("lds", &m.shared_loads);
  get("sts", &m.shared_stores);
  get("ldl", &m.local_loads);
  get("stl", &m.local_stores);
  get("async_copies", &m.async_copies);
  get("hmma", &m.hmma);
  get("hgmma", &m.hgmma);
  get("imma", &m.imma);
  get("ffma", &m.ffma);
  get("fmul", &m.fmul);
  get("fadd", &m.fadd);
  get("fp64", &m.fp64);
  get("mufu", &m.mufu);
  get("int_div_sequences", &m.int_div_sequences);
  get("barriers", &m.barriers);
  get("atomics", &m.atomics);
  get("branches", &m.branches);
  get("shuffles", &m.shuffles);
  return m;
}

void AdoptStoredMixes(const nlohmann::json& stored, std::vector<KernelStaticProfile>* profiles) {
  if (!stored.is_array()) return;
  for (KernelStaticProfile& p : *profiles) {
    if (p.have_sass) continue;
    for (const auto& s : stored)
      if (s.is_object() && s.value("kernel", "") == p.resources.name && s.contains("mix")) {
        p.mix = InstructionMixFromJson(s["mix"]);
        p.have_sass = true;
        break;
      }
  }
}

std::vector<KernelStaticProfile> StaticProfiles(const CompileOutput& compile) {
  const std::vector<SassFunction> functions = ParseSass(compile.sass);
  std::vector<KernelStaticProfile> profiles;
  profiles.reserve(compile.resources.size());
  for (const KernelResources& r : compile.resources) {
    KernelStaticProfile p;
    p.resources = r;
    // Same mangled name, and the same target when both say which (a multi-arch compile lists
    // every kernel once per target).
    auto match = std::find_if(functions.begin(), functions.end(), [&](const SassFunction& f) {
      return f.name == r.mangled && (f.arch.empty() || r.arch.empty() || f.arch == r.arch);
    });
    if (match != functions.end()) {
      p.mix = ClassifySass(*match);
      p.have_sass = true;
    }
    profiles.push_back(std::move(p));
  }
  return profiles;
}

}  // namespace kpilot
