// Pure parsers of compiler output: `ptxas -v` resource reports, the first error of an nvcc / g++
// log, and `--version` banners. Text in, struct out; no I/O.
#include <cxxabi.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <memory>
#include <regex>
#include <sstream>

#include "core/fs.h"
#include "core/text.h"
#include "toolchain/toolchain.h"

namespace kpilot {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

std::string Demangle(const std::string& mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status),
                                             std::free);
  return status == 0 && out ? std::string(out.get()) : mangled;
}

// The text after "ptxas info    :" (any amount of padding), or nullopt for other lines.
std::optional<std::string> PtxasInfoBody(const std::string& line) {
  static const std::string kPrefix = "ptxas info";
  size_t at = line.find(kPrefix);
  if (at == std::string::npos) return std::nullopt;
  size_t colon = line.find(':', at + kPrefix.size());
  if (colon == std::string::npos) return std::nullopt;
  return Trim(line.substr(colon + 1));
}

// Splits "Used 10 registers, used 1 barriers, 1024 bytes smem, 372 bytes cmem[0]" into items and
// reads each "<number> <what>" pair.
void ApplyUsage(const std::string& body, KernelResources& k) {
  std::string rest = body;
  if (rest.rfind("Used ", 0) == 0) rest = rest.substr(5);
  std::istringstream items(rest);
  std::string item;
  while (std::getline(items, item, ',')) {
    item = Trim(item);
    if (item.rfind("used ", 0) == 0) item = item.substr(5);
    char* end = nullptr;
    long long n = std::strtoll(item.c_str(), &end, 10);
    if (end == item.c_str()) continue;
    std::string what = Trim(std::string(end));
    if (what == "registers")
      k.registers = static_cast<int>(n);
    else if (what == "barriers")
      k.barriers = static_cast<int>(n);
    else if (what == "bytes smem")
      k.shared_bytes = n;
    else if (what == "bytes cmem[0]")
      k.constant_bytes = n;
  }
}

struct FrameReport {
  int64_t stack = 0, spill_stores = 0, spill_loads = 0;
};

// "896 bytes stack frame, 720 bytes spill stores, 824 bytes spill loads"
std::optional<FrameReport> ParseFrameLine(const std::string& line) {
  static const std::regex kFrame(R"(^\s*(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  std::smatch m;
  if (!std::regex_search(line, m, kFrame)) return std::nullopt;
  return FrameReport{std::stoll(m[1]), std::stoll(m[2]), std::stoll(m[3])};
}

}  // namespace

// ptxas prints, per entry function and target:
//   Compiling entry function '<mangled>' for '<arch>'
//   Function properties for <mangled>
//       <n> bytes stack frame, <n> bytes spill stores, <n> bytes spill loads
//   Used <n> registers, used <n> barriers, <n> bytes smem, <n> bytes cmem[0]
// Device (non-entry) functions get a "Function properties" block too, without "Compiling entry";
// those are dropped. The properties are matched by name, so their order relative to
// "Compiling entry" does not matter.
std::vector<KernelResources> ParsePtxasReport(const std::string& log) {
  static const std::regex kEntry(R"(^Compiling entry function '([^']+)' for '([^']+)')");
  std::vector<KernelResources> kernels;
  std::map<std::string, FrameReport> frames;  // by mangled name, for the current arch
  std::string current_arch;
  int current = -1;           // index of the entry the "Used" line belongs to
  std::string properties_of;  // the function whose frame line comes next
  for (const std::string& line : Lines(log)) {
    if (auto body = PtxasInfoBody(line)) {
      std::smatch m;
      if (std::regex_search(*body, m, kEntry)) {
        if (m[2] != current_arch) frames.clear();
        current_arch = m[2];
        KernelResources k;
        k.mangled = m[1];
        k.name = Demangle(k.mangled);
        k.arch = current_arch;
        if (auto f = frames.find(k.mangled); f != frames.end()) {
          k.stack_bytes = f->second.stack;
          k.spill_stores = f->second.spill_stores;
          k.spill_loads = f->second.spill_loads;
        }
        kernels.push_back(std::move(k));
        current = static_cast<int>(kernels.size()) - 1;
        properties_of.clear();
      } else if (body->rfind("Function properties for ", 0) == 0) {
        properties_of = Trim(body->substr(24));
      } else if (body->rfind("Used ", 0) == 0) {
        if (current >= 0) ApplyUsage(*body, kernels[current]);
        properties_of.clear();
      } else if (body->rfind("Compile time", 0) == 0) {
        current = -1;  // the entry's report is complete
      }
      continue;
    }
    auto frame = ParseFrameLine(line);
    if (!frame || properties_of.empty()) continue;
    frames[properties_of] = *frame;
    for (auto& k : kernels) {
      if (k.mangled == properties_of && k.arch == current_arch) {
        k.stack_bytes = frame->stack;
        k.spill_stores = frame->spill_stores;
        k.spill_loads = frame->spill_loads;
      }
    }
    properties_of.clear();
  }
  return kernels;
}

