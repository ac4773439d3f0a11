// Parsing `cuobjdump -sass` listings. Pure: text in, functions out.
#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "core/text.h"
#include "toolchain/toolchain.h"

namespace kpilot {
namespace {

// One instruction line:
//   "        /*0070*/               @P0 EXIT ;                      /* 0x000000000000094d */"
// The second line of each 128-bit encoding ("   /* 0x000fea0003800000 */") has no offset and is
// not an instruction.
std::optional<SassInstruction> ParseInstructionLine(const std::string& line) {
  size_t open = line.find("/*");
  if (open == std::string::npos) return std::nullopt;
  size_t close = line.find("*/", open + 2);
  if (close == std::string::npos) return std::nullopt;
  std::string offset = line.substr(open + 2, close - open - 2);
  if (offset.empty() || offset.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
    return std::nullopt;  // "/* 0x... */" encoding words start with a space
  if (!Trim(line.substr(0, open)).empty()) return std::nullopt;
  std::string body = line.substr(close + 2);
  size_t encoding = body.find("/*");
  if (encoding != std::string::npos) body = body.substr(0, encoding);
  body = Trim(body);
  // Older listings wrap dual-issue groups in "{ ... }".
  if (!body.empty() && body.front() == '{') body = Trim(body.substr(1));
  if (!body.empty() && body.back() == '}') body = Trim(body.substr(0, body.size() - 1));
  if (!body.empty() && body.back() == ';') body = Trim(body.substr(0, body.size() - 1));
  if (body.empty()) return std::nullopt;

  SassInstruction ins;
  ins.offset = static_cast<uint32_t>(std::strtoul(offset.c_str(), nullptr, 16));
  ins.text = body;
  std::istringstream words(body);
  std::string word;
  words >> word;
  if (!word.empty() && word.front() == '@') {
    ins.predicate = word;
    words >> word;
  }
  ins.opcode = word;
  return ins;
}

}  // namespace

std::vector<SassFunction> ParseSass(const std::string& cuobjdump_output) {
  std::vector<SassFunction> functions;
  std::string arch;
  std::istringstream in(cuobjdump_output);
  std::string line;
  while (std::getline(in, line)) {
    std::string t = Trim(line);
    if (t.rfind("code for ", 0) == 0) {
      arch = Trim(t.substr(9));
      continue;
    }
    if (t.rfind("arch = ", 0) == 0) {
      arch = Trim(t.substr(7));
      continue;
    }
    if (t.rfind("Function : ", 0) == 0) {
      SassFunction f;
      f.name = Trim(t.substr(11));
      f.arch = arch;
      functions.push_back(std::move(f));
      continue;
    }
    if (functions.empty() || t.empty() || t.front() == '.') continue;  // .headerflags, "......"
    if (auto ins = ParseInstructionLine(line)) functions.back().instructions.push_back(std::move(*ins));
  }
  return functions;
}

std::vector<std::string> NarrowTensorCoreOps(const std::vector<SassFunction>& functions) {
  std::vector<std::string> found;
  for (const auto& f : functions) {
    for (const auto& ins : f.instructions) {
      const std::string& op = ins.opcode;
      const std::string base = op.substr(0, op.find('.'));
      bool narrow = false;
      if (base == "HMMA" || base == "HGMMA")
        narrow = op.find(".TF32") == std::string::npos;
      else if (base == "IMMA" || base == "IGMMA" || base == "QGMMA" || base == "OMMA" || base == "BMMA")
        narrow = true;
      if (!narrow) continue;
      std::string what = op + " in " + f.name;
      if (std::find(found.begin(), found.end(), what) == found.end()) found.push_back(what);
    }
  }
  return found;
}

}  // namespace kpilot
