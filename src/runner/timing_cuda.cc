// The cuda backend: timing (three procedures), the clock cross-checks, the physical floor and
// energy. Correctness comes first (correctness_cuda.cc); a workload is timed only once it passed.
#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/random.h"
#include "core/stats.h"
#include "runner/checks.h"
#include "runner/worker_cuda.h"

namespace kpilot {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

struct Procedure {
  int warmup;
  int min_reps;
  int max_reps;
  double max_seconds;
  bool adaptive;  // stop once both medians' CIs are tight
  bool flush_l2;
  int input_sets;
  const char* statistic;
  const char* method;
};

Procedure ProcedureFor(const TimingConfig& t) {
  switch (t.mode) {
    case TimingMode::kKernelBench:
      return {3,
              100,
              100,
              1e9,
              false,
              true,
              1,
              "mean",
              "kernelbench: CUDA events on the given stream, L2 flushed before each trial, 3 warmup, 100 trials, "
              "mean; candidate and baseline interleaved"};
    case TimingMode::kFlashInfer:
      return {10,
              150,
              150,
              1e9,
              false,
              true,
              3,
              "median",
              "flashinfer: cold L2, 10 warmup, 50 iterations on each of 3 input sets (rotated), median; each sample "
              "is the CUPTI span from the first kernel's start to the last kernel's end of the call where CUPTI is "
              "available, else CUDA events; candidate and baseline interleaved"};
    case TimingMode::kDefault:
      break;
  }
  return {t.warmup,
          t.min_reps,
          t.max_reps,
          t.max_seconds,
          true,
          true,
          std::max(1, t.input_sets),
          "median",
          "default: L2 flushed (a 2x-L2 buffer read) before every call, CUDA events on the given stream, input sets "
          "rotated, candidate and baseline interleaved ABAB until both medians' 95% CIs are within the target"};
}

// The candidate's part of a trace: without the runner's own L2-flush kernels.
LaunchTrace WithoutFlushKernels(LaunchTrace t) {
  std::erase_if(t.kernels, [](const TraceKernel& k) { return k.name.find(kFlushKernelName) != std::string::npos; });
  return t;
}

// Whether each timed iteration is audited: about four per workload, at random.
double AuditProbability(const Procedure& proc) { return std::min(0.5, 4.0 / std::max(1, proc.min_reps)); }

// The kernels of one call in launch order, without the runner's flush kernels.
std::vector<std::string> KernelSequence(const LaunchTrace& t) {
  std::vector<TraceKernel> k = WithoutFlushKernels(t).kernels;
  std::sort(k.begin(), k.end(),
            [](const TraceKernel& a, const TraceKernel& b) { return a.correlation_id < b.correlation_id; });
  std::vector<std::string> names;
  for (const auto& x : k) names.push_back(x.name);
  return names;
}

std::string Listed(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < 6; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > 6) s += ", … (" + std::to_string(names.size()) + " in all)";
  return names.empty() ? "no kernel" : s;
}

}  // namespace

bool CudaWorker::RefillInputs(const RunWorkload& w, uint64_t seed, DeviceTensors* in) {
  for (size_t i = 0; i < w.inputs.size(); ++i) {
    int e = DeviceFillInit(w.inputs[i].dtype, w.inputs[i].init, seed, i, in->buffers[i].get(), Numel(w.inputs[i].shape),
                           stream_->get());
    if (e)
      return Finish("error", "refilling input " + w.inputs[i].name + ": " + CudaErrorText(static_cast<cudaError_t>(e)));
  }
  cudaError_t e = cudaStreamSynchronize(stream_->get());
  if (e != cudaSuccess) return Finish("runtime_error", "CUDA error before a timed call: " + CudaErrorText(e));
  return true;
}

bool ResetPersistingL2Limit() {
  size_t persisting = 0;
  const bool was_set = cudaDeviceGetLimit(&persisting, cudaLimitPersistingL2CacheSize) == cudaSuccess && persisting > 0;
  if (was_set) cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0);
  // Lines already marked persisting stay so until reset, whatever the limit is now.
  cudaCtxResetPersistingL2Cache();
  cudaGetLastError();  // a device without the feature reports it here; nothing to reset then
  return was_set;
}

