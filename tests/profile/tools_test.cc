// The built-in micro-profiling tools: each fires on a context built to trigger it (with its id and
// the numbers in its guidance), stays silent on a healthy context and on one missing its inputs;
// selection by class, the metric union and the ranking.
#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include <gtest/gtest.h>

#include "profile/tool.h"
#include "profile/tools/tools.h"

namespace kpilot {
namespace {

const std::vector<std::unique_ptr<Tool>>& All() {
  static const auto* tools = new std::vector<std::unique_ptr<Tool>>(BuiltinTools());
  return *tools;
}

const Tool& ById(const std::string& id) {
  for (const auto& t : All()) {
    if (t->id() == id) return *t;
  }
  ADD_FAILURE() << "no built-in tool " << id;
  return *All().front();
}

// Stall cycles per issue by reason; the rest of the 17 reasons at 0.
ProfileContext WithStalls(const std::map<std::string, double>& cycles) {
  ProfileContext ctx;
  for (auto reason : StallReasons()) ctx.metrics[StallMetric(reason)] = 0;
  for (const auto& [reason, v] : cycles) ctx.metrics[StallMetric(reason)] = v;
  return ctx;
}

KernelStaticProfile StaticWith(const std::function<void(KernelStaticProfile&)>& edit) {
  KernelStaticProfile p;
  p.have_sass = true;
  p.resources.arch = "sm_90a";
  p.resources.registers = 40;
  p.mix.total = 300;
  p.mix.global_loads_32 = 8;
  p.mix.global_loads_128 = 4;
  p.mix.ffma = 64;
  edit(p);
  return p;
}

struct Case {
  std::string tool;
  std::string name;                         // what the context shows
  std::function<ProfileContext()> firing;   // must fire
  std::vector<std::string> in_guidance;     // numbers (and words) the guidance must quote
  std::function<ProfileContext()> healthy;  // must stay silent
};

std::vector<Case> Cases() {
  return {
      {"uncoalesced-global-access",
       "13 sectors per request",
       [] {
         ProfileContext c;
         c.metrics = {{metric::kGlobalLoadSectors, 1300}, {metric::kGlobalLoadRequests, 100}};
         return c;
       },
       {"13 sectors per request", "ideal 4", "3.25×", "threadIdx.x"},
       [] {
         ProfileContext c;
         c.metrics = {{metric::kGlobalLoadSectors, 410}, {metric::kGlobalLoadRequests, 100}};
         return c;
       }},
      {"low-cache-hit-rate",
       "L1 12%, 55% long scoreboard",
       [] {
         auto c = WithStalls({{"long_scoreboard", 5.5}, {"wait", 2.5}, {"barrier", 2}});
         c.metrics[metric::kL1HitPct] = 12;
         c.metrics[metric::kL2HitPct] = 41;
         return c;
       },
       {"12%", "55%", "L2 hits 41%", "shared memory"},
       [] {
         auto c = WithStalls({{"long_scoreboard", 5.5}, {"wait", 2.5}, {"barrier", 2}});
         c.metrics[metric::kL1HitPct] = 80;
         return c;
       }},
      {"dram-near-peak",
       "DRAM 91.5%",
       [] {
         ProfileContext c;
         c.metrics = {
             {metric::kDramThroughputPct, 91.5}, {metric::kDramBytesRead, 268e6}, {metric::kDramBytesWrite, 134e6}};
         return c;
       },
       {"91.5%", "268 MB read", "134 MB written", "Fuse"},
       [] {
         ProfileContext c;
         c.metrics = {{metric::kDramThroughputPct, 62}};
         return c;
       }},
      {"scalar-global-loads",
       "23 LDG.32 of 24, memory-bound",
       [] {
         ProfileContext c;
         c.roofline.result = Bottleneck::kMemory;
         c.static_profile = StaticWith([](KernelStaticProfile& p) {
           p.mix.global_loads_32 = 23;
           p.mix.global_loads_64 = 1;
           p.mix.global_loads_128 = 0;
         });
         return c;
       },
       {"23 of the 24", "none is 128-bit", "memory-bound", "float4"},
       [] {
         ProfileContext c;
         c.roofline.result = Bottleneck::kMemory;
         c.static_profile = StaticWith([](KernelStaticProfile&) {});  // has 128-bit loads
         return c;
       }},
      {"shared-bank-conflicts",
       "30% replays",
       [] {
         ProfileContext c;
         c.metrics = {{metric::kSharedLoadConflicts, 300000},
                      {metric::kSharedLoadWavefronts, 1000000},
                      {metric::kSharedStoreConflicts, 0},
                      {metric::kSharedStoreWavefronts, 0}};
         return c;
       },
       {"30%", "300000 on loads", "0 on stores", "1.43 wavefronts per access", "TILE + 1"},
       [] {
         ProfileContext c;
         c.metrics = {{metric::kSharedLoadConflicts, 1000}, {metric::kSharedLoadWavefronts, 1000000}};
         return c;
       }},
      {"register-spills",
       "ptxas spills, 32% long scoreboard",
       [] {
         auto c = WithStalls({{"long_scoreboard", 3.2}, {"wait", 6.8}});
         c.metrics[metric::kSmThroughputPct] = 31;
         c.metrics[metric::kDramThroughputPct] = 22;
         c.static_profile = StaticWith([](KernelStaticProfile& p) {
           p.resources.registers = 255;
           p.resources.spill_stores = 128;
           p.resources.spill_loads = 96;
           p.mix.local_loads = 12;
           p.mix.local_stores = 8;
         });
         return c;
       },
       {"128 bytes (stores)", "96 bytes (loads)", "255 registers", "12 LDL", "8 STL", "32%", "compute (31%)",
        "DRAM (22%)", "__launch_bounds__"},
       [] {
         ProfileContext c;
         c.static_profile = StaticWith([](KernelStaticProfile&) {});
         return c;
       }},
      {"occupancy-limiter",
       "registers limit 25%",
       [] {
         ProfileContext c;
         c.sm = SmLimits{};
         c.metrics[metric::kRegistersPerThread] = 128;
         Occupancy o;
         o.block_threads = 256;
         o.blocks_per_sm = 2;
         o.active_warps = 16;
         o.max_warps = 64;
         o.fraction = 0.25;
         o.limiter = "registers";
         o.blocks_by_registers = 2;
         o.blocks_by_shared = 32;
         o.blocks_by_warps = 8;
         o.blocks_by_block_limit = 32;
         c.occupancy = o;
         return c;
       },
       {"25%", "16 of 64 warps", "limited by registers", "128 registers per thread", "at most 64 registers per thread",
        "4 blocks", "__launch_bounds__(256, 4)"},
       [] {
         ProfileContext c;
         Occupancy o;
         o.block_threads = 256;
         o.active_warps = 48;
         o.max_warps = 64;
         o.fraction = 0.75;
         o.limiter = "registers";
         c.occupancy = o;
         c.metrics[metric::kAchievedOccupancyPct] = 70;
         return c;
       }},
      {"high-register-count",
       "168 registers",
       [] {
         ProfileContext c;
         c.sm = SmLimits{};
         c.metrics[metric::kRegistersPerThread] = 168;
         return c;
       },
       {"168 registers per thread", "above 96", "12 of 64 warps", "18.8%"},
       [] {
         ProfileContext c;
         c.metrics[metric::kRegistersPerThread] = 64;
         return c;
       }},
      {"dominant-warp-stall",
       "65% long scoreboard",
       [] {
         return WithStalls({{"long_scoreboard", 6.5}, {"barrier", 2}, {"wait", 1.5}});
       },
       {"Critical", "65%", "long_scoreboard", "6.5 cycles", "barrier 20%", "shared memory"},
       [] {
         return WithStalls({{"long_scoreboard", 3}, {"barrier", 3}, {"wait", 4}});
       }},
      {"barrier-stall",
       "34% barrier",
       [] {
         auto c = WithStalls({{"barrier", 3.4}, {"long_scoreboard", 3.3}, {"wait", 3.3}});
         c.static_profile = StaticWith([](KernelStaticProfile& p) { p.mix.barriers = 6; });
         return c;
       },
       {"34%", "6 barrier instructions", "double-buffer"},
       [] {
         return WithStalls({{"barrier", 1}, {"long_scoreboard", 5}, {"wait", 4}});
       }},
      {"tensor-cores-unused",
       "bf16 GEMM on FFMA",
       [] {
         ProfileContext c;
         c.matmul_shaped = true;
         c.compute_precision = "bf16";
         c.static_profile = StaticWith([](KernelStaticProfile& p) { p.mix.ffma = 512; });
         // What CUPTI read on the H200 for an FFMA-only bf16 GEMM: the tensor pipe's instruction
         // counter is not zero, yet the SASS has no MMA. The SASS decides.
         c.metrics = {
             {metric::kTensorHmmaInst, 10518528}, {metric::kTensorGmmaInst, 0}, {metric::kSmThroughputPct, 78}};
         return c;
       },
       {"GEMM-shaped in bf16", "no HMMA/HGMMA", "512 FFMA", "78%", "wgmma"},
       [] {
         ProfileContext c;
         c.matmul_shaped = true;
         c.compute_precision = "bf16";
         c.static_profile = StaticWith([](KernelStaticProfile& p) { p.mix.hmma = 16; });
         return c;
       }},
      {"fp64-in-fp32",
       "7 DFMA in an f32 kernel",
       [] {
         ProfileContext c;
         c.compute_precision = "f32";
         c.static_profile = StaticWith([](KernelStaticProfile& p) { p.mix.fp64 = 7; });
         return c;
       },
       {"7 FP64 instructions", "computes in f32", "1.0f", "expf"},
       [] {
         ProfileContext c;
         c.compute_precision = "f64";
         c.static_profile = StaticWith([](KernelStaticProfile& p) { p.mix.fp64 = 7; });
         return c;
       }},
      {"integer-division-in-index-math",
       "3 division sequences",
       [] {
         ProfileContext c;
         c.static_profile = StaticWith([](KernelStaticProfile& p) { p.mix.int_div_sequences = 3; });
         return c;
       },
       {"3 software integer division/modulo sequences", "20%", "300 instructions", "compile-time constants"},
       [] {
         ProfileContext c;
         c.static_profile = StaticWith([](KernelStaticProfile&) {});
         return c;
       }},
      {"warp-divergence",
       "14.2 threads per instruction",
       [] {
         ProfileContext c;
         c.metrics = {{metric::kThreadsPerInst, 14.2}, {metric::kBlockSize, 100}};
         return c;
       },
       {"14.2 of 32", "44.4%", "block size 100"},
       [] {
         ProfileContext c;
         c.metrics = {{metric::kThreadsPerInst, 31.5}};
         return c;
       }},
      {"tail-effect",
       "1.1 waves",
       [] {
         ProfileContext c;
         c.sm_count = 132;
         c.metrics = {{metric::kWavesPerSm, 290.0 / 264}, {metric::kGridSize, 290}};
         return c;
       },
       {"1.1 waves", "9.85% full", "26 of 264 blocks", "132 SMs × 2 blocks", "45.1%"},
       [] {
         ProfileContext c;
         c.sm_count = 132;
         c.metrics = {{metric::kWavesPerSm, 4.0}, {metric::kGridSize, 1056}};
         return c;
       }},
      {"tail-effect",
       "grid of 40 on 132 SMs",
       [] {
         ProfileContext c;
         c.sm_count = 132;
         c.metrics = {{metric::kWavesPerSm, 0.15}, {metric::kGridSize, 40}};
         return c;
       },
       {"40 blocks for 132 SMs", "92 SMs", "69.7%", "split-K"},
       [] {
         ProfileContext c;
         c.sm_count = 132;
         c.metrics = {{metric::kWavesPerSm, 9.9}, {metric::kGridSize, 2614}};
         return c;
       }},
      {"tail-effect",
       "140 blocks in one wave on 132 SMs",
       [] {
         ProfileContext c;
         c.sm_count = 132;
         c.metrics = {{metric::kWavesPerSm, 140.0 / 264}, {metric::kGridSize, 140}};
         return c;
       },
       {"140 blocks for 132 SMs", "8 SMs run 2 blocks", "47%"},
       [] {
         ProfileContext c;  // 264 blocks in one wave: every SM runs two
         c.sm_count = 132;
         c.metrics = {{metric::kWavesPerSm, 1.0}, {metric::kGridSize, 264}};
         return c;
       }},
      {"launch-overhead",
       "35% gaps",
       [] {
         ProfileContext c;
         c.launch_gap_share = 0.35;
         c.kernels_per_call = 5;
         return c;
       },
       {"35%", "5 kernel launches", "CUDA graph"},
       [] {
         ProfileContext c;
         c.launch_gap_share = 0.05;
         c.kernels_per_call = 2;
         return c;
       }},
      {"launch-overhead",
       "12 kernels per call",
       [] {
         ProfileContext c;
         c.launch_gap_share = 0.1;
         c.kernels_per_call = 12;
         return c;
       },
       {"12 kernels", "Fuse"},
       [] {
         ProfileContext c;
         c.kernels_per_call = 1;
         return c;
       }},
      {"copies-or-syncs-in-call",
       "2 copies and a sync",
       [] {
         ProfileContext c;
         c.memcpys_per_call = 2;
         c.syncs_per_call = 1;
         return c;
       },
       {"2 memory copies and 1 synchronization", "cudaDeviceSynchronize"},
       [] {
         ProfileContext c;
         c.kernels_per_call = 1;
         return c;
       }},
  };
}

TEST(BuiltinTools, EveryToolFiresOnItsTriggerWithTheNumbersInItsGuidance) {
  std::set<std::string> covered;
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.tool + ": " + c.name);
    covered.insert(c.tool);
    auto f = ById(c.tool).Run(c.firing());
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(f->id, c.tool);
    EXPECT_EQ(f->tool, c.tool);
    EXPECT_GT(f->severity, 0);
    EXPECT_LE(f->severity, 1);
    EXPECT_FALSE(f->evidence.empty());
    EXPECT_FALSE(f->skills.empty());
    for (const auto& text : c.in_guidance) {
      EXPECT_NE(f->guidance.find(text), std::string::npos) << "missing \"" << text << "\" in: " << f->guidance;
    }
  }
  for (const auto& t : All()) EXPECT_TRUE(covered.count(t->id())) << t->id() << " has no case";
}

