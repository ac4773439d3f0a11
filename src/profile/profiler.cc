#include "profile/profiler.h"

#include "profile/ncu.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace kpilot {

KernelReport AnalyzeKernel(const ProfileContext& ctx, const std::vector<std::unique_ptr<Tool>>& tools, bool all_tools,
                           std::optional<Bottleneck> collected_for) {
  KernelReport r;
  r.kernel = ctx.kernel;
  r.roofline = ctx.roofline;
  r.context = ctx;
  bool all = all_tools || ctx.roofline.result == Bottleneck::kUnknown;
  std::vector<const Tool*> selected = SelectTools(tools, ctx.roofline.result, all);
  if (!all && collected_for && *collected_for != ctx.roofline.result) {
    // The counters were chosen for the stage-1 class: its tools run too (they have their data).
    for (const Tool* t : SelectTools(tools, *collected_for, *collected_for == Bottleneck::kUnknown))
      if (std::find(selected.begin(), selected.end(), t) == selected.end()) selected.push_back(t);
  }
  for (const Tool* t : selected) r.tools_run.push_back(t->id());
  r.findings = RunTools(selected, ctx);
  return r;
}

std::vector<KernelReport> AnalyzeImported(const std::vector<KernelMetrics>& rows,
                                          const std::vector<std::unique_ptr<Tool>>& tools, bool all_tools) {
  std::vector<KernelReport> reports;
  for (const auto& k : MergeInvocations(rows)) {
    ProfileContext ctx;
    ctx.kernel = k.kernel;
    ctx.metrics = k.metrics;
    if (auto it = k.metrics.find("launch__sm_count"); it != k.metrics.end())
      ctx.sm_count = static_cast<int>(it->second);
    RooflineInput in;
    ApplyMeasured(k.metrics, &in);
    if (auto it = k.metrics.find("gpu__time_duration.sum"); it != k.metrics.end()) in.time_ms = it->second / 1e6;
    ctx.roofline = ClassifyRoofline(in);
    reports.push_back(AnalyzeKernel(ctx, tools, all_tools));
  }
  return reports;
}

nlohmann::json ToJson(const KernelReport& r, bool raw_metrics) {
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : r.findings) findings.push_back(ToJson(f));
  const RooflineVerdict& v = r.roofline;
  nlohmann::json j = {{"kernel", r.kernel},
                      {"roofline",
                       {{"class", BottleneckName(v.result)},
                        {"analytic", BottleneckName(v.analytic)},
                        {"measured", BottleneckName(v.measured)},
                        {"arithmetic_intensity", v.arithmetic_intensity},
                        {"ridge_point", v.ridge_point},
                        {"floor_ms", v.floor_ms},
                        {"achieved_fraction", v.achieved_fraction},
                        {"ceiling", v.ceiling},
                        {"disagree", v.disagree},
                        {"explanation", v.explanation}}},
                      {"tools_run", r.tools_run},
                      {"findings", findings}};
  if (r.context.static_profile) {
    const auto& s = *r.context.static_profile;
    j["static"] = {{"registers", s.resources.registers},
                   {"shared_bytes", s.resources.shared_bytes},
                   {"spill_store_bytes", s.resources.spill_stores},
                   {"spill_load_bytes", s.resources.spill_loads},
                   {"sass", s.have_sass},
                   {"mix", ToJson(s.mix)}};
  }
  if (r.context.occupancy) {
    const auto& o = *r.context.occupancy;
    j["occupancy"] = {{"block_threads", o.block_threads},
                      {"blocks_per_sm", o.blocks_per_sm},
                      {"fraction", o.fraction},
                      {"limiter", o.limiter}};
  }
  if (raw_metrics) j["metrics"] = r.context.metrics;
  return j;
}

std::string RenderReport(const KernelReport& r, bool raw) {
  std::ostringstream out;
  const RooflineVerdict& v = r.roofline;
  out << "kernel     " << r.kernel << "\n";
  out << "class      " << BottleneckName(v.result);
  if (v.disagree)
    out << " (analytic: " << BottleneckName(v.analytic) << ", measured: " << BottleneckName(v.measured) << ")";
  out << "\n";
  if (!v.ceiling.empty()) {
    char buf[160];
    std::snprintf(buf, sizeof(buf), "ceiling    %s; floor %.4f ms; achieved %.0f%% of it\n", v.ceiling.c_str(),
                  v.floor_ms, 100 * v.achieved_fraction);
    out << buf;
  }
  if (!v.explanation.empty()) out << "           " << v.explanation << "\n";
  if (r.context.static_profile) {
    const auto& s = *r.context.static_profile;
    out << "static     " << s.resources.registers << " registers, " << s.resources.shared_bytes << " B shared, spills "
        << s.resources.spill_stores << "/" << s.resources.spill_loads << " B";
    if (r.context.occupancy)
      out << "; occupancy " << static_cast<int>(100 * r.context.occupancy->fraction + 0.5) << "% at "
          << r.context.occupancy->block_threads << " threads (limited by " << r.context.occupancy->limiter << ")";
    out << "\n";
    // What issues on the tensor cores, from the SASS: the first question of a GEMM-shaped kernel.
    if (s.have_sass) {
      const InstructionMix& m = s.mix;
      out << "sass       " << m.total << " instructions";
      if (m.hgmma + m.hmma + m.imma == 0) out << ", no tensor-core MMA";
      if (m.hgmma) out << ", " << m.hgmma << " HGMMA (warpgroup MMA)";
      if (m.hmma) out << ", " << m.hmma << " HMMA";
      if (m.imma) out << ", " << m.imma << " IMMA";
      if (m.async_copies) out << ", " << m.async_copies << " async copies";
      out << "\n";
    }
  }
  out << "tools      " << r.tools_run.size() << " run";
  if (r.findings.empty()) out << ", nothing found";
  out << "\n";
  int rank = 1;
  for (const auto& f : r.findings) {
    char sev[16];
    std::snprintf(sev, sizeof(sev), "%.2f", f.severity);
    out << "\n" << rank++ << ". [" << sev << "] " << f.id << "\n   " << f.guidance << "\n";
    if (!f.skills.empty()) {
      out << "   skills:";
      for (const auto& s : f.skills) out << " " << s;
      out << "\n";
    }
  }
  if (raw && !r.context.metrics.empty()) {
    out << "\nmetrics\n";
    for (const auto& [k, val] : r.context.metrics) out << "  " << k << " = " << val << "\n";
  }
  return out.str();
}

}  // namespace kpilot
