// The built-in micro-profiling tools, one per file in this folder, and what they share: the ncu
// metric names they read, the warp-stall breakdown, number formatting for guidance text and the
// severity scale.
//
// Every tool follows the same rules:
//   - Run() returns nullopt, silently, when an input it needs is missing (metric not collected,
//     no static profile, no trace); a missing input is never read as zero.
//   - Severity is in [0, 1]: SeverityRamp() puts a finding that just crosses its trigger at 0.3
//     and one far past it at 1.0, so findings rank by how far past their trigger they are.
//   - Guidance says what to change and why, with the measured numbers in the sentence.
//   - Numbers in text are formatted by Num() (3 significant digits).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "profile/tool.h"

namespace kpilot {

// Factories, one per tool file, in BuiltinTools() order.
std::unique_ptr<Tool> MakeUncoalescedGlobalAccessTool();
std::unique_ptr<Tool> MakeLowCacheHitRateTool();
std::unique_ptr<Tool> MakeDramNearPeakTool();
std::unique_ptr<Tool> MakeScalarGlobalLoadsTool();
std::unique_ptr<Tool> MakeSharedBankConflictsTool();
std::unique_ptr<Tool> MakeRegisterSpillsTool();
std::unique_ptr<Tool> MakeOccupancyLimiterTool();
std::unique_ptr<Tool> MakeHighRegisterCountTool();
std::unique_ptr<Tool> MakeDominantWarpStallTool();
std::unique_ptr<Tool> MakeBarrierStallTool();
std::unique_ptr<Tool> MakeTensorCoresUnusedTool();
std::unique_ptr<Tool> MakeFp64InFp32Tool();
std::unique_ptr<Tool> MakeIntegerDivisionTool();
std::unique_ptr<Tool> MakeWarpDivergenceTool();
std::unique_ptr<Tool> MakeTailEffectTool();
std::unique_ptr<Tool> MakeLaunchOverheadTool();
std::unique_ptr<Tool> MakeCopiesOrSyncsTool();

// Nsight Compute (2025.x) metric names the built-in tools read.
namespace metric {
inline constexpr char kSmThroughputPct[] = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr char kDramThroughputPct[] = "dram__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr char kDramBytesRead[] = "dram__bytes_read.sum";
inline constexpr char kDramBytesWrite[] = "dram__bytes_write.sum";
inline constexpr char kDuration[] = "gpu__time_duration.sum";  // ns
inline constexpr char kL1HitPct[] = "l1tex__t_sector_hit_rate.pct";
inline constexpr char kL2HitPct[] = "lts__t_sector_hit_rate.pct";
inline constexpr char kGlobalLoadSectors[] = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum";
inline constexpr char kGlobalLoadRequests[] = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum";
inline constexpr char kGlobalStoreSectors[] = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum";
inline constexpr char kGlobalStoreRequests[] = "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum";
inline constexpr char kSharedLoadConflicts[] = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum";
inline constexpr char kSharedStoreConflicts[] = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum";
inline constexpr char kSharedLoadWavefronts[] = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum";
inline constexpr char kSharedStoreWavefronts[] = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum";
inline constexpr char kAchievedOccupancyPct[] = "sm__warps_active.avg.pct_of_peak_sustained_active";
inline constexpr char kTheoreticalOccupancyPct[] = "sm__maximum_warps_per_active_cycle_pct";
inline constexpr char kThreadsPerInst[] = "smsp__thread_inst_executed_per_inst_executed.ratio";
inline constexpr char kWavesPerSm[] = "launch__waves_per_multiprocessor";
inline constexpr char kGridSize[] = "launch__grid_size";
inline constexpr char kBlockSize[] = "launch__block_size";
inline constexpr char kRegistersPerThread[] = "launch__registers_per_thread";
inline constexpr char kTensorHmmaInst[] = "sm__inst_executed_pipe_tensor_op_hmma.sum";
inline constexpr char kTensorGmmaInst[] = "sm__inst_executed_pipe_tensor_op_gmma.sum";
inline constexpr char kDfmaThreadInst[] = "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum";
inline constexpr char kDmulThreadInst[] = "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum";
inline constexpr char kDaddThreadInst[] = "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum";
inline constexpr char kFfmaThreadInst[] = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum";
inline constexpr char kFmulThreadInst[] = "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum";
inline constexpr char kFaddThreadInst[] = "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum";
}  // namespace metric

// A tool with its id, description, classes and metrics fixed at construction; subclasses
// implement Run() only.
class BuiltinTool : public Tool {
 public:
  BuiltinTool(std::string id, std::string description, std::vector<Bottleneck> classes,
              std::vector<std::string> metrics)
      : id_(std::move(id)),
        description_(std::move(description)),
        classes_(std::move(classes)),
        metrics_(std::move(metrics)) {}
  std::string id() const override { return id_; }
  std::string description() const override { return description_; }
  std::vector<Bottleneck> classes() const override { return classes_; }
  std::vector<std::string> metrics() const override { return metrics_; }