TEST(BuiltinTools, EveryToolStaysSilentOnAHealthyContext) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.tool + ": healthy counterpart of " + c.name);
    auto f = ById(c.tool).Run(c.healthy());
    EXPECT_FALSE(f.has_value()) << f->guidance;
  }
}

TEST(BuiltinTools, EveryToolStaysSilentWhenItsInputsAreMissing) {
  // Nothing at all: no metrics, no static profile, no trace, no task facts.
  ProfileContext empty;
  std::vector<const Tool*> all = SelectTools(All(), Bottleneck::kUnknown, true);
  EXPECT_TRUE(RunTools(all, empty).empty());

  // Task facts present but the measurements missing: still nothing to judge.
  ProfileContext facts;
  facts.compute_precision = "bf16";
  facts.matmul_shaped = true;
  facts.sm_count = 132;
  facts.sm = SmLimits{};
  facts.roofline.result = Bottleneck::kMemory;
  for (const Tool* t : all) {
    auto f = t->Run(facts);
    EXPECT_FALSE(f.has_value()) << t->id() << ": " << f->guidance;
  }

  // A metric ncu printed as n/a (NaN) counts as missing, never as a number.
  ProfileContext nan;
  nan.metrics[metric::kDramThroughputPct] = std::nan("");
  nan.metrics[metric::kThreadsPerInst] = std::nan("");
  EXPECT_FALSE(nan.Metric(metric::kDramThroughputPct).has_value());
  EXPECT_TRUE(RunTools(all, nan).empty());
}

