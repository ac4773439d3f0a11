// The cuda backend's correctness trials (CheckWorkload): the candidate against the reference on
// every workload and seed, its launch trace, the libraries it brought in, guard bytes, the outputs'
// agreement and precision, and inputs left unchanged. Timing (timing_cuda.cc) follows a pass.
#include <algorithm>
#include <cmath>
#include <regex>

#include "core/stats.h"
#include "runner/checks.h"
#include "runner/worker_cuda.h"

namespace kpilot {
namespace {

std::string Basename(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Unit roundoff of a float type (half the machine epsilon).
double UnitRoundoff(DType t) { return DTypeEpsilon(t) / 2; }

}  // namespace

bool IsVendorLibrary(const std::string& name) {
  static const std::regex kVendor("cublas|cudnn|cutlass|cufft|cusparse|cusolver|cutensor|nvjet|curand",
                                  std::regex::icase);
  return std::regex_search(name, kVendor);
}

void DropRunnerSync(LaunchTrace* trace) {
  auto last = trace->syncs.end();
  for (auto it = trace->syncs.begin(); it != trace->syncs.end(); ++it)
    if (it->kind == "context" && (last == trace->syncs.end() || it->start_ns > last->start_ns)) last = it;
  if (last != trace->syncs.end()) trace->syncs.erase(last);
}

std::vector<std::string> CudaWorker::LibrariesLoaded() const {
  std::vector<std::string> out;
  for (const auto& name : LoadedObjects())
    if (!libraries_before_.count(name) && name != req_.candidate_object) out.push_back(Basename(name));
  return out;
}

bool CudaWorker::CheckWorkload(const RunWorkload& w) {
  std::vector<kpilot_scalar> scalars = Scalars(w);
  for (uint64_t seed : req_.seeds) {
    std::string where = "workload " + w.name + ", seed " + std::to_string(seed);
    auto inputs = MakeInputs(w, seed);
    if (!inputs.ok()) return Finish("error", inputs.status().message());
    std::vector<uint64_t> hashes;
    for (size_t i = 0; i < inputs->buffers.size(); ++i) {
      uint64_t h = 0;
      DeviceHash(inputs->buffers[i].get(), inputs->buffers[i].bytes(), &h, stream_->get());
      hashes.push_back(h);
    }
    result_.phase = "reference";
    report_.Phase("reference", where);
    auto expected = MakeOutputs(w, false);
    if (!expected.ok()) return Finish("error", expected.status().message());
    std::string error;
    Call(reference_->launch(), *inputs, *expected, scalars, &error);
    if (!error.empty()) return Finish("error", "the task's reference failed on " + where + ": " + error);

    result_.phase = "correctness";
    report_.Phase("correctness", where);
    // A fresh allocation while the reference's outputs are still held: a new address, poisoned.
    auto actual = MakeOutputs(w, true);
    if (!actual.ok()) return Finish("error", actual.status().message());
    if (tracer_) (void)tracer_->Collect();  // drop what came before the call
    Call(candidate_->launch(), *inputs, *actual, scalars, &error);
    if (!error.empty()) return Finish("runtime_error", "the candidate failed on " + where + ": " + error);
    if (tracer_) {
      auto trace = tracer_->Collect();
      if (trace.ok()) {
        DropRunnerSync(&*trace);
        TraceSummary s = SummarizeTrace(*trace, stream_id_);
        // The first call of every workload, and up to 6 calls in all: each workload's kernels
        // and launches are what its profile reads (a counter profile takes an evaluation only
        // with the profiled workload's trace: with only the first six calls traced, sgemm's third
        // workload had none).
        bool first_of_workload = true;
        for (const auto& t : trace_json_) first_of_workload = first_of_workload && t.value("workload", "") != w.name;
        if (trace_json_.size() < 6 || first_of_workload) {
          // Bounded: a candidate launching thousands of kernels per call must not flood the result.
          LaunchTrace kept = *trace;
          size_t total = kept.kernels.size();
          if (total > 512) kept.kernels.resize(512);
          trace_json_.push_back({{"call", where},
                                 {"workload", w.name},
                                 {"seed", seed},
                                 {"trace", ToJson(kept)},
                                 {"kernels_total", total}});
        }
        for (const auto& k : s.library_kernels)
          if (std::find(library_use_.begin(), library_use_.end(), "kernel " + k) == library_use_.end())
            library_use_.push_back("kernel " + k);
        if (s.kernels_off_stream > 0) {
          std::string names;
          for (const auto& n : s.off_stream_kernel_names) names += (names.empty() ? "" : ", ") + n;
          result_.details["off_stream_kernels"] = s.off_stream_kernel_names;
          return Finish("suspicious", "the candidate ran " + std::to_string(s.kernels_off_stream) +
                                          " kernel(s) outside the stream it was given on " + where + " (" + names +
                                          "): all work must go on the given stream, or events on it miss the work");
        }
      }
    }
    for (const auto& lib : LibrariesLoaded())
      if (IsVendorLibrary(lib) && std::find(library_use_.begin(), library_use_.end(), lib) == library_use_.end())
        library_use_.push_back(lib);
    if (!library_use_.empty()) {
      result_.details["library_use"] = library_use_;
      if (!req_.libraries) {
        std::string what;
        for (const auto& l : library_use_) what += (what.empty() ? "" : ", ") + l;
        return Finish("incorrect",
                      "the candidate uses a vendor library (" + what + ") but the task says libraries = false");
      }
    }

    for (size_t i = 0; i < w.outputs.size(); ++i) {
      const RunTensor& o = w.outputs[i];
      int64_t n = Numel(o.shape);
      DeviceCompareStats st;
      int e = DeviceCompare(o.dtype, actual->tensors[i].data, expected->tensors[i].data, n, o.tolerance.atol,
                            o.tolerance.rtol, &st, stream_->get());
      if (e)
        return Finish("runtime_error", "comparing output " + o.name + " on " + where +
                                           " failed: " + CudaErrorText(static_cast<cudaError_t>(e)));
      CheckRecord c;
      c.workload = w.name;
      c.seed = seed;
      c.output = o.name;
      c.numel = n;
      c.mismatches = st.mismatches;
      c.max_abs_error = st.nonfinite_out > 0 ? INFINITY : st.max_abs;
      c.max_rel_error = st.nonfinite_out > 0 ? INFINITY : st.max_rel;
      c.first_bad_index = st.first_bad;
      if (st.first_bad >= 0) {
        double v[1], x[1];
        DeviceGatherAsDouble(o.dtype,
                             static_cast<const char*>(actual->tensors[i].data) + st.first_bad * DTypeSize(o.dtype), 1,
                             1, v, stream_->get());
        DeviceGatherAsDouble(o.dtype,
                             static_cast<const char*>(expected->tensors[i].data) + st.first_bad * DTypeSize(o.dtype), 1,
                             1, x, stream_->get());
        c.first_bad_value = v[0];
        c.first_bad_expected = x[0];
      }
      c.ok = MismatchesAllowed(st.mismatches, n, o.tolerance);
      uint64_t bad_canary = 0, bad_canary_after = 0;
      const char* base = static_cast<const char*>(actual->buffers[i].get());
      size_t bytes = static_cast<size_t>(n) * DTypeSize(o.dtype);
      DeviceCountNot(base, kCanaryBytes, kCanaryByte, &bad_canary, stream_->get());
      DeviceCountNot(base + kCanaryBytes + bytes, kCanaryBytes, kCanaryByte, &bad_canary_after, stream_->get());
      c.guards_intact = bad_canary == 0 && bad_canary_after == 0;
      result_.checks.push_back(c);
      if (!c.guards_intact)
        return Finish("incorrect", "the candidate wrote outside output \"" + o.name + "\" on " + where + " (" +
                                       std::to_string(bad_canary + bad_canary_after) + " canary bytes changed)");
      if (!c.ok)
        return Finish("incorrect", "output \"" + o.name + "\" differs from the reference on " + where + ": " +
                                       std::to_string(st.mismatches) + " of " + std::to_string(n) +
                                       " elements out of tolerance");
      // Inside the tolerance, but not the same function: constant or near-zero where the
      // reference is not (a loose atol would otherwise pass them).
      bool ref_varies = st.ref_max > st.ref_min;
      if (IsFloat(o.dtype) && n > 1 && ref_varies && st.out_max == st.out_min) {
        result_.checks.back().ok = false;
        return Finish("incorrect", "output \"" + o.name + "\" is constant (" + std::to_string(st.out_min) + ") on " +
                                       where + " where the reference varies from " + std::to_string(st.ref_min) +
                                       " to " + std::to_string(st.ref_max));
      }
      double rel_l2 = st.sum_sq_ref > 0 ? std::sqrt(st.sum_sq_diff / st.sum_sq_ref) : 0;
      if (IsFloat(o.dtype) && rel_l2 > 0.1) {
        result_.checks.back().ok = false;
        return Finish("incorrect", "output \"" + o.name + "\" is far from the reference in aggregate on " + where +
                                       " (relative L2 error " + std::to_string(rel_l2) +
                                       ") although each element is inside atol/rtol: a near-zero or degenerate "
                                       "output passing only because the tolerance is loose");
      }
      // Lowered precision: the median relative error over a sample, against what the declared
      // compute precision produces. Elements near zero are skipped (cancellation).
      DType cp = req_.compute_precision.value_or(o.dtype);
      if (IsFloat(o.dtype) && IsFloat(cp) && n >= 256) {
        int64_t count = std::min<int64_t>(n, 65536), stride = n / count;
        std::vector<double> got(static_cast<size_t>(count)), want(static_cast<size_t>(count));
        DeviceGatherAsDouble(o.dtype, actual->tensors[i].data, count, stride, got.data(), stream_->get());
        DeviceGatherAsDouble(o.dtype, expected->tensors[i].data, count, stride, want.data(), stream_->get());
        std::vector<double> rel;
        for (int64_t k = 0; k < count; ++k)
          if (std::isfinite(want[k]) && std::fabs(want[k]) > 1e-3 * st.max_abs_ref)
            rel.push_back(std::fabs(got[k] - want[k]) / std::fabs(want[k]));
        double median_rel = rel.size() >= 64 ? Median(rel) : 0;
        double limit = 256 * std::max(UnitRoundoff(cp), UnitRoundoff(o.dtype));
        result_.details["precision"][w.name][o.name] = {
            {"median_rel_error", median_rel}, {"limit", limit}, {"compute_precision", DTypeName(cp)}};
        if (median_rel > limit) {
          result_.checks.back().ok = false;
          return Finish("incorrect", "output \"" + o.name + "\" has a median relative error of " +
                                         std::to_string(median_rel) + " on " + where + ", far above what " +
                                         std::string(DTypeName(cp)) + " arithmetic produces (limit " +
                                         std::to_string(limit) + "): lowered precision");
        }
      }
    }
    for (size_t i = 0; i < inputs->buffers.size(); ++i) {
      uint64_t h = 0;
      DeviceHash(inputs->buffers[i].get(), inputs->buffers[i].bytes(), &h, stream_->get());
      if (h != hashes[i])
        return Finish("incorrect", "the candidate modified input \"" + w.inputs[i].name + "\" on " + where +
                                       " — inputs are read-only");
    }
  }
  return true;
}

}  // namespace kpilot
