// The static profile on real SASS: the toolchain's fixture and purpose-built kernels compiled with
// nvcc 13.0 for sm_90a (tests/fixtures/profile/README.md); occupancy on hand-computed cases.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/fs.h"
#include "profile/static_profile.h"

namespace kpilot {
namespace {

std::string Fixture(const std::string& path) {
  auto text = ReadFile(std::string(KPILOT_FIXTURES_DIR) + "/" + path);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? *text : std::string();
}

// The instruction mix of one function of a cuobjdump listing; fails the test when it is absent.
InstructionMix MixOf(const std::string& fixture, const std::string& mangled) {
  auto functions = ParseSass(Fixture(fixture));
  auto it = std::find_if(functions.begin(), functions.end(), [&](const SassFunction& f) { return f.name == mangled; });
  EXPECT_NE(it, functions.end()) << mangled << " not in " << fixture;
  return it == functions.end() ? InstructionMix{} : ClassifySass(*it);
}

const char* kMix = "profile/sass_mix_kernels_sm90a.txt";
const char* kDiv = "profile/sass_intdiv_sm90a.txt";

TEST(ClassifySass, ToolchainFixtureCopyReduceAndSpill) {
  const char* f = "toolchain/sass_sm90a.txt";
  InstructionMix copy = MixOf(f, "_Z5copy4PK6float4PS_i");
  EXPECT_EQ(copy.global_loads_128, 1);
  EXPECT_EQ(copy.global_stores_128, 1);
  EXPECT_EQ(copy.global_loads_32 + copy.global_loads_64, 0);
  EXPECT_EQ(copy.branches, 1);  // the CALL to twice(); the trailing "BRA self" padding is not counted
  EXPECT_EQ(copy.total, 21);    // 32 listed, less 10 NOPs and the padding branch

  InstructionMix reduce = MixOf(f, "_Z11reduce_smemPKfPfi");
  EXPECT_EQ(reduce.shared_stores, 2);
  EXPECT_EQ(reduce.shared_loads, 3);
  EXPECT_EQ(reduce.barriers, 2);
  EXPECT_EQ(reduce.branches, 2);  // the loop's two predicated branches
  EXPECT_EQ(reduce.fadd, 1);
  EXPECT_EQ(reduce.local_loads + reduce.local_stores, 0);

  InstructionMix spill = MixOf(f, "_ZN4demo5spillILi40EEEvPfi");
  EXPECT_EQ(spill.local_loads, 133);
  EXPECT_EQ(spill.local_stores, 116);
  EXPECT_EQ(spill.global_loads_32, 40);
  EXPECT_EQ(spill.global_stores_32, 40);
  EXPECT_EQ(spill.ffma, 40);
  EXPECT_EQ(spill.fmul, 40);
  EXPECT_EQ(spill.fadd, 40);
  EXPECT_EQ(spill.branches, 0);
  EXPECT_EQ(spill.total, 553);
}

TEST(ClassifySass, VectorLoadsByWidth) {
  InstructionMix v = MixOf(kMix, "_Z8vec4_addPK6float4S1_PS_i");
  EXPECT_EQ(v.global_loads_128, 2);  // LDG.E.128.CONSTANT
  EXPECT_EQ(v.global_stores_128, 1);
  EXPECT_EQ(v.global_loads_32, 0);
  EXPECT_EQ(v.fadd, 4);

  InstructionMix n = MixOf(kMix, "_Z6narrowPKhPKsPdi");
  EXPECT_EQ(n.global_loads_32, 2);  // LDG.E.U8.CONSTANT and LDG.E.U16.CONSTANT count as 32-bit
  EXPECT_EQ(n.global_stores_64, 1);
  EXPECT_EQ(n.global_loads_128, 0);
}

TEST(ClassifySass, SpillingKernelHasLocalTraffic) {
  InstructionMix s = MixOf(kMix, "_Z5spillPKfPfi");
  EXPECT_EQ(s.local_loads, 47);   // LDL, LDL.128, LDL.LU, LDL.LU.64, LDL.LU.128
  EXPECT_EQ(s.local_stores, 56);  // STL, STL.64, STL.128
  EXPECT_EQ(s.global_loads_32, 48);
  EXPECT_EQ(s.ffma, 48);
}

TEST(ClassifySass, SharedMemoryTransposeAndBarrier) {
  InstructionMix t = MixOf(kMix, "_Z14transpose_smemPKfPfi");
  EXPECT_EQ(t.shared_stores, 1);
  EXPECT_EQ(t.shared_loads, 1);
  EXPECT_EQ(t.barriers, 1);
  EXPECT_EQ(t.global_loads_32, 1);
  EXPECT_EQ(t.global_stores_32, 1);
}

TEST(ClassifySass, Fp64InFp32Code) {
  InstructionMix d = MixOf(kMix, "_Z12fp64_in_fp32PKfPfi");
  EXPECT_EQ(d.fp64, 3);  // F2F.F64.F32, DFMA, F2F.F32.F64
  EXPECT_EQ(d.ffma + d.fmul + d.fadd, 0);
  EXPECT_EQ(MixOf(kMix, "_Z8vec4_addPK6float4S1_PS_i").fp64, 0);
}

TEST(ClassifySass, TensorCoreMma) {
  InstructionMix w = MixOf(kMix, "_Z9wmma_bf16PK13__nv_bfloat16S1_Pf");
  EXPECT_EQ(w.hmma, 2);  // one 16x16x16 tile is two HMMA.16816.F32.BF16
  EXPECT_EQ(w.hgmma, 0);
  EXPECT_EQ(w.global_stores_64, 4);

  InstructionMix g = MixOf(kMix, "_Z10wgmma_bf16yyPf");
  EXPECT_EQ(g.hgmma, 1);  // HGMMA.64x8x16.F32.BF16
  EXPECT_EQ(g.hmma, 0);
}

TEST(ClassifySass, AtomicsShufflesSpecialFunctions) {
  InstructionMix a = MixOf(kMix, "_Z7atomicsPKiPiPfS1_i");
  EXPECT_EQ(a.atomics, 4);  // two REDG (result unused), ATOMG.E.CAS, ATOMS.POPC.INC
  EXPECT_EQ(a.barriers, 2);

  InstructionMix s = MixOf(kMix, "_Z12warp_softsumPKfPfi");
  EXPECT_EQ(s.shuffles, 5);
  EXPECT_EQ(s.mufu, 1);  // MUFU.EX2 from __expf
  EXPECT_EQ(s.int_div_sequences, 0);
}

TEST(ClassifySass, AsyncCopies) {
  EXPECT_EQ(MixOf(kMix, "_Z14cp_async_stagePKfPf").async_copies, 1);  // LDGSTS.E
  EXPECT_EQ(MixOf(kMix, "_Z9bulk_copyPKfPf").async_copies, 1);        // UBLKCP.S.G
  InstructionMix tma = MixOf(kMix, "_Z8tma_tile14CUtensorMap_stii");
  EXPECT_EQ(tma.async_copies, 2);  // UTMALDG.2D, UTMASTG.2D
  EXPECT_EQ(tma.barriers, 1);
}

TEST(ClassifySass, IntegerDivisionSequences) {
  EXPECT_EQ(MixOf(kMix, "_Z10int_divmodPKiPiS1_iii").int_div_sequences, 2);  // a / d and a % m
  EXPECT_EQ(MixOf(kMix, "_Z8uint_divPKjS0_Pji").int_div_sequences, 1);
  EXPECT_EQ(MixOf(kMix, "_Z9const_divPKiPii").int_div_sequences, 0);  // multiply-high only

  EXPECT_EQ(MixOf(kDiv, "_Z4sdivPKiS0_Pi").int_div_sequences, 1);
  EXPECT_EQ(MixOf(kDiv, "_Z4smodPKiS0_Pi").int_div_sequences, 1);
  EXPECT_EQ(MixOf(kDiv, "_Z4udivPKjS0_Pj").int_div_sequences, 1);
  EXPECT_EQ(MixOf(kDiv, "_Z4umodPKjS0_Pj").int_div_sequences, 1);
  // nvcc 13 computes a / b and a % b on the same operands with two sequences.
  EXPECT_EQ(MixOf(kDiv, "_Z7sdivmodPKiS0_PiS1_").int_div_sequences, 2);
  EXPECT_EQ(MixOf(kDiv, "_Z3twoPKiS0_Piii").int_div_sequences, 2);  // interleaved
  // 64-bit: the 32-bit fast path and the 64-bit subroutine.
  EXPECT_EQ(MixOf(kDiv, "_Z3s64PKxS0_Px").int_div_sequences, 2);
  EXPECT_EQ(MixOf(kDiv, "_Z6u64modPKyS0_Py").int_div_sequences, 2);
  // MUFU.RCP without an .RP conversion is float work, not integer division.
  InstructionMix fdiv = MixOf(kDiv, "_Z4fdivPKfS0_Pf");
  EXPECT_EQ(fdiv.int_div_sequences, 0);
  EXPECT_EQ(fdiv.mufu, 3);
  EXPECT_EQ(MixOf(kDiv, "_Z3rcpPKfPf").int_div_sequences, 0);
  EXPECT_EQ(MixOf(kDiv, "_Z8constdivPKiPi").int_div_sequences, 0);
}

SassInstruction Ins(uint32_t offset, const std::string& text) {
  SassInstruction ins;
  ins.offset = offset;
  ins.text = text;
  std::string first = text.substr(0, text.find(' '));
  if (first.front() == '@') {
    ins.predicate = first;
    std::string rest = text.substr(first.size() + 1);
    ins.opcode = rest.substr(0, rest.find(' '));
  } else {
    ins.opcode = first;
  }
  return ins;
}

TEST(ClassifySass, OpcodeVariantsOfOtherArchitectures) {
  SassFunction f;
  f.instructions = {
      Ins(0x00, "LDG.E.ENL2.256 R4, desc[UR4][R2.64]"),    // Blackwell 256-bit load
      Ins(0x10, "LDG.E.LTC128B.64 R8, desc[UR4][R2.64]"),  // the L2 hint is not a width
      Ins(0x20, "LDG.E.S16 R9, desc[UR4][R2.64]"),
      Ins(0x30, "FFMA2 R10, R4, R6, R8"),
      Ins(0x40, "FMUL2 R12, R4, R6"),
      Ins(0x50, "FADD.FTZ R13, R4, R6"),
      Ins(0x60, "DMUL R14, R4, R6"),
      Ins(0x70, "I2F.F64.S64 R16, R4"),
      Ins(0x80, "F2I.F64.TRUNC R18, R16"),
      Ins(0x90, "LDSM.16.M88.4 R20, [R1]"),
      Ins(0xa0, "STSM.16.M88.4 [R1], R20"),
      Ins(0xb0, "HMMA.1688.F32.TF32 R24, R20, R22, R24"),
      Ins(0xc0, "IMMA.16832.S8.S8 R24, R20, R22, R24"),
      Ins(0xd0, "@P0 BRA 0x40"),
      Ins(0xe0, "BRX R2 -0xe0"),
      Ins(0xf0, "RED.E.ADD.STRONG.GPU [R2.64], R4"),
      Ins(0x100, "EXIT"),
      Ins(0x110, "BRA 0x110"),
      Ins(0x120, "NOP"),
  };
  InstructionMix m = ClassifySass(f);
  EXPECT_EQ(m.global_loads_128, 1);
  EXPECT_EQ(m.global_loads_64, 1);
  EXPECT_EQ(m.global_loads_32, 1);
  EXPECT_EQ(m.ffma, 1);
  EXPECT_EQ(m.fmul, 1);
  EXPECT_EQ(m.fadd, 1);
  EXPECT_EQ(m.fp64, 3);
  EXPECT_EQ(m.shared_loads, 1);
  EXPECT_EQ(m.shared_stores, 1);
  EXPECT_EQ(m.hmma, 1);
  EXPECT_EQ(m.imma, 1);
  EXPECT_EQ(m.branches, 2);
  EXPECT_EQ(m.atomics, 1);
  EXPECT_EQ(m.total, 17);
}

TEST(ClassifySass, DivisionNeedsTheConversionToFeedTheReciprocal) {
  SassFunction f;
  f.instructions = {Ins(0x00, "I2F.U32.RP R0, R5"), Ins(0x10, "MUFU.RCP R3, R7")};  // other register
  EXPECT_EQ(ClassifySass(f).int_div_sequences, 0);

  f.instructions = {Ins(0x00, "I2F.U32.RP R0, R5")};
  for (uint32_t i = 1; i <= 20; ++i) f.instructions.push_back(Ins(i * 16, "IADD3 R9, R9, 0x1, RZ"));
  f.instructions.push_back(Ins(21 * 16, "MUFU.RCP R0, R0"));  // too far away
  EXPECT_EQ(ClassifySass(f).int_div_sequences, 0);

  f.instructions = {Ins(0x00, "I2F.RP R8, R10"), Ins(0x10, "IABS R4, R9"), Ins(0x20, "MUFU.RCP R8, R8"),
                    Ins(0x30, "MUFU.RCP R8, R8")};  // one conversion, one sequence
  EXPECT_EQ(ClassifySass(f).int_div_sequences, 1);
}

TEST(SmLimits, DocumentedTable) {
  auto h = SmLimitsFor("sm_90a");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->arch, "sm_90a");
  EXPECT_EQ(h->max_warps_per_sm, 64);
  EXPECT_EQ(h->max_blocks_per_sm, 32);
  EXPECT_EQ(h->shared_per_sm, 233472);
  EXPECT_EQ(h->shared_per_block_optin, 232448);