TEST(BuiltinTools, SilentInTheCasesTheirTriggersExclude) {
  // 128-bit loads make 16 sectors per request the ideal, not a 4× waste.
  ProfileContext wide;
  wide.metrics = {{metric::kGlobalLoadSectors, 1600}, {metric::kGlobalLoadRequests, 100}};
  wide.static_profile = StaticWith([](KernelStaticProfile& p) {
    p.mix.global_loads_32 = 0;
    p.mix.global_loads_128 = 8;
  });
  EXPECT_FALSE(ById("uncoalesced-global-access").Run(wide).has_value());

  // Scalar loads in a compute-bound kernel are not the bottleneck.
  ProfileContext compute;
  compute.roofline.result = Bottleneck::kCompute;
  compute.static_profile = StaticWith([](KernelStaticProfile& p) { p.mix.global_loads_128 = 0; });
  EXPECT_FALSE(ById("scalar-global-loads").Run(compute).has_value());

  // An f32 GEMM may not use TF32 tensor cores behind the task's back.
  ProfileContext f32;
  f32.matmul_shaped = true;
  f32.compute_precision = "f32";
  f32.static_profile = StaticWith([](KernelStaticProfile&) {});
  EXPECT_FALSE(ById("tensor-cores-unused").Run(f32).has_value());

  // Without SASS the counters speak: 0 tensor instructions fires, some do not.
  ProfileContext counters_only;
  counters_only.matmul_shaped = true;
  counters_only.compute_precision = "bf16";
  counters_only.metrics = {{metric::kTensorHmmaInst, 0}, {metric::kTensorGmmaInst, 0}};
  auto fired = ById("tensor-cores-unused").Run(counters_only);
  ASSERT_TRUE(fired.has_value());
  EXPECT_NE(fired->guidance.find("0 instructions"), std::string::npos) << fired->guidance;
  counters_only.metrics[metric::kTensorHmmaInst] = 4096;
  EXPECT_FALSE(ById("tensor-cores-unused").Run(counters_only).has_value());

  // A streaming kernel misses L1 on every sector because it reads each byte once: silent. The
  // same counters with the loads asking for 6× the task's bytes: there is reuse to catch.
  auto streaming = WithStalls({{"long_scoreboard", 5.5}, {"wait", 2.5}, {"barrier", 2}});
  streaming.metrics[metric::kL1HitPct] = 3;
  streaming.metrics[metric::kGlobalLoadSectors] = 0.67e9 / 32;  // loads: 2/3 of the 1 GB minimum
  streaming.min_bytes = 1e9;
  EXPECT_FALSE(ById("low-cache-hit-rate").Run(streaming).has_value());
  streaming.metrics[metric::kGlobalLoadSectors] = 6e9 / 32;
  auto reused = ById("low-cache-hit-rate").Run(streaming);
  ASSERT_TRUE(reused.has_value());
  EXPECT_NEAR(reused->evidence.value("requested_over_minimum_bytes", 0.0), 6.0, 1e-9);

  // Eligible warps waiting their turn is a saturated scheduler, not a stall to fix.
  EXPECT_FALSE(ById("dominant-warp-stall").Run(WithStalls({{"not_selected", 8}, {"wait", 2}})).has_value());

  // Waiting on loads while DRAM runs at its roof is the roof (dram-near-peak says so); below it,
  // the same stalls are a finding.
  auto at_roof = WithStalls({{"long_scoreboard", 8}, {"wait", 1}});
  at_roof.metrics[metric::kDramThroughputPct] = 90;
  EXPECT_FALSE(ById("dominant-warp-stall").Run(at_roof).has_value());
  at_roof.metrics[metric::kDramThroughputPct] = 50;
  EXPECT_TRUE(ById("dominant-warp-stall").Run(at_roof).has_value());
}

