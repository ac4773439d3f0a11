// The space executor: serves stored results of an exhaustive sweep (`kpilot sweep`'s space
// file, docs/sweep.md, read by LoadSpace in sweep/space_file.h) instead of compiling and running,
// so that search policies can be compared over the same measured space many times
// (bench/search_efficiency.py).
//
// A job's params select the config (params the task declares but the job leaves unset take
// their first declared value, as in the params generator). The evaluation is built from the
// stored samples through the harness's own statistics (SummarizeTimings), so the speedup and its
// CI are those `kpilot eval` would have printed for those samples. A job with a baseline
// override (the optimizer's promotion gate, challenger against incumbent) is answered from the
// two configs' stored samples; see SpaceGate. The stored ptxas report and SASS instruction mix
// (run.details.static_mix) are passed on, so the optimizer's static findings steer the params
// generator as they would live. So is the GPU's calibration (the space's own, recorded by kpilot
// sweep, or one given with SetCalibration), so the optimizer classifies every node against the
// roofline as a live run does; without one the class stays unknown. There are no counters.
// A compile-only job (the params generator's footprints) gets the stored ptxas report and leaves
// the clock alone.
// Nothing runs; a simulated clock advances by the stored compile time plus every stored sample,
// so busy share reads as it would have.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "exec/executor.h"
#include "sweep/space_file.h"  // Space, SpaceConfig, LoadSpace

namespace kpilot {

// Reads a calibration file: `kpilot calibrate --json` output, or any JSON object with positive
// dram_bytes_per_s and fp32_flops_per_s. InvalidInput naming the file and the field otherwise.
Result<Calibration> ReadCalibrationFile(const std::filesystem::path& file);

// The paired speedup of `challenger` over `incumbent` from samples taken in separate runs (see
// the .cc for the statistic); deterministic for a seed.
PairedRatio SpaceGate(const SpaceConfig& challenger, const SpaceConfig& incumbent, uint64_t seed);

class SpaceExecutor : public Executor {
 public:
  // `seed` makes the gate's bootstrap reproducible (kpilot optimize passes --seed).
  SpaceExecutor(Space space, uint64_t seed);
  // Loads `file` and checks that it was swept for `task` (InvalidInput naming both otherwise).
  static Result<std::unique_ptr<SpaceExecutor>> Open(const std::filesystem::path& file, const Task& task,
                                                     uint64_t seed);

  // Ready at once. A config not in the file is a non-ok status naming its params.
  std::future<EvalJobResult> Submit(EvalJob job) override;
  double BusySeconds() const override;
  double ElapsedSeconds() const override;

  const Space& space() const { return space_; }
  // Replaces the space's calibration (for spaces swept before sweeps recorded one). Returns a
  // warning when the calibration names a GPU other than the space's, else "".
  std::string SetCalibration(const Calibration& c);

 private:
  Result<EvalJobResult> Serve(EvalJob& job);
  Result<const SpaceConfig*> Find(const Task* task, const ParamValues& params) const;
  Evaluation Base(const EvalJob& job, const SpaceConfig& c) const;

  Space space_;
  uint64_t seed_;
  std::map<ParamValues, size_t> index_;
  mutable std::mutex mu_;
  std::set<std::ptrdiff_t> compiled_;  // configs compiled once already
  double busy_s_ = 0, elapsed_s_ = 0;
};

}  // namespace kpilot