bool CudaWorker::ResetL2State(int* resets) {
  cudaStream_t s = stream_->get();
  if (ResetPersistingL2Limit()) ++*resets;
  cudaStreamAttrValue window{};
  if (cudaStreamGetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &window) == cudaSuccess &&
      window.accessPolicyWindow.num_bytes > 0) {
    cudaStreamAttrValue none{};
    cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &none);
    ++*resets;
  }
  return true;
}

bool CudaWorker::AuditTimedCall(const RunWorkload& w, int iteration, const DeviceTensors& in,
                                const DeviceTensors& cand_out, const DeviceTensors& expected) {
  std::string error;
  Call(reference_->launch(), in, expected, Scalars(w), &error);
  if (!error.empty())
    return Finish("error", "the task's reference failed auditing a timed call of workload " + w.name + ": " + error);
  for (size_t i = 0; i < w.outputs.size(); ++i) {
    const RunTensor& o = w.outputs[i];
    int64_t n = Numel(o.shape);
    DeviceCompareStats st;
    int e = DeviceCompare(o.dtype, cand_out.tensors[i].data, expected.tensors[i].data, n, o.tolerance.atol,
                          o.tolerance.rtol, &st, stream_->get());
    if (e)
      return Finish("runtime_error",
                    "comparing a timed call's output failed: " + CudaErrorText(static_cast<cudaError_t>(e)));
    if (!MismatchesAllowed(st.mismatches, n, o.tolerance))
      return Finish("incorrect", "output \"" + o.name + "\" of timed call " + std::to_string(iteration + 1) +
                                     " on workload " + w.name + " differs from the reference (" +
                                     std::to_string(st.mismatches) + " of " + std::to_string(n) +
                                     " elements out of tolerance), though the checked calls matched: timed calls "
                                     "are audited at random, and this one did not do the work");
  }
  return true;
}