TEST(BuiltinTools, SeverityGrowsWithDistancePastTheTrigger) {
  auto dram = [](double pct) {
    ProfileContext c;
    c.metrics[metric::kDramThroughputPct] = pct;
    return ById("dram-near-peak").Run(c)->severity;
  };
  EXPECT_LT(dram(82), dram(90));
  EXPECT_LT(dram(90), dram(97));
  EXPECT_DOUBLE_EQ(dram(99), 1.0);

  // Spills weigh more when warps wait on memory.
  ProfileContext quiet;
  quiet.static_profile = StaticWith([](KernelStaticProfile& p) { p.resources.spill_stores = 64; });
  ProfileContext waiting = WithStalls({{"long_scoreboard", 6}, {"wait", 4}});
  waiting.static_profile = quiet.static_profile;
  EXPECT_LT(ById("register-spills").Run(quiet)->severity, ById("register-spills").Run(waiting)->severity);

  // Dominant stall: above 60% is critical.
  auto stall = [](double share) {
    return ById("dominant-warp-stall").Run(WithStalls({{"barrier", share * 10}, {"wait", 10 - share * 10}}));
  };
  EXPECT_FALSE(stall(0.5)->evidence["critical"].get<bool>());
  EXPECT_TRUE(stall(0.7)->evidence["critical"].get<bool>());
  EXPECT_GE(stall(0.61)->severity, 0.7);
}