  auto a = SmLimitsFor("sm_80");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->shared_per_sm, 167936);
  EXPECT_EQ(a->shared_per_block_optin, 166912);

  auto g = SmLimitsFor("sm_86");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->max_threads_per_sm, 1536);
  EXPECT_EQ(g->max_warps_per_sm, 48);
  EXPECT_EQ(g->max_blocks_per_sm, 16);
  EXPECT_EQ(g->shared_per_sm, 102400);
  EXPECT_EQ(SmLimitsFor("sm_89")->max_blocks_per_sm, 24);
  EXPECT_EQ(SmLimitsFor("sm_100a")->shared_per_sm, 233472);
  EXPECT_EQ(SmLimitsFor("sm_90")->shared_reserved_per_block, 1024);

  auto bad = SmLimitsFor("sm_75");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(bad.status().message().find("sm_75"), std::string::npos);
  EXPECT_FALSE(SmLimitsFor("").ok());
}

SmLimits Sm90() { return *SmLimitsFor("sm_90a"); }

TEST(Occupancy, FullOccupancyNamesTheHardwareLimit) {
  Occupancy o = ComputeOccupancy(Sm90(), 256, 32, 0);
  EXPECT_EQ(o.blocks_per_sm, 8);
  EXPECT_EQ(o.active_warps, 64);
  EXPECT_DOUBLE_EQ(o.fraction, 1.0);
  EXPECT_EQ(o.blocks_by_warps, 8);
  EXPECT_EQ(o.blocks_by_registers, 8);  // 32 regs = 1024 per warp: 16 warps per partition
  EXPECT_EQ(o.limiter, "warps");        // a tie with registers names the hardware limit
}

