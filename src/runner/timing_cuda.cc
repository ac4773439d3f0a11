// The cuda backend: timing (three procedures), the clock cross-checks, the physical floor and
// energy. Correctness comes first (worker_cuda.cc); a workload is timed only once it passed.
#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/stats.h"
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
  bool adaptive;        // stop once both medians' CIs are tight
  bool flush_l2;
  int input_sets;
  const char* statistic;
  const char* method;
};

Procedure ProcedureFor(const TimingConfig& t) {
  switch (t.mode) {
    case TimingMode::kKernelBench:
      return {3, 100, 100, 1e9, false, true, 1, "mean",
              "kernelbench: CUDA events on the given stream, L2 flushed before each trial, 3 warmup, 100 trials, "
              "mean; candidate and baseline interleaved"};
    case TimingMode::kFlashInfer:
      return {10, 150, 150, 1e9, false, true, 3, "median",
              "flashinfer: cold L2, 10 warmup, 50 iterations on each of 3 input sets (rotated), median; each sample "
              "is the CUPTI span from the first kernel's start to the last kernel's end of the call where CUPTI is "
              "available, else CUDA events; candidate and baseline interleaved"};
    case TimingMode::kDefault:
      break;
  }
  return {t.warmup, t.min_reps, t.max_reps, t.max_seconds, true, true, std::max(1, t.input_sets), "median",
          "default: L2 flushed (a 2x-L2 buffer read) before every call, CUDA events on the given stream, input sets "
          "rotated, candidate and baseline interleaved ABAB until both medians' 95% CIs are within the target"};
}

// The candidate's part of a trace: without the runner's own L2-flush kernels.
LaunchTrace WithoutFlushKernels(LaunchTrace t) {
  std::erase_if(t.kernels, [](const TraceKernel& k) { return k.name.find(kFlushKernelName) != std::string::npos; });
  return t;
}

}  // namespace

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
  if (!cand_out.ok() || !base_out.ok()) return Finish("error", "allocating timing outputs failed");
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
    if (sync != cudaSuccess) error = "CUDA error: " + CudaErrorText(sync);
    else if (ev != cudaSuccess) error = "CUDA error reading events: " + CudaErrorText(ev);
    else if (rc != 0) error = "returned status " + std::to_string(rc);
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
  Mark("loop-start " + w.name);
  auto loop_start = Clock::now();
  for (int i = 0; i < proc.max_reps; ++i) {
    const DeviceTensors& in = sets[static_cast<size_t>(i) % sets.size()];
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
    t.candidate_ms.push_back(ce);
    t.baseline_ms.push_back(be);
    t.host_ms.push_back(ch);
    base_host.push_back(bh);
    int n = i + 1;
    if (!proc.adaptive) continue;
    if (MsSince(loop_start) > proc.max_seconds * 1000 && n >= 3) break;
    if (n >= proc.min_reps && n % 5 == 0 && Summarize(t.candidate_ms).RelativeHalfWidth() <= req_.timing.target_rel_ci &&
        Summarize(t.baseline_ms).RelativeHalfWidth() <= req_.timing.target_rel_ci)
      break;
  }
  t.loop_wall_ms = MsSince(loop_start);
  Mark("loop-end " + w.name);

  // Clock 2 of 3: CUPTI's kernel spans for a few candidate-only calls.
  if (tracer_) {
    (void)tracer_->Collect();
    for (int i = 0; i < 10; ++i) {
      double ev, host;
      if (!timed_call(candidate_->launch(), sets[0], *cand_out, &ev, &host))
        return Finish("runtime_error", "the candidate failed while tracing workload " + w.name + ": " + error);
      auto trace = tracer_->Collect();
      if (!trace.ok()) break;
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
  double ev_med = Median(t.candidate_ms), host_med = Median(t.host_ms), base_gap = Median(base_host) - Median(t.baseline_ms);
  double gap = host_med - ev_med;
  result_.details["clocks"][w.name] = {{"event_median_ms", ev_med}, {"host_median_ms", host_med},
                                       {"cupti_median_ms", t.cupti_ms.empty() ? 0.0 : Median(t.cupti_ms)},
                                       {"loop_wall_ms", t.loop_wall_ms}, {"baseline_host_gap_ms", base_gap}};
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