bool CudaWorker::TimeWorkload(const RunWorkload& w) {
  report_.Phase("timing", "workload " + w.name);
  Procedure proc = ProcedureFor(req_.timing);
  std::vector<kpilot_scalar> scalars = Scalars(w);
  std::vector<DeviceTensors> sets;
  for (int k = 0; k < proc.input_sets; ++k) {
    auto in = MakeInputs(w, 1000 + static_cast<uint64_t>(k));
    if (!in.ok()) return Finish("error", in.status().message());
    sets.push_back(std::move(in).value());
  }
  auto cand_out = MakeOutputs(w, false);
  auto base_out = MakeOutputs(w, false);
  auto expected = MakeOutputs(w, false);  // the reference's answers for audited timed calls
  if (!cand_out.ok() || !base_out.ok() || !expected.ok()) return Finish("error", "allocating timing outputs failed");
  auto flush = DeviceBuffer::Allocate(static_cast<size_t>(std::max<int64_t>(2 * l2_bytes_, 1 << 20)));
  if (!flush.ok()) return Finish("error", flush.status().message());
  cudaMemsetAsync(flush->get(), 0, flush->bytes(), stream_->get());

  cudaStream_t s = stream_->get();
  CudaEvent e0, e1;
  std::string error;
  const bool cupti_samples = req_.timing.mode == TimingMode::kFlashInfer && tracer_ != nullptr;
  if (cupti_samples) (void)tracer_->Collect();
  // One timed call: flush, then events around the call, then a device-wide synchronize read by
  // the host clock. Returns false on a failure (error filled in).
  auto timed_call = [&](kpilot_launch_fn fn, const DeviceTensors& in, const DeviceTensors& out, double* event_ms,
                        double* host_ms) {
    // Flush, e0 and the call are queued back to back: the GPU is busy with the flush while the
    // host launches, so e0 → e1 spans the call and not the launch latency. The host clock starts
    // before the flush (it is compared with the baseline's, which pays the same flush).
    auto t0 = Clock::now();
    if (proc.flush_l2) DeviceFlushL2(flush->get(), flush->bytes(), s);
    std::vector<kpilot_tensor> in_copy = in.tensors, out_copy = out.tensors;  // see CudaWorker::Call
    std::vector<kpilot_scalar> scalar_copy = scalars;
    cudaEventRecord(e0.get(), s);
    int rc = fn(in_copy.data(), static_cast<int>(in_copy.size()), out_copy.data(), static_cast<int>(out_copy.size()),
                scalar_copy.data(), static_cast<int>(scalar_copy.size()), s);
    cudaEventRecord(e1.get(), s);
    cudaError_t sync = cudaDeviceSynchronize();
    *host_ms = MsSince(t0);
    float ms = 0;
    cudaError_t ev = cudaEventElapsedTime(&ms, e0.get(), e1.get());
    *event_ms = ms;
    if (cupti_samples) {
      auto trace = tracer_->Collect();
      if (trace.ok()) {
        TraceSummary sum = SummarizeTrace(WithoutFlushKernels(*trace), stream_id_);
        if (sum.kernels > 0) *event_ms = sum.kernel_busy_ns / 1e6;
      }
    }
    if (sync != cudaSuccess)
      error = "CUDA error: " + CudaErrorText(sync);
    else if (ev != cudaSuccess)
      error = "CUDA error reading events: " + CudaErrorText(ev);
    else if (rc != 0)
      error = "returned status " + std::to_string(rc);
    return error.empty();
  };

  double ignored_event, ignored_host;
  for (int i = 0; i < proc.warmup; ++i) {
    for (const auto& in : sets) {
      if (!timed_call(baseline_->launch(), in, *base_out, &ignored_event, &ignored_host))
        return Finish("error", "the baseline failed while timing workload " + w.name + ": " + error);
      if (!timed_call(candidate_->launch(), in, *cand_out, &ignored_event, &ignored_host))
        return Finish("runtime_error", "the candidate failed while timing workload " + w.name + ": " + error);
    }
  }

  TimingRecord t;
  t.workload = w.name;
  t.method = proc.method;
  t.statistic = proc.statistic;
  std::vector<double> base_host;
  // Every timed iteration gets inputs of new contents (refilled outside the timed window from
  // seeds drawn now), so no answer kept from an earlier call is right again; a few iterations,
  // drawn at random, have their outputs checked once the call returned; and the L2 state a
  // candidate can leave behind (a persisting carve-out, an access-policy window) is reset before
  // each. The device memory free before and after the loop shows a cache of answers growing.
  const uint64_t refill_seed = SecureRandom64() & ((uint64_t{1} << 48) - 1);
  const double audit_p = AuditProbability(proc);
  int audits = 0, l2_resets = 0, last_iteration = -1;
  size_t free_before = 0, free_after = 0, total_mem = 0;
  cudaMemGetInfo(&free_before, &total_mem);
  Mark("loop-start " + w.name);
  auto loop_start = Clock::now();
  for (int i = 0; i < proc.max_reps; ++i) {
    DeviceTensors& in = sets[static_cast<size_t>(i) % sets.size()];
    if (!RefillInputs(w, refill_seed + static_cast<uint64_t>(i), &in) || !ResetL2State(&l2_resets)) return false;
    if (cupti_samples) (void)tracer_->Collect();  // not the refill's kernels
    double ce, ch, be, bh;
    bool ok;
    if (i % 2 == 0) {
      ok = timed_call(baseline_->launch(), in, *base_out, &be, &bh) &&
           timed_call(candidate_->launch(), in, *cand_out, &ce, &ch);
    } else {
      ok = timed_call(candidate_->launch(), in, *cand_out, &ce, &ch) &&
           timed_call(baseline_->launch(), in, *base_out, &be, &bh);
    }
    if (!ok) return Finish("runtime_error", "a call failed while timing workload " + w.name + ": " + error);
    last_iteration = i;
    if (static_cast<double>(SecureRandom64() >> 11) * 0x1.0p-53 < audit_p) {
      ++audits;
      if (!AuditTimedCall(w, i, in, *cand_out, *expected)) return false;
    }
    t.candidate_ms.push_back(ce);
    t.baseline_ms.push_back(be);
    t.host_ms.push_back(ch);
    base_host.push_back(bh);
    int n = i + 1;
    if (!proc.adaptive) continue;
    if (MsSince(loop_start) > proc.max_seconds * 1000 && n >= 3) break;
    if (n >= proc.min_reps && n % 5 == 0 &&
        Summarize(t.candidate_ms).RelativeHalfWidth() <= req_.timing.target_rel_ci &&
        Summarize(t.baseline_ms).RelativeHalfWidth() <= req_.timing.target_rel_ci)
      break;
  }
  t.loop_wall_ms = MsSince(loop_start);
  Mark("loop-end " + w.name);
  // At least one audit: the last iteration's inputs and output are still as the call left them.
  if (audits == 0 && last_iteration >= 0) {
    ++audits;
    if (!AuditTimedCall(w, last_iteration, sets[static_cast<size_t>(last_iteration) % sets.size()], *cand_out,
                        *expected))
      return false;
  }
  cudaMemGetInfo(&free_after, &total_mem);
  const int64_t growth = static_cast<int64_t>(free_before) - static_cast<int64_t>(free_after);
  int64_t output_bytes = 0;
  for (const auto& o : w.outputs) output_bytes += Numel(o.shape) * static_cast<int64_t>(DTypeSize(o.dtype));
  result_.details["timed_calls"][w.name] = {
      {"audited", audits}, {"l2_state_resets", l2_resets}, {"device_memory_growth_bytes", growth}};
  if (l2_resets > 0)
    result_.warnings.push_back(
        "the candidate left a persisting-L2 carve-out or an access-policy window set; kpilot "
        "reset it before every timed call of workload " +
        w.name);
  if (growth > std::max<int64_t>(int64_t{64} << 20, 4 * output_bytes))
    return Finish("suspicious",
                  "while timing workload " + w.name + " the candidate kept " + std::to_string(growth >> 20) +
                      " MiB more device memory than before the timed "
                      "calls (outputs are " +
                      std::to_string(output_bytes >> 20) + " MiB): a store of answers growing with every call");

  // Clock 2 of 3: CUPTI's kernel spans for a few candidate-only calls.
  // Every one of these calls must launch the same kernels: a call that does the work of several
  // (or of none) shows as a different sequence.
  if (tracer_) {
    std::vector<std::string> first_sequence;
    for (int i = 0; i < 10; ++i) {
      double ev, host;
      if (!RefillInputs(w, refill_seed + static_cast<uint64_t>(proc.max_reps + i), &sets[0]) ||
          !ResetL2State(&l2_resets))
        return false;
      (void)tracer_->Collect();
      if (!timed_call(candidate_->launch(), sets[0], *cand_out, &ev, &host))
        return Finish("runtime_error", "the candidate failed while tracing workload " + w.name + ": " + error);
      auto trace = tracer_->Collect();
      if (!trace.ok()) break;
      std::vector<std::string> sequence = KernelSequence(*trace);
      if (i == 0) {
        first_sequence = sequence;
      } else if (sequence != first_sequence) {
        result_.details["kernel_sequences"][w.name] = {{"call_1", first_sequence},
                                                       {"call_" + std::to_string(i + 1), sequence}};
        return Finish("suspicious", "on workload " + w.name +
                                        " the candidate's calls launched different kernels (call 1: " +
                                        Listed(first_sequence) + "; call " + std::to_string(i + 1) + ": " +
                                        Listed(sequence) + "): one call doing the work of several, or of none");
      }
      TraceSummary sum = SummarizeTrace(WithoutFlushKernels(*trace), stream_id_);
      if (sum.kernels_off_stream > 0) {
        result_.details["off_stream_kernels"] = sum.off_stream_kernel_names;
        return Finish("suspicious", "while timing workload " + w.name + " the candidate ran " +
                                        std::to_string(sum.kernels_off_stream) +
                                        " kernel(s) outside the stream it was given");
      }
      // Kernel time only: the trace also holds the L2-flush memset that precedes each call.
      t.cupti_ms.push_back(sum.kernel_busy_ns / 1e6);
    }
  }
  // The three clocks must agree: events on the stream, CUPTI spans, and host clocks.
  double ev_med = Median(t.candidate_ms), host_med = Median(t.host_ms),
         base_gap = Median(base_host) - Median(t.baseline_ms);
  double gap = host_med - ev_med;
  result_.details["clocks"][w.name] = {{"event_median_ms", ev_med},
                                       {"host_median_ms", host_med},
                                       {"cupti_median_ms", t.cupti_ms.empty() ? 0.0 : Median(t.cupti_ms)},
                                       {"loop_wall_ms", t.loop_wall_ms},
                                       {"baseline_host_gap_ms", base_gap}};
  if (gap > 0.1 + 0.5 * ev_med && gap > 3 * std::max(0.0, base_gap) + 0.05)
    return Finish("suspicious", "on workload " + w.name + " the host clock (device synchronized) shows " +
                                    std::to_string(host_med) + " ms per call but events on the given stream only " +
                                    std::to_string(ev_med) + " ms: the candidate's work is not all on its stream");
  if (!t.cupti_ms.empty() && Median(t.cupti_ms) > 2 * ev_med + 0.02)
    return Finish("suspicious", "on workload " + w.name + " CUPTI measured the candidate's kernels at " +
                                    std::to_string(Median(t.cupti_ms)) + " ms per call but the stream's events at " +
                                    std::to_string(ev_med) + " ms: the timer disagrees with the hardware trace");
  double host_sum = 0;
  for (double h : t.host_ms) host_sum += h;
  if (host_sum > t.loop_wall_ms * 1.05 + 1)
    return Finish("suspicious", "on workload " + w.name + " the per-call host times add up to more than the loop took");

  // The physical floor from the measured ceilings.
  double floor_ms = 0;
  std::string floor_why;
  if (w.min_bytes > 0 && result_.calibration.dram_bytes_per_s > 0) {
    floor_ms = w.min_bytes / result_.calibration.dram_bytes_per_s * 1e3;
    floor_why = "minimum bytes / measured DRAM bandwidth";
  }
  // The FP32 rate bounds only work that must run on the FP32 pipes: fp32/fp64 compute with no
  // lower-precision float input (bf16 or fp8 operands may legitimately use tensor cores).
  DType cp = req_.compute_precision.value_or(w.outputs.empty() ? DType::kF32 : w.outputs.front().dtype);
  bool fp32_work = cp == DType::kF32 || cp == DType::kF64;
  for (const auto& in : w.inputs)
    if (IsFloat(in.dtype) && in.dtype != DType::kF32 && in.dtype != DType::kF64) fp32_work = false;
  if (fp32_work && w.flops > 0 && result_.calibration.fp32_flops_per_s > 0) {
    double f = w.flops / result_.calibration.fp32_flops_per_s * 1e3;
    if (f > floor_ms) {
      floor_ms = f;
      floor_why = "flops / measured FP32 peak";
    }
  }
  result_.details["floor_ms"][w.name] = {{"floor_ms", floor_ms}, {"from", floor_why}};
  double cand_med = Median(t.candidate_ms);
  if (floor_ms > 0 && cand_med < 0.8 * floor_ms)
    return Finish("suspicious", "on workload " + w.name + " the candidate takes " + std::to_string(cand_med) +
                                    " ms, below the physical floor of " + std::to_string(floor_ms) + " ms (" +
                                    floor_why + "): it cannot have done the work");

  if (req_.energy && !MeasureEnergy(w, &t)) return false;
  result_.timings.push_back(std::move(t));
  return true;
}

