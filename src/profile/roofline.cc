// Stage 1 of profiling: the analytic roofline (the task's flops and bytes against the measured
// ceilings) and the measured one (ncu's throughput percentages), reconciled into one class.
#include "profile/roofline.h"

#include <algorithm>

#include <fmt/format.h>

namespace kpilot {
namespace {

constexpr double kLaunchShare = 0.20;      // KernelPro's LaunchOverhead trigger (> 20% of the call)
constexpr double kLatencyPct = 40;         // both throughputs below: neither unit is busy
constexpr double kMixedPct = 60;           // both throughputs at or above: both units are busy
constexpr double kLatencyAchieved = 0.10;  // without ncu: under 10% of the analytic ceiling …
constexpr double kShortCallMs = 0.05;      // … on a call shorter than 50 µs (a tiny kernel)

Bottleneck MeasuredClass(const RooflineInput& in) {
  const auto& sm = in.sm_throughput_pct;
  const auto& dram = in.dram_throughput_pct;
  if (sm && dram) {
    if (*sm < kLatencyPct && *dram < kLatencyPct) return Bottleneck::kLatency;
    if (*sm >= kMixedPct && *dram >= kMixedPct) return Bottleneck::kMixed;
    return *sm > *dram ? Bottleneck::kCompute : Bottleneck::kMemory;
  }
  // With one figure only, a busy unit still names the class; an idle one says nothing.
  if (sm && *sm >= kMixedPct) return Bottleneck::kCompute;
  if (dram && *dram >= kMixedPct) return Bottleneck::kMemory;
  return Bottleneck::kUnknown;
}

// 0.35 → "35%"; small shares keep two significant digits ("0.071%").
std::string Pct(double fraction) {
  double pct = fraction * 100;
  return pct >= 1 || pct == 0 ? fmt::format("{:.0f}%", pct) : fmt::format("{:.2g}%", pct);
}

// 201326592, "B" → "201.3 MB"; 1024, "FLOP" → "1.024 kFLOP".
std::string Si(double value, const char* unit) {
  static const char* kPrefixes[] = {"", "k", "M", "G", "T", "P"};
  int i = 0;
  while (value >= 1000 && i < 5) value /= 1000, ++i;
  return fmt::format("{:.4g} {}{}", value, kPrefixes[i], unit);
}

// Milliseconds, or microseconds below 0.1 ms.
std::string Ms(double ms) { return ms < 0.1 ? fmt::format("{:.4g} µs", ms * 1e3) : fmt::format("{:.4g} ms", ms); }

}  // namespace

RooflineVerdict ClassifyRoofline(const RooflineInput& in) {
  RooflineVerdict v;
  const double bw = in.dram_bytes_per_s, peak = in.peak_flops_per_s;
  if (in.min_bytes > 0) v.arithmetic_intensity = in.flops / in.min_bytes;
  if (peak > 0 && bw > 0) v.ridge_point = peak / bw;
  const double memory_ms = in.min_bytes > 0 && bw > 0 ? in.min_bytes / bw * 1e3 : 0;
  const double compute_ms = in.flops > 0 && peak > 0 ? in.flops / peak * 1e3 : 0;
  v.floor_ms = std::max(memory_ms, compute_ms);
  if (v.floor_ms > 0) {
    // Left of the ridge point (intensity below it) the bandwidth term is the larger one.
    const bool compute_side = compute_ms > 0 && compute_ms >= memory_ms;
    v.analytic = compute_side ? Bottleneck::kCompute : Bottleneck::kMemory;
    v.ceiling = compute_side ? "compute peak" : "DRAM bandwidth";
    if (in.time_ms > 0) v.achieved_fraction = v.floor_ms / in.time_ms;
  }
  v.measured = MeasuredClass(in);
  v.disagree = v.analytic != Bottleneck::kUnknown && v.measured != Bottleneck::kUnknown && v.analytic != v.measured;

  const bool launch = in.launch_overhead_share && *in.launch_overhead_share > kLaunchShare;
  const bool short_and_slow = v.analytic != Bottleneck::kUnknown && in.time_ms > 0 && in.time_ms < kShortCallMs &&
                              v.achieved_fraction < kLatencyAchieved;
  if (launch) {
    v.result = Bottleneck::kLaunch;
  } else if (v.measured == Bottleneck::kLatency || v.measured == Bottleneck::kMixed) {
    v.result = v.measured;  // classes only a measurement can see
  } else if (v.measured != Bottleneck::kUnknown) {
    v.result = v.disagree ? v.analytic : v.measured;
  } else if (short_and_slow) {
    v.result = Bottleneck::kLatency;
  } else {
    v.result = v.analytic;
  }

  // The explanation: what the work needs, what ncu saw, and why the verdict follows.
  std::string& e = v.explanation;
  if (v.floor_ms > 0) {
    if (memory_ms > 0 && compute_ms > 0) {
      e += fmt::format(
          "The work needs {} on at least {}: arithmetic intensity {:.3g} FLOP/byte against a ridge point of "
          "{:.3g} FLOP/byte ({}/s, {}/s), so the {} bounds it at {}.",
          Si(in.flops, "FLOP"), Si(in.min_bytes, "B"), v.arithmetic_intensity, v.ridge_point, Si(peak, "FLOP"),
          Si(bw, "B"), v.ceiling, Ms(v.floor_ms));
    } else if (memory_ms > 0) {
      e += fmt::format("The work moves at least {}; at {}/s the DRAM bandwidth bounds it at {}.", Si(in.min_bytes, "B"),
                       Si(bw, "B"), Ms(v.floor_ms));
    } else {
      e += fmt::format("The work needs {}; at {}/s the compute peak bounds it at {}.", Si(in.flops, "FLOP"),
                       Si(peak, "FLOP"), Ms(v.floor_ms));
    }
    if (in.time_ms > 0)
      e += fmt::format(" The call takes {}, {} of that ceiling.", Ms(in.time_ms), Pct(v.achieved_fraction));
  } else {
    e += "Without the task's flops or bytes and the measured ceilings there is no analytic roofline.";
    if (in.time_ms > 0) e += fmt::format(" The call takes {}.", Ms(in.time_ms));
  }

  if (in.sm_throughput_pct || in.dram_throughput_pct) {
    std::string sm = in.sm_throughput_pct ? fmt::format("{:.1f}%", *in.sm_throughput_pct) : "not measured";
    std::string dram = in.dram_throughput_pct ? fmt::format("{:.1f}%", *in.dram_throughput_pct) : "not measured";
    e += fmt::format(" ncu measures SM throughput {} and DRAM throughput {} of peak", sm, dram);
    switch (v.measured) {
      case Bottleneck::kLatency:
        e += fmt::format(": both under {:.0f}%, so neither unit is kept busy (latency-bound).", kLatencyPct);
        break;
      case Bottleneck::kMixed:
        e += fmt::format(": both at {:.0f}% or more (mixed).", kMixedPct);
        break;
      case Bottleneck::kCompute:
        e += ": the SM side is the busier (compute-bound).";
        break;
      case Bottleneck::kMemory:
        e += ": the memory side is the busier (memory-bound).";
        break;
      default:
        e += ", too little to classify.";
        break;
    }
  }

  if (launch) {
    e += fmt::format(
        " Launch overhead takes {} of the call across {} kernel launch(es), more than {}: "
        "the time goes between kernels, so the call is launch-bound.",
        Pct(*in.launch_overhead_share), in.kernels_per_call, Pct(kLaunchShare));
  }
  if (v.disagree) {
    if (v.measured == Bottleneck::kLatency || v.measured == Bottleneck::kMixed) {
      e += fmt::format(
          " The ridge point puts the work on the {} side; that ceiling ({}) still says how far it "
          "could go, while ncu's {} verdict says what holds this implementation back.",
          v.analytic == Bottleneck::kCompute ? "compute" : "memory", Ms(v.floor_ms), BottleneckName(v.measured));
    } else {
      e += fmt::format(
          " The analytic and measured classes disagree ({} vs {}); the analytic class wins, since it "
          "says how far this work could go, while ncu measures only how this implementation spends "
          "its time.",
          BottleneckName(v.analytic), BottleneckName(v.measured));
    }
  }
  if (!launch && v.measured == Bottleneck::kUnknown && short_and_slow) {
    e += fmt::format(" Under {} of the ceiling on a call shorter than {:.0f} µs: latency-bound.", Pct(kLatencyAchieved),
                     kShortCallMs * 1e3);
  }
  e += fmt::format(" Verdict: {}.", BottleneckName(v.result));
  if (!e.empty() && e.front() == ' ') e.erase(0, 1);
  return v;
}

}  // namespace kpilot
