// The ablation switches' effect on what a generator is shown (docs/bench.md).
#include "optimize/options.h"

namespace kpilot {

using nlohmann::json;

void ApplyAblations(const OptimizeOptions& o, ProposalContext* ctx) {
  if (!o.memory) ctx->memory_summary.clear();
  switch (o.feedback) {
    case FeedbackMode::kTools:
      ctx->profile_on_request = o.guidance == GuidanceMode::kOnRequest;
      return;
    case FeedbackMode::kNone:
      ctx->bottleneck.clear();
      ctx->findings.clear();
      ctx->parent_metrics.clear();
      return;
    case FeedbackMode::kRaw: {
      // The measured numbers stay; the tools' verdicts (class, findings, guidance) go, but what
      // each finding measured is kept as a counter set of its own.
      json m = ctx->parent_metrics.empty() ? json::object() : json::parse(ctx->parent_metrics, nullptr, false);
      if (!m.is_object()) m = json::object();
      m.erase("bottleneck");
      json counters = json::object();
      for (const auto& f : ctx->findings)
        if (f.evidence.is_object())
          for (const auto& [k, v] : f.evidence.items()) counters[k] = v;
      if (!counters.empty()) m["counters"] = counters;
      ctx->parent_metrics = m.empty() ? "" : m.dump();
      ctx->bottleneck.clear();
      ctx->findings.clear();
      return;
    }
  }
}

}  // namespace kpilot