TEST(BuiltinTools, OccupancyLimiterNamesTheResourceAndTheTarget) {
  ProfileContext c;
  c.sm = SmLimits{};
  Occupancy o;
  o.block_threads = 128;
  o.blocks_per_sm = 3;
  o.active_warps = 12;
  o.max_warps = 64;
  o.fraction = 12.0 / 64;
  o.limiter = "shared_memory";
  o.blocks_by_shared = 3;
  c.occupancy = o;
  auto f = ById("occupancy-limiter").Run(c);
  ASSERT_TRUE(f);
  // 50% at 4-warp blocks needs 8 blocks: (233472 / 8 - 1024) rounded down to 128 B = 28160 B.
  EXPECT_NE(f->guidance.find("limited by shared_memory"), std::string::npos) << f->guidance;
  EXPECT_NE(f->guidance.find("8 blocks (50%) need at most 27.5 KiB per block"), std::string::npos) << f->guidance;
  EXPECT_EQ(f->evidence["shared_bytes_for_50pct"].get<int64_t>(), 28160);

  // Achieved low with theoretical fine: the grid, not a resource.
  ProfileContext achieved;
  achieved.metrics[metric::kAchievedOccupancyPct] = 21;
  achieved.metrics[metric::kTheoreticalOccupancyPct] = 100;
  f = ById("occupancy-limiter").Run(achieved);
  ASSERT_TRUE(f);
  EXPECT_NE(f->guidance.find("Achieved occupancy is 21% against a theoretical 100%"), std::string::npos);
}

