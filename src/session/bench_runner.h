// The ProblemRunner of `kpilot bench` (bench/bench.h) that does the work: a problem loaded (a
// KernelBench .py, a flashinfer definition or a task folder), optimized with the bench's options
// from its starting candidate — or, with the config's "eval_only" folder or "eval_reference", its
// given candidate or its own reference evaluated once — on the device RunBench gives it, and its
// best timed against torch.compile (the store's baseline cache, else timed now) unless the config
// says "compile_baseline": false. Thread-safe: RunBench calls it from one thread per device slot.
#pragma once

#include <memory>
#include <ostream>

#include <nlohmann/json.hpp>

#include "bench/bench.h"
#include "session/session.h"
#include "store/store.h"

namespace kpilot {

// The CPU threads each problem's torch worker gets when `in_flight` problems share a host of `cpus`
// cores: an equal share, at least one; 0 (torch's default) when one problem has the host.
int TorchThreadsPerProblem(unsigned cpus, size_t in_flight);

// `config`: the bench's stored config (suite, eval_only, eval_reference, compile_baseline, python,
// optimize). `store` is borrowed and outlives the runner; `notices` (may be null) gets the skill
// cards' override notices of each problem's session. `channels` (may be empty): each problem's
// evaluations go through a channel of its own (SessionSettings::channels: an allocation of a Slurm
// cluster), on one queue. `compile_processes` (may be null): where every problem's compilers run
// (SessionSettings::compile_processes), `compile_threads` of them per problem (0: one per core).
std::unique_ptr<ProblemRunner> MakeBenchProblemRunner(Store& store, const nlohmann::json& config,
                                                      const InstallLayout& layout, std::ostream* notices,
                                                      RunnerChannelFactory channels = nullptr,
                                                      ProcessRunner* compile_processes = nullptr,
                                                      int compile_threads = 0);

}  // namespace kpilot
