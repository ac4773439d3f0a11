// shared-bank-conflicts: shared-memory accesses replayed because several lanes of a warp hit
// the same bank.
#include <algorithm>
#include <tuple>

#include "profile/tools/tools.h"

namespace kpilot {
namespace {

constexpr double kTrigger = 0.10;  // share of shared-memory wavefronts that are conflict replays
constexpr double kFull = 0.60;

class SharedBankConflictsTool : public BuiltinTool {
 public:
  SharedBankConflictsTool()
      : BuiltinTool("shared-bank-conflicts", "more than 10% of shared-memory wavefronts are bank-conflict replays",
                    KernelClasses(),
                    {metric::kSharedLoadConflicts, metric::kSharedStoreConflicts, metric::kSharedLoadWavefronts,
                     metric::kSharedStoreWavefronts}) {}

  std::optional<Finding> Run(const ProfileContext& ctx) const override {
    double conflicts = 0, wavefronts = 0;
    nlohmann::json evidence = nlohmann::json::object();
    bool any = false;
    std::string parts;
    for (auto [c_name, w_name, label] :
         {std::tuple{metric::kSharedLoadConflicts, metric::kSharedLoadWavefronts, "loads"},
          std::tuple{metric::kSharedStoreConflicts, metric::kSharedStoreWavefronts, "stores"}}) {
      auto c = ctx.Metric(c_name);
      auto w = ctx.Metric(w_name);
      if (!c || !w) continue;
      any = true;
      conflicts += *c;
      wavefronts += *w;
      evidence[c_name] = *c;
      evidence[w_name] = *w;
      if (!parts.empty()) parts += ", ";
      parts += Num(*c) + " on " + label;
    }
    if (!any || wavefronts <= 0) return std::nullopt;
    double share = conflicts / wavefronts;
    if (share <= kTrigger) return std::nullopt;
    // Each access needs at least one wavefront; the replays are the conflicts.
    double accesses = std::max(1.0, wavefronts - conflicts);
    double ways = wavefronts / accesses;
    evidence["conflict_share"] = share;
    evidence["wavefronts_per_access"] = ways;
    std::string guidance = Pct(share * 100) + " of shared-memory wavefronts are bank-conflict replays (" + parts +
                           "; " + Num(ways) +
                           " wavefronts per access where 1 is conflict-free): lanes of a warp hit "
                           "the same 4-byte bank, so each access is serialized. Pad the shared tile's rows by one "
                           "element ([TILE][TILE + 1]) or XOR-swizzle the column index so the 32 lanes of a warp "
                           "fall in 32 different banks; for column-wise reads of a row-major tile, transpose on the "
                           "store instead.";
    return MakeFinding(SeverityRamp(share, kTrigger, kFull), std::move(evidence), std::move(guidance),
                       {"smem-padding-swizzle"});
  }
};

}  // namespace

std::unique_ptr<Tool> MakeSharedBankConflictsTool() { return std::make_unique<SharedBankConflictsTool>(); }

}  // namespace kpilot