TEST(BuiltinTools, IdsAreUniqueKebabCaseWithDescriptionsAndClasses) {
  ASSERT_GE(All().size(), 15u);
  std::set<std::string> ids;
  for (const auto& t : All()) {
    EXPECT_TRUE(ids.insert(t->id()).second) << "duplicate " << t->id();
    EXPECT_EQ(t->id().find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-"), std::string::npos) << t->id();
    EXPECT_FALSE(t->description().empty()) << t->id();
    EXPECT_FALSE(t->classes().empty()) << t->id();
    for (const auto& m : t->metrics()) {
      EXPECT_NE(m.find("__"), std::string::npos) << t->id() << " needs a non-ncu metric " << m;
    }
  }
}

bool Has(const std::vector<const Tool*>& tools, const std::string& id) {
  return std::any_of(tools.begin(), tools.end(), [&](const Tool* t) { return t->id() == id; });
}

TEST(SelectTools, ByClass) {
  auto memory = SelectTools(All(), Bottleneck::kMemory, false);
  EXPECT_TRUE(Has(memory, "uncoalesced-global-access"));
  EXPECT_TRUE(Has(memory, "dram-near-peak"));
  EXPECT_FALSE(Has(memory, "tensor-cores-unused"));  // memory-bound kernels skip tensor checks
  // Division sequences pace a streaming kernel by issue (nchw-bias-divmod, classed memory-bound).
  EXPECT_TRUE(Has(memory, "integer-division-in-index-math"));

  auto compute = SelectTools(All(), Bottleneck::kCompute, false);
  EXPECT_TRUE(Has(compute, "tensor-cores-unused"));
  EXPECT_FALSE(Has(compute, "uncoalesced-global-access"));  // compute-bound kernels skip coalescing
  EXPECT_FALSE(Has(compute, "dram-near-peak"));

  auto launch = SelectTools(All(), Bottleneck::kLaunch, false);
  EXPECT_TRUE(Has(launch, "launch-overhead"));
  EXPECT_TRUE(Has(launch, "copies-or-syncs-in-call"));
  EXPECT_FALSE(Has(launch, "dominant-warp-stall"));

  for (auto& t : memory) {
    auto classes = t->classes();
    EXPECT_NE(std::find(classes.begin(), classes.end(), Bottleneck::kMemory), classes.end()) << t->id();
  }
  EXPECT_EQ(SelectTools(All(), Bottleneck::kCompute, true).size(), All().size());
  EXPECT_EQ(SelectTools(All(), Bottleneck::kUnknown, false).size(), All().size());
}

TEST(MetricsNeeded, UnionIsSortedWithoutDuplicates) {
  std::vector<const Tool*> tools = {&ById("low-cache-hit-rate"), &ById("dominant-warp-stall"), &ById("barrier-stall"),
                                    &ById("dram-near-peak"), &ById("launch-overhead")};
  auto names = MetricsNeeded(tools);
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
  EXPECT_EQ(std::count(names.begin(), names.end(), StallMetric("long_scoreboard")), 1);
  EXPECT_EQ(names.size(), StallMetrics().size() + 3 /* L1, L2, load sectors */ + 3 /* dram */);
  EXPECT_TRUE(MetricsNeeded({&ById("launch-overhead")}).empty());
}

// A tool with a fixed severity, for ranking.
class FixedTool : public Tool {
 public:
  FixedTool(std::string id, double severity) : id_(std::move(id)), severity_(severity) {}
  std::string id() const override { return id_; }
  std::string description() const override { return "fixed"; }
  std::vector<Bottleneck> classes() const override { return {Bottleneck::kMemory}; }
  std::vector<std::string> metrics() const override { return {}; }
  std::optional<Finding> Run(const ProfileContext&) const override {
    Finding f;
    f.id = id_;
    f.severity = severity_;
    return f;
  }

 private:
  std::string id_;
  double severity_;
};

TEST(RunTools, RanksBySeverityThenId) {
  FixedTool low("low", 0.2), b("b-tool", 0.6), a("a-tool", 0.6), high("high", 0.9);
  auto findings = RunTools({&low, &b, &a, &high}, ProfileContext{});
  ASSERT_EQ(findings.size(), 4u);
  EXPECT_EQ(findings[0].id, "high");
  EXPECT_EQ(findings[1].id, "a-tool");
  EXPECT_EQ(findings[2].id, "b-tool");
  EXPECT_EQ(findings[3].id, "low");
}

TEST(RunTools, RealToolsOnOneContextComeOutRanked) {
  ProfileContext c = WithStalls({{"long_scoreboard", 7}, {"barrier", 1}, {"wait", 2}});
  c.metrics[metric::kL1HitPct] = 5;
  c.metrics[metric::kDramThroughputPct] = 84;
  c.metrics[metric::kGlobalLoadSectors] = 3200;
  c.metrics[metric::kGlobalLoadRequests] = 100;
  auto findings = RunTools(SelectTools(All(), Bottleneck::kMemory, false), c);
  ASSERT_GE(findings.size(), 3u);  // long_scoreboard at 84% of DRAM is the roof: no stall finding
  for (size_t i = 1; i < findings.size(); ++i) {
    EXPECT_GE(findings[i - 1].severity, findings[i].severity);
  }
  EXPECT_EQ(findings.front().id, "uncoalesced-global-access");  // 8× the ideal: severity 1
}

TEST(Num, ThreeSignificantDigitsAndIntegersFromOneHundred) {
  EXPECT_EQ(Num(47.23), "47.2");
  EXPECT_EQ(Num(0.012345), "0.0123");
  EXPECT_EQ(Num(1234567.4), "1234567");
  EXPECT_EQ(Num(3), "3");
  EXPECT_EQ(Pct(91.54), "91.5%");
}

}  // namespace
}  // namespace kpilot