TEST(Occupancy, BlockLimitForSmallBlocks) {
  Occupancy o = ComputeOccupancy(Sm90(), 32, 16, 0);
  EXPECT_EQ(o.blocks_per_sm, 32);
  EXPECT_EQ(o.active_warps, 32);
  EXPECT_DOUBLE_EQ(o.fraction, 0.5);
  EXPECT_EQ(o.limiter, "blocks");
}

TEST(Occupancy, RegistersLimit) {
  // 128 regs: 4096 per warp, 4 warps per 16384-register partition, 16 warps: 2 blocks of 8.
  Occupancy o = ComputeOccupancy(Sm90(), 256, 128, 0);
  EXPECT_EQ(o.blocks_per_sm, 2);
  EXPECT_EQ(o.active_warps, 16);
  EXPECT_DOUBLE_EQ(o.fraction, 0.25);
  EXPECT_EQ(o.limiter, "registers");

  // 1024 threads at 64 regs: 2048 per warp, 32 warps fit, one block of 32 warps.
  o = ComputeOccupancy(Sm90(), 1024, 64, 0);
  EXPECT_EQ(o.blocks_per_sm, 1);
  EXPECT_EQ(o.blocks_by_warps, 2);
  EXPECT_DOUBLE_EQ(o.fraction, 0.5);
  EXPECT_EQ(o.limiter, "registers");
}

