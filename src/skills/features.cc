// Features of a kernel's source, for retrieval's requires/conflicts/provides (skills.h).
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "skills/skills.h"

namespace kpilot {
namespace {

// The source without comments, so a mechanism named in prose is not taken for one in code.
std::string StripComments(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.compare(i, 2, "//") == 0) {
      while (i < s.size() && s[i] != '\n') ++i;
      if (i < s.size()) out += '\n';
    } else if (s.compare(i, 2, "/*") == 0) {
      size_t end = s.find("*/", i + 2);
      i = end == std::string_view::npos ? s.size() : end + 1;
      out += ' ';
    } else {
      out += s[i];
    }
  }
  return out;
}

struct Marker {
  const char* feature;
  std::regex pattern;
};

const std::vector<Marker>& Markers() {
  static const std::vector<Marker> markers = [] {
    auto re = [](const char* p) { return std::regex(p, std::regex::ECMAScript | std::regex::optimize); };
    return std::vector<Marker>{
        // A two-dimensional shared array: a tile (a 1-D one is a reduction's scratch).
        {"smem-tile", re(R"(__shared__[^;]*\[[^\]]+\]\s*\[[^\]]+\])")},
        {"warp-reduce", re(R"(__shfl_(xor|down|up)_sync)")},
        {"vector-global-128", re(R"(\b(float4|int4|uint4|double2|longlong2)\b)")},
        {"tensor-core-mma", re(R"(wmma::|mma\.sync|\bmma_sync\b|\bwgmma\b)")},
        {"wgmma", re(R"(\bwgmma\b)")},
        {"tma", re(R"(cp\.async\.bulk|CUtensorMap|cuTensorMapEncode)")},
        {"async-copy-pipeline", re(R"(cp\.async\.(ca|cg)|__pipeline_memcpy_async|cuda::memcpy_async)")},
        {"launch-bounds", re(R"(__launch_bounds__)")},
        {"fast-math", re(R"(\b__(expf|exp10f|fdividef|sinf|cosf|logf|log2f|powf)\b|tanh\.approx)")},
        {"cuda-graph", re(R"(\bcudaGraph(Launch|Instantiate|ExecUpdate)\b)")},
        {"l2-persistence", re(R"(accessPolicyWindow)")},
        {"grid-stride", re(R"(gridDim\.x\s*\*\s*blockDim\.x|blockDim\.x\s*\*\s*gridDim\.x)")},
        {"readonly-loads", re(R"(__ldg\s*\(|const\s+\w+\s*\*\s*__restrict__)")},
        {"unrolled-loops", re(R"(#\s*pragma\s+unroll)")},
        // A loop stepping by the block's size: the block's threads walk a row or array side by
        // side, consecutive threads on consecutive elements.
        {"coalesced-global", re(R"(for\s*\([^;]*;[^;]*;[^)]*\+=\s*(blockDim\.x|BLOCK\w*)\b)")},
    };
  }();
  return markers;
}

}  // namespace

std::set<std::string> DetectFeatures(std::string_view source) {
  const std::string code = StripComments(source);
  std::set<std::string> found;
  for (const Marker& m : Markers())
    if (std::regex_search(code, m.pattern)) found.insert(m.feature);
  // Warp shuffles combined across warps through shared memory: the two-level block reduction.
  if (found.count("warp-reduce") && code.find("__shared__") != std::string::npos &&
      code.find("__syncthreads") != std::string::npos)
    found.insert("block-reduce");
  if (found.count("grid-stride")) found.insert("coalesced-global");
  return found;
}

}  // namespace kpilot
