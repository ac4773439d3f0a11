// The pure parsers on real tool output saved under tests/fixtures/toolchain/ (see its README for
// the tool versions that produced each file).
#include <gtest/gtest.h>

#include <algorithm>

#include "core/fs.h"
#include "toolchain/toolchain.h"

namespace kpilot {
namespace {

std::string Fixture(const std::string& name) {
  auto text = ReadFile(std::string(KPILOT_FIXTURES_DIR) + "/toolchain/" + name);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? *text : std::string();
}

const KernelResources* FindKernel(const std::vector<KernelResources>& ks, const std::string& mangled,
                                  const std::string& arch) {
  auto it = std::find_if(ks.begin(), ks.end(),
                         [&](const KernelResources& k) { return k.mangled == mangled && k.arch == arch; });
  return it == ks.end() ? nullptr : &*it;
}

TEST(PtxasReport, Sm90aEntriesWithSharedMemoryBarriersAndSpills) {
  auto ks = ParsePtxasReport(Fixture("ptxas_sm90a.txt"));
  ASSERT_EQ(ks.size(), 3u);  // the non-entry device function twice() is not a kernel

  const auto* spill = FindKernel(ks, "_ZN4demo5spillILi40EEEvPfi", "sm_90a");
  ASSERT_NE(spill, nullptr);
  EXPECT_EQ(spill->name, "void demo::spill<40>(float*, int)");
  EXPECT_EQ(spill->registers, 32);
  EXPECT_EQ(spill->stack_bytes, 760);
  EXPECT_EQ(spill->spill_stores, 760);
  EXPECT_EQ(spill->spill_loads, 844);
  EXPECT_EQ(spill->barriers, 0);
  EXPECT_EQ(spill->shared_bytes, 0);

  const auto* reduce = FindKernel(ks, "_Z11reduce_smemPKfPfi", "sm_90a");
  ASSERT_NE(reduce, nullptr);
  EXPECT_EQ(reduce->name, "reduce_smem(float const*, float*, int)");
  EXPECT_EQ(reduce->registers, 10);
  EXPECT_EQ(reduce->shared_bytes, 1024);
  EXPECT_EQ(reduce->barriers, 1);
  EXPECT_EQ(reduce->spill_stores, 0);
  EXPECT_EQ(reduce->stack_bytes, 0);

  const auto* copy4 = FindKernel(ks, "_Z5copy4PK6float4PS_i", "sm_90a");
  ASSERT_NE(copy4, nullptr);
  EXPECT_EQ(copy4->name, "copy4(float4 const*, float4*, int)");
  EXPECT_EQ(copy4->registers, 12);
  EXPECT_EQ(copy4->constant_bytes, 0);  // nvcc 13 prints no cmem[0] for sm_90a
}

TEST(PtxasReport, TwoTargetsKeepOneEntryPerArchAndReadCmem) {
  auto ks = ParsePtxasReport(Fixture("ptxas_sm80_sm90a.txt"));
  ASSERT_EQ(ks.size(), 6u);
  const auto* reduce80 = FindKernel(ks, "_Z11reduce_smemPKfPfi", "sm_80");
  ASSERT_NE(reduce80, nullptr);
  EXPECT_EQ(reduce80->shared_bytes, 1024);
  EXPECT_EQ(reduce80->constant_bytes, 372);
  EXPECT_EQ(reduce80->barriers, 1);
  const auto* spill80 = FindKernel(ks, "_ZN4demo5spillILi40EEEvPfi", "sm_80");
  const auto* spill90 = FindKernel(ks, "_ZN4demo5spillILi40EEEvPfi", "sm_90a");
  ASSERT_NE(spill80, nullptr);
  ASSERT_NE(spill90, nullptr);
  EXPECT_EQ(spill80->stack_bytes, 752);
  EXPECT_EQ(spill80->spill_loads, 800);
  EXPECT_EQ(spill80->constant_bytes, 364);
  EXPECT_EQ(spill90->stack_bytes, 760);
  EXPECT_EQ(spill90->spill_loads, 844);
  const auto* copy80 = FindKernel(ks, "_Z5copy4PK6float4PS_i", "sm_80");
  ASSERT_NE(copy80, nullptr);
  EXPECT_EQ(copy80->registers, 10);
}

TEST(PtxasReport, OlderFormatWithPropertiesBeforeTheEntry) {
  // CUDA 11/12 style: "Used N registers, M bytes cmem[0]" with no barrier count, and a device
  // function's properties interleaved.
  const std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Function properties for _Z6helperf\n"
      "    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Compiling entry function '_Z6kernelPf' for 'sm_80'\n"
      "ptxas info    : Function properties for _Z6kernelPf\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 8 registers, 352 bytes cmem[0]\n"
      "ptxas info    : Compiling entry function '_Z5otherPf' for 'sm_80'\n"
      "ptxas info    : Function properties for _Z5otherPf\n"
      "    16 bytes stack frame, 12 bytes spill stores, 20 bytes spill loads\n"
      "ptxas info    : Used 255 registers, used 1 barriers, 8192 bytes smem, 360 bytes cmem[0], 4 bytes cmem[2]\n";
  auto ks = ParsePtxasReport(log);
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_EQ(ks[0].name, "kernel(float*)");
  EXPECT_EQ(ks[0].registers, 8);
  EXPECT_EQ(ks[0].constant_bytes, 352);
  EXPECT_EQ(ks[0].stack_bytes, 0);
  EXPECT_EQ(ks[1].registers, 255);
  EXPECT_EQ(ks[1].shared_bytes, 8192);
  EXPECT_EQ(ks[1].constant_bytes, 360);
  EXPECT_EQ(ks[1].barriers, 1);
  EXPECT_EQ(ks[1].spill_stores, 12);
  EXPECT_EQ(ks[1].spill_loads, 20);
  EXPECT_EQ(ks[1].stack_bytes, 16);
}

TEST(PtxasReport, NoReportGivesNoKernels) {
  EXPECT_TRUE(ParsePtxasReport("").empty());
  EXPECT_TRUE(ParsePtxasReport(Fixture("nvcc_error.txt")).empty());
}

TEST(FirstCompileError, NvccFrontEnd) {
  EXPECT_EQ(FirstCompileError(Fixture("nvcc_error.txt")), "bad.cu:3: identifier \"undefined_thing\" is undefined");
}

// A CuTe static assertion deep in the library: the header's path from its include root, the
// innermost instantiation's function and the candidate's own line that led there; none of the
// other frames' kilobytes of template arguments.
TEST(FirstCompileError, CuteTemplateErrorKeepsItsInstantiationContext) {
  EXPECT_EQ(FirstCompileError(Fixture("nvcc_cute_error.txt")),
            "cute/layout.hpp:1572: static assertion failed with \"logical_divide: Too many modes in tiler.\" "
            "[in auto cute::logical_divide(const cute::Layout<LShape, LStride> &, const Tiler &), instantiated "
            "from bad.cu:7]");
}

// The evidence a compile error carries: the log from its first error on, not its tail (for CuTe,
// the last of many template backtraces).
TEST(CompileLogExcerpt, StartsAtTheFirstErrorAndEndsAtALineEnd) {
  const std::string cute = Fixture("nvcc_cute_error.txt");
  std::string excerpt = CompileLogExcerpt(cute, 2000);
  EXPECT_EQ(excerpt.rfind("/home/user/kpilot/.venv/lib/python3.11/site-packages/cutlass_library/source/include/cute/"
                          "layout.hpp(1572): error: static assertion failed",
                          0),
            0u)
      << excerpt.substr(0, 200);
  EXPECT_LE(excerpt.size(), 2000u);
  EXPECT_EQ(excerpt.back(), '\n');
  EXPECT_NE(excerpt.find("detected during:"), std::string::npos);
  EXPECT_EQ(excerpt.find("no instance of overloaded function"), std::string::npos) << "the second error is past 2000";

  const std::string with_warning =
      "k.cu(4): warning #177-D: variable \"x\" was declared but never referenced\n" + Fixture("nvcc_error.txt");
  EXPECT_EQ(CompileLogExcerpt(with_warning, 2000).rfind("bad.cu(3): error: identifier", 0), 0u);
  EXPECT_EQ(CompileLogExcerpt(Fixture("gxx_error.txt"), 2000).rfind("bad.cpp:3:10: error: ", 0), 0u);
  EXPECT_EQ(CompileLogExcerpt("no problem here\nat all\n", 8), Tail("no problem here\nat all\n", 8));
}

TEST(FirstCompileError, Gxx) {
  EXPECT_EQ(FirstCompileError(Fixture("gxx_error.txt")),
            "bad.cpp:3: \xE2\x80\x98undefined_thing\xE2\x80\x99 was not declared in this scope");
}

TEST(FirstCompileError, LinkerUndefinedReference) {
  EXPECT_EQ(FirstCompileError(Fixture("ld_error.txt")), "link.cpp: undefined reference to `g()'");
  EXPECT_EQ(FirstCompileError("k.cpp:12: undefined reference to `foo'\n"), "k.cpp:12: undefined reference to `foo'");
}

TEST(FirstCompileError, PtxasResourceError) {
  EXPECT_EQ(FirstCompileError(Fixture("ptxas_error.txt")),
            "ptxas: Entry function '_Z7too_bigPf' uses too much shared data (0x40000 bytes, 0x38c00 max)");
}

TEST(FirstCompileError, SkipsWarningsAndNotes) {
  const std::string log =
      "k.cu(4): warning #177-D: variable \"x\" was declared but never referenced\n"
      "k.cpp: In function 'int f()':\n"
      "k.cpp:7:3: warning: unused variable 'y' [-Wunused-variable]\n"
      "k.cu(9): error #20: identifier \"z\" is undefined\n"
      "k.cpp:12:1: error: later\n";
  EXPECT_EQ(FirstCompileError(log), "k.cu:9: identifier \"z\" is undefined");
  EXPECT_EQ(FirstCompileError("k.cpp:1:10: fatal error: missing.h: No such file or directory\n"),
            "k.cpp:1: missing.h: No such file or directory");
  EXPECT_EQ(FirstCompileError("k.cu(1): catastrophic error: cannot open source file \"m.h\"\n"),
            "k.cu:1: cannot open source file \"m.h\"");
  EXPECT_EQ(FirstCompileError("nvcc fatal   : Unsupported gpu architecture 'compute_99'\n"),
            "nvcc: Unsupported gpu architecture 'compute_99'");
  EXPECT_EQ(FirstCompileError("all fine\n"), "");
}

TEST(Versions, ParseRealBanners) {
  EXPECT_EQ(ParseNvccVersion(Fixture("nvcc_version.txt")), "nvcc 13.0.88");
  EXPECT_EQ(ParseGxxVersion(Fixture("gxx_version.txt")), "g++ 12.2.0");
  EXPECT_EQ(ParseNvccVersion("garbage"), "");
  EXPECT_EQ(ParseGxxVersion(""), "");
}

TEST(Sass, NarrowTensorCoreOpsOnRealSass) {
  // f16, tf32, f64 and s8 WMMA tiles (tensor_cores.cu): f16 and s8 are narrow, tf32 and f64 not.
  auto ops = NarrowTensorCoreOps(ParseSass(Fixture("sass_tensor_cores_sm90a.txt")));
  EXPECT_EQ(ops, (std::vector<std::string>{"IMMA.16816.S8.S8 in _Z7i8_tilePKaS0_Pi",
                                           "HMMA.16816.F32 in _Z8f16_tilePK6__halfS1_Pf"}));
  // Hopper's warpgroup MMA on bf16, and the sm_80 form, from the profiler's fixture.
  auto text = ReadFile(std::string(KPILOT_FIXTURES_DIR) + "/profile/sass_mix_kernels_sm90a.txt");
  ASSERT_TRUE(text.ok());
  auto mix = NarrowTensorCoreOps(ParseSass(*text));
  ASSERT_EQ(mix.size(), 2u);
  EXPECT_EQ(mix[0].rfind("HGMMA.64x8x16.F32.BF16 in ", 0), 0u) << mix[0];
  EXPECT_EQ(mix[1].rfind("HMMA.16816.F32.BF16 in ", 0), 0u) << mix[1];
  // CUDA-core code has none.
  EXPECT_TRUE(NarrowTensorCoreOps(ParseSass(Fixture("sass_sm90a.txt"))).empty());
}

TEST(Sass, SplitsFunctionsAndReadsInstructions) {
  auto fns = ParseSass(Fixture("sass_sm90a.txt"));
  ASSERT_EQ(fns.size(), 3u);
  EXPECT_EQ(fns[0].name, "_ZN4demo5spillILi40EEEvPfi");
  EXPECT_EQ(fns[1].name, "_Z5copy4PK6float4PS_i");
  EXPECT_EQ(fns[2].name, "_Z11reduce_smemPKfPfi");
  for (const auto& f : fns) {
    EXPECT_EQ(f.arch, "sm_90a");
    ASSERT_FALSE(f.instructions.empty());
    for (size_t i = 0; i < f.instructions.size(); ++i)
      ASSERT_EQ(f.instructions[i].offset, 16u * i) << f.name << " #" << i;  // one per 128-bit word
  }

  const auto& copy4 = fns[1].instructions;
  ASSERT_EQ(copy4.size(), 32u);
  EXPECT_EQ(copy4[0].opcode, "LDC");
  EXPECT_EQ(copy4[0].text, "LDC R1, c[0x0][0x28]");
  EXPECT_EQ(copy4[0].predicate, "");
  EXPECT_EQ(copy4[7].opcode, "EXIT");
  EXPECT_EQ(copy4[7].predicate, "@P0");
  EXPECT_EQ(copy4[7].text, "@P0 EXIT");
  auto has = [](const std::vector<SassInstruction>& v, const std::string& op) {
    return std::any_of(v.begin(), v.end(), [&](const SassInstruction& i) { return i.opcode == op; });
  };
  EXPECT_TRUE(has(copy4, "LDG.E.128.CONSTANT"));
  EXPECT_TRUE(has(copy4, "STG.E.128"));
  EXPECT_EQ(copy4.back().opcode, "NOP");

  const auto& reduce = fns[2].instructions;
  EXPECT_TRUE(has(reduce, "BAR.SYNC.DEFER_BLOCKING"));
  auto negated =
      std::find_if(reduce.begin(), reduce.end(), [](const SassInstruction& i) { return i.predicate == "@!P0"; });
  ASSERT_NE(negated, reduce.end());
  EXPECT_EQ(negated->opcode, "LDC.64");

  // Spills show up as local-memory traffic.
  auto has_prefix = [](const std::vector<SassInstruction>& v, const std::string& op) {
    return std::any_of(v.begin(), v.end(), [&](const SassInstruction& i) { return i.opcode.rfind(op, 0) == 0; });
  };
  EXPECT_TRUE(has_prefix(fns[0].instructions, "STL"));
  EXPECT_TRUE(has_prefix(fns[0].instructions, "LDL"));
  EXPECT_FALSE(has_prefix(copy4, "STL"));
  for (const auto& f : fns)
    for (const auto& ins : f.instructions) {
      ASSERT_EQ(ins.text.find("/*"), std::string::npos) << ins.text;
      ASSERT_NE(ins.text.back(), ';') << ins.text;
    }
}

TEST(Sass, EmptyAndForeignInput) {
  EXPECT_TRUE(ParseSass("").empty());
  EXPECT_TRUE(ParseSass("cuobjdump info    : File 'x.so' does not contain device code\n").empty());
}

}  // namespace
}  // namespace kpilot