TEST(Occupancy, RegistersRoundUpToTheAllocationUnit) {
  // 33 regs × 32 = 1056, allocated as 1280 per warp: 12 warps per partition, 48 warps, 6 blocks.
  // Without the rounding it would be 65536 / (1056 × 8) = 7 blocks.
  Occupancy o = ComputeOccupancy(Sm90(), 256, 33, 0);
  EXPECT_EQ(o.blocks_per_sm, 6);
  EXPECT_DOUBLE_EQ(o.fraction, 0.75);
  EXPECT_EQ(o.limiter, "registers");

  // Blocks whose warps are not a multiple of 4, and threads not a multiple of 32: 100 threads =
  // 4 warps; 80 regs = 2560 per warp, 6 per partition, 24 warps, 6 blocks.
  o = ComputeOccupancy(Sm90(), 100, 80, 0);
  EXPECT_EQ(o.blocks_per_sm, 6);
  EXPECT_EQ(o.active_warps, 24);
  EXPECT_EQ(o.limiter, "registers");
}

TEST(Occupancy, SharedMemoryWithReserveAndRounding) {
  // 64 KiB + 1 KiB reserve = 66560 bytes per block: 233472 / 66560 = 3 blocks.
  Occupancy o = ComputeOccupancy(Sm90(), 256, 32, 64 * 1024);
  EXPECT_EQ(o.blocks_per_sm, 3);
  EXPECT_EQ(o.active_warps, 24);
  EXPECT_DOUBLE_EQ(o.fraction, 24.0 / 64);
  EXPECT_EQ(o.limiter, "shared_memory");

  // The reserve counts: 45 KiB blocks take 47104 bytes each, 4 blocks (5 without the reserve).
  o = ComputeOccupancy(Sm90(), 128, 32, 45 * 1024);
  EXPECT_EQ(o.blocks_per_sm, 4);
  EXPECT_EQ(o.limiter, "shared_memory");
  // So does the 128-byte unit: 45670 + 1024 = 46694 bytes is allocated as 46720, 4 blocks
  // (233472 / 46694 would allow 5).
  EXPECT_EQ(ComputeOccupancy(Sm90(), 128, 32, 45670).blocks_per_sm, 4);
  EXPECT_EQ(ComputeOccupancy(Sm90(), 128, 32, 45670 - 128).blocks_per_sm, 5);
  // Exactly the opt-in maximum still fits one block.
  o = ComputeOccupancy(Sm90(), 128, 32, 232448);
  EXPECT_EQ(o.blocks_per_sm, 1);
  EXPECT_EQ(o.limiter, "shared_memory");
}

