// uncoalesced-global-access: global loads or stores touch more 32-byte sectors per request than
// the access width needs (KernelPro's Uncoalesced: > 1.2× the ideal).
#include <cmath>

#include "profile/tools/tools.h"

namespace kpilot {
namespace {

constexpr double kTrigger = 1.2;  // × the ideal sectors per request
constexpr double kFull = 4.0;     // a warp touching 4× the sectors it needs: severity 1

struct Direction {
  const char* name;  // "loads" | "stores"
  const char* sectors;
  const char* requests;
};

// A fully coalesced warp request of 32 threads × W bytes covers W 32-byte sectors: 4 for
// 32-bit, 8 for 64-bit, 16 for 128-bit accesses. With SASS, the ideal is
// the instruction-count-weighted mean over the widths the kernel uses; without it, 32-bit.
double IdealSectors(const ProfileContext& ctx, bool loads, std::string* basis) {
  if (ctx.static_profile && ctx.static_profile->have_sass) {
    const InstructionMix& m = ctx.static_profile->mix;
    int n32 = loads ? m.global_loads_32 : m.global_stores_32;
    int n64 = loads ? m.global_loads_64 : m.global_stores_64;
    int n128 = loads ? m.global_loads_128 : m.global_stores_128;
    int n = n32 + n64 + n128;
    if (n > 0) {
      *basis = "SASS widths: " + std::to_string(n32) + "×32-bit, " + std::to_string(n64) + "×64-bit, " +
               std::to_string(n128) + "×128-bit";
      return (4.0 * n32 + 8.0 * n64 + 16.0 * n128) / n;
    }
  }
  *basis = "32-bit accesses assumed, no SASS";
  return 4.0;
}

class UncoalescedGlobalAccessTool : public BuiltinTool {
 public:
  UncoalescedGlobalAccessTool()
      : BuiltinTool("uncoalesced-global-access",
                    "global memory sectors per request above 1.2x the ideal for the access width", MemoryClasses(),
                    {metric::kGlobalLoadSectors, metric::kGlobalLoadRequests, metric::kGlobalStoreSectors,
                     metric::kGlobalStoreRequests}) {}

  std::optional<Finding> Run(const ProfileContext& ctx) const override {
    const Direction dirs[] = {{"loads", metric::kGlobalLoadSectors, metric::kGlobalLoadRequests},
                              {"stores", metric::kGlobalStoreSectors, metric::kGlobalStoreRequests}};
    nlohmann::json evidence = nlohmann::json::object();
    double worst = 0;
    std::string worst_text;
    for (const Direction& d : dirs) {
      auto sectors = ctx.Metric(d.sectors);
      auto requests = ctx.Metric(d.requests);
      if (!sectors || !requests || *requests <= 0) continue;
      std::string basis;
      double ideal = IdealSectors(ctx, std::string_view(d.name) == "loads", &basis);
      double per_request = *sectors / *requests;
      double ratio = per_request / ideal;
      evidence[d.sectors] = *sectors;
      evidence[d.requests] = *requests;
      evidence[std::string(d.name) + "_sectors_per_request"] = per_request;
      evidence[std::string(d.name) + "_ideal_sectors_per_request"] = ideal;
      evidence[std::string(d.name) + "_ideal_basis"] = basis;
      if (ratio > worst) {
        worst = ratio;
        worst_text = "Global " + std::string(d.name) + " move " + Num(per_request) +
                     " sectors per request against an ideal " + Num(ideal) + " (" + basis + "), " + Num(ratio) +
                     "× the ideal";
      }
    }
    if (worst <= kTrigger) return std::nullopt;
    evidence["ratio_to_ideal"] = worst;
    std::string guidance = worst_text +
                           ": a warp's addresses are scattered, so most of each 32-byte sector fetched is thrown "
                           "away. Make consecutive threads (threadIdx.x) access consecutive addresses — index the "
                           "contiguous (innermost) dimension with threadIdx.x, use structure-of-arrays instead of "
                           "arrays of structs, and where the access must be strided, load the tile coalesced into "
                           "shared memory and read it transposed from there.";
    return MakeFinding(SeverityRamp(worst, kTrigger, kFull), std::move(evidence), std::move(guidance),
                       {"coalescing", "shared-memory-tiling", "vector-loads-128bit"});
  }
};

}  // namespace

std::unique_ptr<Tool> MakeUncoalescedGlobalAccessTool() { return std::make_unique<UncoalescedGlobalAccessTool>(); }

}  // namespace kpilot