bool CudaWorker::MeasureEnergy(const RunWorkload& w, TimingRecord* t) {
  if (!nvml_ || nvml_index_ < 0) {
    result_.warnings.push_back("energy unavailable: NVML is not usable here");
    return true;
  }
  report_.Phase("energy", "workload " + w.name);
  std::vector<kpilot_scalar> scalars = Scalars(w);
  auto in = MakeInputs(w, 1000);
  auto out = MakeOutputs(w, false);
  if (!in.ok() || !out.ok()) return Finish("error", "allocating energy buffers failed");
  cudaStream_t s = stream_->get();
  // Repeated calls for at least one second per side, so the board sensor's sampling averages out.
  auto measure = [&](kpilot_launch_fn fn, double* joules_per_call, double* watts) {
    auto e0 = nvml_->TotalEnergyMillijoules(nvml_index_);
    auto t0 = Clock::now();
    int64_t calls = 0;
    while (MsSince(t0) < 1000 || calls < 3) {
      for (int k = 0; k < 16; ++k, ++calls)
        fn(in->tensors.data(), static_cast<int>(in->tensors.size()), out->tensors.data(),
           static_cast<int>(out->tensors.size()), scalars.data(), static_cast<int>(scalars.size()), s);
      cudaStreamSynchronize(s);
    }
    double seconds = MsSince(t0) / 1e3;
    auto e1 = nvml_->TotalEnergyMillijoules(nvml_index_);
    if (!e0.ok() || !e1.ok()) return false;
    double joules = static_cast<double>(*e1 - *e0) / 1e3;
    *joules_per_call = joules / static_cast<double>(calls);
    *watts = joules / seconds;
    return true;
  };
  if (!measure(candidate_->launch(), &t->joules_per_call, &t->watts) ||
      !measure(baseline_->launch(), &t->baseline_joules_per_call, &t->baseline_watts))
    result_.warnings.push_back("NVML energy reads failed on workload " + w.name);
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) return Finish("runtime_error", "CUDA error while measuring energy: " + CudaErrorText(e));
  return true;
}

}  // namespace kpilot