TEST(Occupancy, OtherArchitectures) {
  // sm_86: 48 warps, 16 blocks, 100 KiB.
  SmLimits ga = *SmLimitsFor("sm_86");
  Occupancy o = ComputeOccupancy(ga, 256, 32, 0);
  EXPECT_EQ(o.blocks_per_sm, 6);
  EXPECT_DOUBLE_EQ(o.fraction, 1.0);
  EXPECT_EQ(o.limiter, "warps");
  o = ComputeOccupancy(ga, 256, 32, 48 * 1024);  // 50176 per block: 2 blocks
  EXPECT_EQ(o.blocks_per_sm, 2);
  EXPECT_EQ(o.limiter, "shared_memory");
  // sm_89 allows 24 blocks of one warp; sm_86 16.
  EXPECT_EQ(ComputeOccupancy(*SmLimitsFor("sm_89"), 32, 16, 0).blocks_per_sm, 24);
  EXPECT_EQ(ComputeOccupancy(ga, 32, 16, 0).blocks_per_sm, 16);
  // sm_80: 164 KiB per SM: 80 KiB blocks fit twice (82944 per block with the reserve).
  EXPECT_EQ(ComputeOccupancy(*SmLimitsFor("sm_80"), 128, 32, 80 * 1024).blocks_per_sm, 2);
}

TEST(Occupancy, ExceedingALimitMeansNoBlocks) {
  // 1024 threads × 128 regs needs 131072 registers.
  Occupancy o = ComputeOccupancy(Sm90(), 1024, 128, 0);
  EXPECT_EQ(o.blocks_per_sm, 0);
  EXPECT_EQ(o.active_warps, 0);
  EXPECT_EQ(o.fraction, 0);
  EXPECT_EQ(o.limiter, "registers");

  EXPECT_EQ(ComputeOccupancy(Sm90(), 64, 256, 0).limiter, "registers");  // over 255 per thread

  o = ComputeOccupancy(Sm90(), 128, 32, 232448 + 1);
  EXPECT_EQ(o.blocks_per_sm, 0);
  EXPECT_EQ(o.limiter, "shared_memory");

  o = ComputeOccupancy(Sm90(), 2048, 16, 0);
  EXPECT_EQ(o.blocks_per_sm, 0);
  EXPECT_EQ(o.limiter, "block_size");
  EXPECT_EQ(ComputeOccupancy(Sm90(), 0, 16, 0).limiter, "block_size");
}

