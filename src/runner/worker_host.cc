#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>

#include "core/stats.h"
#include "runner/checks.h"
#include "runner/kernel_object.h"
#include "runner/sweep.h"
#include "runner/worker.h"

namespace kpilot {
namespace {

constexpr size_t kGuardBytes = 256;  // multiple of 64, so data stays 64-byte aligned

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

// A host allocation with guard bytes before and after the data.
class GuardedBuffer {
 public:
  explicit GuardedBuffer(size_t bytes) : bytes_(bytes) {
    size_t total = (2 * kGuardBytes + bytes + 63) / 64 * 64;
    mem_.reset(static_cast<unsigned char*>(std::aligned_alloc(64, total)));
    if (!mem_) return;
    FillGuard(mem_.get(), kGuardBytes);
    FillGuard(mem_.get() + kGuardBytes + bytes, total - kGuardBytes - bytes);
    total_ = total;
  }
  bool ok() const { return mem_ != nullptr; }
  void* data() const { return mem_.get() + kGuardBytes; }
  size_t bytes() const { return bytes_; }
  bool GuardsIntact() const {
    return GuardIntact(mem_.get(), kGuardBytes) &&
           GuardIntact(mem_.get() + kGuardBytes + bytes_, total_ - kGuardBytes - bytes_);
  }