namespace {

// A header's path from its include root on: ".../include/cute/layout.hpp" → "cute/layout.hpp"
// (the CUTLASS tree's absolute path says nothing a reader needs). Other paths as they are.
std::string ShortHeaderPath(const std::string& path) {
  size_t at = path.rfind("/include/");
  return at == std::string::npos ? path : path.substr(at + 9);
}

// nvcc follows an error inside a template with "detected during:" and one "instantiation of
// "SIGNATURE [with ...]" at line N[ of FILE]" per frame, innermost first; a CuTe error has a dozen,
// each kilobytes long. Kept: the innermost frame's function and the innermost frame in the
// compiled source itself (the compiler runs in the source's folder, so its frames name it without
// a folder): the source's line that led into the library. "" when there is no such block.
std::string InstantiationContext(const std::vector<std::string>& lines, size_t from) {
  static const std::regex kFrame(R"re(^instantiation of "(.*?)(?: \[with .*\])?" at line (\d+)(?: of (.+))?$)re");
  size_t i = from;
  while (i < lines.size() && Trim(lines[i]) != "detected during:") {
    // The error's own text runs on (the source line, a caret, argument types) up to the block.
    if (Trim(lines[i]).empty() || lines[i].find(": error") != std::string::npos) return "";
    ++i;
  }
  std::string innermost, own;
  for (++i; i < lines.size(); ++i) {
    std::smatch m;
    const std::string frame = Trim(lines[i]);
    if (!std::regex_match(frame, m, kFrame)) break;
    std::string function = m[1].str(), file = m[3].str();
    if (innermost.empty()) innermost = function;
    if (own.empty() && !file.empty() && file.find('/') == std::string::npos) own = file + ":" + m[2].str();
  }
  if (innermost.empty()) return "";
  return " [in " + innermost + (own.empty() ? "" : ", instantiated from " + own) + "]";
}

}  // namespace

namespace {

struct FirstError {
  size_t line = 0;      // index of the error's line in the log
  std::string summary;  // "file:line: message"
};

// The first error line of a compiler log and its summary; nullopt when no line is an error.
std::optional<FirstError> FindFirstError(const std::vector<std::string>& lines) {
  // nvcc front end: "bad.cu(3): error: ..." (also "error #20-D:", "catastrophic error:").
  static const std::regex kNvcc(R"(^(.+?)\((\d+)\): (?:catastrophic )?error(?: #[\w-]+)?: (.*)$)");
  // gcc: "bad.cpp:3:10: error: ..." / "fatal error:"; the column is optional.
  static const std::regex kGcc(R"(^(.+?):(\d+)(?::\d+)?: (?:fatal )?error: (.*)$)");
  // ld: "link.cpp:(.text+0x5): undefined reference to `g()'" or "file.cpp:12: undefined reference".
  static const std::regex kLinkSection(R"(^(.+?):\([^)]*\): (undefined reference to .*)$)");
  static const std::regex kLinkLine(R"(^(.+?):(\d+): (undefined reference to .*)$)");
  // ptxas on a PTX file: "ptxas /tmp/x.ptx, line 5; error   : ...".
  static const std::regex kPtxasLine(R"(^ptxas (.+), line (\d+); (?:error|fatal)\s*: (.*)$)");
  // Tools without a location: "ptxas error   : ...", "ptxas fatal   : ...", "nvcc fatal   : ...".
  static const std::regex kTool(R"(^(ptxas|nvcc|nvlink|fatbinary)\s+(?:error|fatal)\s*: (.*)$)");
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    std::smatch m;
    if (std::regex_match(line, m, kNvcc))
      return FirstError{
          i, ShortHeaderPath(m[1].str()) + ":" + m[2].str() + ": " + Trim(m[3]) + InstantiationContext(lines, i + 1)};
    if (std::regex_match(line, m, kGcc) || std::regex_match(line, m, kLinkLine) ||
        std::regex_match(line, m, kPtxasLine))
      return FirstError{i, m[1].str() + ":" + m[2].str() + ": " + Trim(m[3])};
    if (std::regex_match(line, m, kLinkSection)) return FirstError{i, m[1].str() + ": " + Trim(m[2])};
    if (std::regex_match(line, m, kTool)) return FirstError{i, m[1].str() + ": " + Trim(m[2])};
  }
  return std::nullopt;
}

}  // namespace

std::string FirstCompileError(const std::string& log) {
  auto first = FindFirstError(Lines(log));
  return first ? first->summary : "";
}

std::string CompileLogExcerpt(const std::string& log, size_t max_bytes) {
  const std::vector<std::string> lines = Lines(log);
  auto first = FindFirstError(lines);
  if (!first) return Tail(log, max_bytes);
  std::string excerpt;
  for (size_t i = first->line; i < lines.size() && excerpt.size() + lines[i].size() + 1 <= max_bytes; ++i)
    excerpt += lines[i] + "\n";
  return excerpt.empty() ? lines[first->line].substr(0, max_bytes) : excerpt;
}

std::string ParseNvccVersion(const std::string& version_output) {
  static const std::regex kRelease(R"(release [0-9.]+, V([0-9][0-9.]*))");
  std::smatch m;
  if (!std::regex_search(version_output, m, kRelease)) return "";
  return "nvcc " + m[1].str();
}

std::string ParseGxxVersion(const std::string& version_output) {
  std::string first = Trim(version_output.substr(0, version_output.find('\n')));
  static const std::regex kGxx(R"(^(\S+) .*?([0-9]+\.[0-9]+(?:\.[0-9]+)?)$)");
  std::smatch m;
  if (!std::regex_match(first, m, kGxx)) return "";
  std::string prog = m[1];
  size_t slash = prog.rfind('/');
  if (slash != std::string::npos) prog = prog.substr(slash + 1);
  return prog + " " + m[2].str();
}

}  // namespace kpilot