TEST(StaticProfiles, JoinsPtxasResourcesWithSass) {
  CompileOutput out;
  out.ok = true;
  out.resources = ParsePtxasReport(Fixture("profile/ptxas_mix_kernels_sm90a.txt"));
  out.sass = Fixture("profile/sass_mix_kernels_sm90a.txt");
  auto profiles = StaticProfiles(out);
  ASSERT_EQ(profiles.size(), out.resources.size());
  ASSERT_EQ(profiles.size(), 15u);
  for (const auto& p : profiles) EXPECT_TRUE(p.have_sass) << p.resources.mangled;

  auto spill = std::find_if(profiles.begin(), profiles.end(),
                            [](const KernelStaticProfile& p) { return p.resources.mangled == "_Z5spillPKfPfi"; });
  ASSERT_NE(spill, profiles.end());
  EXPECT_EQ(spill->resources.registers, 32);
  EXPECT_EQ(spill->resources.spill_stores, 252);
  EXPECT_EQ(spill->mix.local_loads, 47);
  EXPECT_EQ(spill->mix.local_stores, 56);
}

TEST(StaticProfiles, MatchesTheTargetAndToleratesMissingSass) {
  CompileOutput out;
  out.resources = ParsePtxasReport(Fixture("toolchain/ptxas_sm80_sm90a.txt"));
  out.sass = Fixture("toolchain/sass_sm90a.txt");  // SASS of the sm_90a pass only
  auto profiles = StaticProfiles(out);
  ASSERT_EQ(profiles.size(), out.resources.size());
  int with_sass = 0;
  for (const auto& p : profiles) {
    EXPECT_EQ(p.have_sass, p.resources.arch == "sm_90a") << p.resources.mangled << " " << p.resources.arch;
    with_sass += p.have_sass;
  }
  EXPECT_EQ(with_sass, 3);

  out.sass.clear();
  for (const auto& p : StaticProfiles(out)) {
    EXPECT_FALSE(p.have_sass);
    EXPECT_EQ(p.mix.total, 0);
  }
}

// Replays store each kernel's mix as JSON (a sweep's space file); it reads back field for field,
// and a kernel without SASS adopts the mix stored under its name.
TEST(StaticProfiles, AStoredMixRoundTripsAndFillsKernelsWithoutSass) {
  CompileOutput out;
  out.resources = ParsePtxasReport(Fixture("profile/ptxas_mix_kernels_sm90a.txt"));
  out.sass = Fixture("profile/sass_mix_kernels_sm90a.txt");
  auto live = StaticProfiles(out);
  ASSERT_GE(live.size(), 2u);
  nlohmann::json stored = nlohmann::json::array();
  for (const auto& p : live) {
    nlohmann::json m = ToJson(p.mix);
    EXPECT_EQ(ToJson(InstructionMixFromJson(m)), m) << p.resources.name;
    stored.push_back({{"kernel", p.resources.name}, {"mix", m}});
  }
  stored.erase(stored.begin());  // the first kernel's mix was not stored

  out.sass.clear();
  auto replayed = StaticProfiles(out);
  AdoptStoredMixes(stored, &replayed);
  ASSERT_EQ(replayed.size(), live.size());
  EXPECT_FALSE(replayed[0].have_sass) << "nothing stored for it";
  for (size_t i = 1; i < live.size(); ++i) {
    EXPECT_TRUE(replayed[i].have_sass) << live[i].resources.name;
    EXPECT_EQ(ToJson(replayed[i].mix), ToJson(live[i].mix)) << live[i].resources.name;
  }
  EXPECT_EQ(InstructionMixFromJson(nlohmann::json{{"ldg128", 4}}).global_loads_128, 4);
  EXPECT_EQ(InstructionMixFromJson(nlohmann::json::array()).total, 0);
}

}  // namespace
}  // namespace kpilot