 protected:
  // A finding of this tool; severity is clamped to [0, 1].
  Finding MakeFinding(double severity, nlohmann::json evidence, std::string guidance,
                      std::vector<std::string> skills) const;

 private:
  std::string id_, description_;
  std::vector<Bottleneck> classes_;
  std::vector<std::string> metrics_;
};

// Class sets tools declare.
std::vector<Bottleneck> MemoryClasses();   // memory-, latency-bound, mixed
std::vector<Bottleneck> ComputeClasses();  // compute-bound, mixed
std::vector<Bottleneck> KernelClasses();   // every class but launch-bound
std::vector<Bottleneck> AllClasses();      // every class, launch-bound included

// "47.2", "0.0123", "1234" (3 significant digits; no exponent from 100 up to 1e15, rounded to
// an integer there). NaN and infinities print as "nan"/"inf".
std::string Num(double v);
// Num(v) + "%" for a value already in percent (0–100).
std::string Pct(double percent);

// Severity of a value past its trigger: `floor` at the trigger, rising linearly to 1 at `full`,
// clamped to [floor, 1]. Works for both directions (full < trigger for "lower is worse").
double SeverityRamp(double value, double trigger, double full, double floor = 0.3);

// Warp-stall reasons as ncu names them ("long_scoreboard", …), without "selected" (a warp being
// issued is not stalled).
const std::vector<std::string_view>& StallReasons();
// "smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio" (cycles per issued
// instruction spent in that state).
std::string StallMetric(std::string_view reason);
// StallMetric() of every reason.
std::vector<std::string> StallMetrics();

struct StallShare {
  std::string reason;
  double cycles_per_issue = 0;
  double share = 0;  // of the summed stall cycles of the collected reasons, 0–1
};
// The collected stall reasons, largest share first. nullopt when no stall metric was collected
// or their sum is zero.
std::optional<std::vector<StallShare>> StallShares(const ProfileContext& ctx);
// One reason's share (0–1); nullopt under the same conditions or when `reason` was not collected.
std::optional<double> StallShareOf(const ProfileContext& ctx, std::string_view reason);

// Registers per thread: launch__registers_per_thread when collected, else ptxas's count from the
// static profile; nullopt when neither is there.
std::optional<int> RegistersPerThread(const ProfileContext& ctx);

// The kernel's SASS issues warpgroup MMAs (HGMMA: wgmma on sm_90a, or tcgen05's successors). Such
// kernels are built to run one or two blocks per SM, a producer warp feeding consumer warpgroups
// whose accumulators fill the register file: low occupancy and high register counts are their
// design, not a limiter, and the advice to cap registers would spill the accumulators.
bool IssuesWarpgroupMma(const ProfileContext& ctx);

}  // namespace kpilot