 private:
  std::unique_ptr<unsigned char, FreeDeleter> mem_;
  size_t bytes_ = 0;
  size_t total_ = 0;
};

// Allocates one guarded buffer per tensor; on failure names the tensor, its size and the limit
// in `failure` (kpilot's memory problem, not the candidate's).
std::vector<GuardedBuffer> AllocateAll(const std::vector<RunTensor>& specs, std::string* failure) {
  std::vector<GuardedBuffer> buffers;
  for (const auto& t : specs) {
    size_t bytes = static_cast<size_t>(Numel(t.shape)) * DTypeSize(t.dtype);
    buffers.emplace_back(bytes);
    if (!buffers.back().ok() && failure->empty())
      *failure = "cannot allocate " + std::to_string(bytes) + " bytes for tensor \"" + t.name +
                 "\" (host memory, or the runner's address-space limit)";
  }
  return buffers;
}

// One set of output buffers for a workload, with the tensor descriptors pointing into them.
struct OutputSet {
  std::vector<GuardedBuffer> buffers;
  std::vector<kpilot_tensor> tensors;
  std::string failure;
  OutputSet(const RunWorkload& w) : buffers(AllocateAll(w.outputs, &failure)) {
    for (size_t i = 0; i < w.outputs.size(); ++i) tensors.push_back(MakeTensor(w.outputs[i], buffers[i].data()));
  }
  void PoisonAll(const RunWorkload& w) {
    if (!failure.empty()) return;
    for (size_t i = 0; i < w.outputs.size(); ++i)
      Poison(w.outputs[i].dtype, buffers[i].data(), Numel(w.outputs[i].shape));
  }
};

struct InputSet {
  std::vector<GuardedBuffer> buffers;
  std::vector<kpilot_tensor> tensors;
  std::string failure;
  InputSet(const RunWorkload& w, uint64_t seed) : buffers(AllocateAll(w.inputs, &failure)) {
    for (size_t i = 0; i < w.inputs.size(); ++i) {
      if (failure.empty())
        FillInit(w.inputs[i].dtype, w.inputs[i].init, seed, i, buffers[i].data(), Numel(w.inputs[i].shape));
      tensors.push_back(MakeTensor(w.inputs[i], buffers[i].data()));
    }
  }
};

int Call(kpilot_launch_fn fn, const InputSet& in, const OutputSet& out, const std::vector<kpilot_scalar>& scalars) {
  return fn(in.tensors.data(), static_cast<int>(in.tensors.size()), out.tensors.data(),
            static_cast<int>(out.tensors.size()), scalars.data(), static_cast<int>(scalars.size()), nullptr);
}

double CallMs(kpilot_launch_fn fn, const InputSet& in, const OutputSet& out, const std::vector<kpilot_scalar>& scalars,
              int* rc) {
  auto t0 = std::chrono::steady_clock::now();
  *rc = Call(fn, in, out, scalars);
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

RunResult Fail(RunResult r, const std::string& status, const std::string& message) {
  r.status = status;
  r.message = message;
  return r;
}

// Seconds since the worker started at each step's end, as the cuda worker's details["timeline_s"]
// ("objects", "checks", "timing"): what share of a run was checks and timing proper.
class Timeline {
 public:
  void Stamp(const std::string& step) {
    steps_[step] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  nlohmann::json ToJson() const { return steps_; }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::map<std::string, double> steps_;
};

// The correctness trials and the timing of one candidate (an evaluation's body). `timeline` (may
// be null) gets the ends of the checks and of the timing.
RunResult CheckAndTime(const RunRequest& req, PhaseReporter& report, const KernelObject& reference,
                       const KernelObject& candidate, const KernelObject& baseline, Timeline* timeline = nullptr) {
  RunResult r;
  r.phase = "load";
  for (const auto& w : req.workloads) {
    std::vector<kpilot_scalar> scalars = MakeScalars(req, w);
    for (uint64_t seed : req.seeds) {
      std::string where = "workload " + w.name + ", seed " + std::to_string(seed);
      InputSet inputs(w, seed);
      if (!inputs.failure.empty()) return Fail(r, "error", inputs.failure);
      std::vector<std::vector<unsigned char>> snapshot;
      for (const auto& b : inputs.buffers) {
        const auto* p = static_cast<const unsigned char*>(b.data());
        snapshot.emplace_back(p, p + b.bytes());
      }
      r.phase = "reference";
      report.Phase("reference", where);
      OutputSet expected(w);
      if (!expected.failure.empty()) return Fail(r, "error", expected.failure);
      expected.PoisonAll(w);
      int rc = Call(reference.launch(), inputs, expected, scalars);
      if (rc != 0) return Fail(r, "error", "the task's reference returned " + std::to_string(rc) + " on " + where);

      r.phase = "correctness";
      report.Phase("correctness", where);
      OutputSet actual(w);  // a fresh allocation for every trial
      if (!actual.failure.empty()) return Fail(r, "error", actual.failure);
      actual.PoisonAll(w);
      rc = Call(candidate.launch(), inputs, actual, scalars);
      if (rc != 0)
        return Fail(r, "runtime_error", "the candidate returned status " + std::to_string(rc) + " on " + where);

      bool all_ok = true;
      for (size_t i = 0; i < w.outputs.size(); ++i) {
        const RunTensor& o = w.outputs[i];
        CheckRecord c =
            CompareOutput(o.dtype, actual.buffers[i].data(), expected.buffers[i].data(), Numel(o.shape), o.tolerance);
        c.workload = w.name;
        c.seed = seed;
        c.output = o.name;
        c.guards_intact = actual.buffers[i].GuardsIntact();
        if (!c.guards_intact) c.ok = false;
        all_ok = all_ok && c.ok;
        r.checks.push_back(c);
      }
      for (size_t i = 0; i < inputs.buffers.size(); ++i) {
        if (std::memcmp(inputs.buffers[i].data(), snapshot[i].data(), snapshot[i].size()) != 0)
          return Fail(
              r, "incorrect",
              "the candidate modified input \"" + w.inputs[i].name + "\" on " + where + " — inputs are read-only");
      }
      if (!all_ok) {
        // Earlier trials all passed, so the first failing record is from this one.
        const CheckRecord& bad =
            *std::find_if(r.checks.begin(), r.checks.end(), [](const CheckRecord& c) { return !c.ok; });
        if (!bad.guards_intact)
          return Fail(r, "incorrect",
                      "the candidate wrote outside output \"" + bad.output + "\" on " + where +
                          " (guard bytes around the buffer changed)");
        return Fail(r, "incorrect",
                    "output \"" + bad.output + "\" differs from the reference on " + where + ": " +
                        std::to_string(bad.mismatches) + " of " + std::to_string(bad.numel) +
                        " elements out of tolerance");
      }
    }
  }

  if (timeline) timeline->Stamp("checks");
  if (req.time) {
    r.phase = "timing";
    for (const auto& w : req.workloads) {
      if (!w.timed) continue;
      report.Phase("timing", "workload " + w.name);
      std::vector<kpilot_scalar> scalars = MakeScalars(req, w);
      InputSet inputs(w, req.seeds.empty() ? 1 : req.seeds.front());
      OutputSet cand_out(w), base_out(w);
      for (const std::string* f : {&inputs.failure, &cand_out.failure, &base_out.failure})
        if (!f->empty()) return Fail(r, "error", *f);
      int rc_base = 0, rc_cand = 0;
      for (int i = 0; i < req.timing.warmup && rc_base == 0 && rc_cand == 0; ++i) {
        CallMs(baseline.launch(), inputs, base_out, scalars, &rc_base);
        CallMs(candidate.launch(), inputs, cand_out, scalars, &rc_cand);
      }
      if (rc_base != 0)
        return Fail(
            r, "error",
            "the baseline returned status " + std::to_string(rc_base) + " while warming up on workload " + w.name);
      if (rc_cand != 0)
        return Fail(
            r, "runtime_error",
            "the candidate returned status " + std::to_string(rc_cand) + " while warming up on workload " + w.name);
      TimingRecord t;
      t.workload = w.name;
      t.method = "host steady_clock around each call; candidate and baseline interleaved ABAB";
      auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < req.timing.max_reps; ++i) {
        double b, c;
        if (i % 2 == 0) {
          b = CallMs(baseline.launch(), inputs, base_out, scalars, &rc_base);
          c = CallMs(candidate.launch(), inputs, cand_out, scalars, &rc_cand);
        } else {
          c = CallMs(candidate.launch(), inputs, cand_out, scalars, &rc_cand);
          b = CallMs(baseline.launch(), inputs, base_out, scalars, &rc_base);
        }
        if (rc_cand != 0)
          return Fail(r, "runtime_error",
                      "the candidate returned status " + std::to_string(rc_cand) + " while timing workload " + w.name);
        if (rc_base != 0)
          return Fail(r, "error",
                      "the baseline returned status " + std::to_string(rc_base) + " while timing workload " + w.name);
        t.candidate_ms.push_back(c);
        t.baseline_ms.push_back(b);
        int n = i + 1;
        double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (elapsed > req.timing.max_seconds && n >= 3) break;
        if (n >= req.timing.min_reps && n % 5 == 0 &&
            Summarize(t.candidate_ms).RelativeHalfWidth() <= req.timing.target_rel_ci &&
            Summarize(t.baseline_ms).RelativeHalfWidth() <= req.timing.target_rel_ci)
          break;
      }
      r.timings.push_back(std::move(t));
    }
    if (timeline) timeline->Stamp("timing");
  }
  r.phase = "done";
  r.status = "passed";
  r.message = "every output matched the reference on every workload and seed";
  return r;
}

// sweep_objects requests: each object as the candidate in turn (see runner/sweep.h). A host
// object cannot poison the process short of crashing it, which loses the batch (the caller
// retries its objects one per process).
RunResult Sweep(const RunRequest& req, PhaseReporter& report, const KernelObject& reference,
                const KernelObject& baseline) {
  SweepLog log(req.sweep_objects);
  const size_t n = req.sweep_objects.size();
  for (size_t i = 0; i < n && !log.stopped(); ++i) {
    report.Phase("sweep", "object " + std::to_string(i + 1) + "/" + std::to_string(n) + " " + req.sweep_objects[i]);
    auto object = KernelObject::Open(req.sweep_objects[i], "candidate");
    RunResult r = object.ok() ? CheckAndTime(req, report, reference, *object, baseline)
                              : Fail(RunResult{}, "runtime_error", object.status().message());
    log.Add(i, r);
    if (r.status == "error") log.Stop(i, r.message);
  }
  return log.Finish(RunResult{});
}

}  // namespace

RunResult RunHostWorker(const RunRequest& req, PhaseReporter& report) {
  Timeline timeline;
  RunResult r;
  r.phase = "load";
  report.Phase("load", "");
  auto reference = KernelObject::Open(req.reference_object, "reference");
  if (!reference.ok()) return Fail(r, "error", reference.status().message());
  auto baseline = KernelObject::Open(req.baseline_object, "baseline");
  if (!baseline.ok()) return Fail(r, "error", baseline.status().message());
  if (!req.sweep_objects.empty()) return Sweep(req, report, *reference, *baseline);
  auto candidate = KernelObject::Open(req.candidate_object, "candidate");
  if (!candidate.ok()) return Fail(r, "runtime_error", candidate.status().message());
  timeline.Stamp("objects");
  r = CheckAndTime(req, report, *reference, *candidate, *baseline, &timeline);
  timeline.Stamp("end");
  if (!r.details.is_object()) r.details = nlohmann::json::object();
  r.details["timeline_s"] = timeline.ToJson();
  return r;
}

namespace {

// The host backend keeps nothing between requests.
class HostSession : public WorkerSession {
 public:
  void Open(const RunRequest&) override {}
  RunResult Run(const RunRequest& request, PhaseReporter& reporter) override {
    return RunHostWorker(request, reporter);
  }
  std::string WhyNotAgain() override { return ""; }
};

}  // namespace

std::unique_ptr<WorkerSession> MakeHostSession() { return std::make_unique<HostSession>(); }

}  // namespace kpilot
