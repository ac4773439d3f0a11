#include "generate/reply.h"

#include <algorithm>
#include <cctype>
#include <regex>

#include "core/text.h"

namespace kpilot {
namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
    start = end + 1;
  }
  return lines;
}

bool IsCodeLanguage(const std::string& lang) {
  static const char* kCode[] = {"", "c", "cpp", "c++", "cc", "cxx", "cu", "cuda", "h", "hpp", "cuh"};
  return std::find(std::begin(kCode), std::end(kCode), lang) != std::end(kCode);
}

std::string LabelledLine(const std::string& text, const std::string& label) {
  for (const auto& line : Lines(text)) {
    std::string t = Trim(line);
    while (!t.empty() && (t.front() == '*' || t.front() == '#' || t.front() == '-' || t.front() == '/'))
      t = Trim(t.substr(1));
    if (Lower(t.substr(0, label.size())) == Lower(label)) {
      std::string v = Trim(t.substr(label.size()));
      while (!v.empty() && v.back() == '*') v.pop_back();
      return Trim(v).substr(0, 200);
    }
  }
  return "";
}

}  // namespace

std::vector<CodeBlock> FencedBlocks(const std::string& text) {
  std::vector<CodeBlock> blocks;
  std::vector<std::string> lines = Lines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string t = Trim(lines[i]);
    if (t.size() < 3 || (t.compare(0, 3, "```") != 0 && t.compare(0, 3, "~~~") != 0)) continue;
    char fc = t[0];
    size_t n = t.find_first_not_of(fc);
    if (n == std::string::npos) n = t.size();
    std::string fence = t.substr(0, n);
    std::string info = Trim(t.substr(n));
    CodeBlock b;
    b.language = Lower(info.substr(0, info.find_first_of(" \t{")));
    std::string code;
    size_t j = i + 1;
    for (; j < lines.size(); ++j) {
      std::string tj = Trim(lines[j]);
      if (tj.size() >= fence.size() && tj.compare(0, fence.size(), fence) == 0 &&
          tj.find_first_not_of(fc) == std::string::npos)
        break;
      code += lines[j] + "\n";
    }
    if (j >= lines.size()) break;  // never closed: a truncated reply
    b.code = std::move(code);
    blocks.push_back(std::move(b));
    i = j;
  }
  return blocks;
}

std::string AbiProblem(const std::string& source) {
  static const std::regex kLaunch(R"(\bkpilot_launch\s*\()");
  if (!std::regex_search(source, kLaunch))
    return "the code does not define kpilot_launch — a candidate is one complete file that includes "
           "<kpilot/kernel.h> and defines KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* inputs, int "
           "num_inputs, const kpilot_tensor* outputs, int num_outputs, const kpilot_scalar* scalars, int "
           "num_scalars, void* stream)";
  static const std::regex kExported(R"((KPILOT_EXPORT|extern\s+"C")[^;{]*\bkpilot_launch\s*\()");
  static const std::regex kExternBlock(R"(extern\s+"C"\s*\{)");
  if (!std::regex_search(source, kExported) && !std::regex_search(source, kExternBlock))
    return "kpilot_launch is not exported with C linkage — declare it KPILOT_EXPORT (from <kpilot/kernel.h>) "
           "or extern \"C\"";
  return "";
}

std::string CodeFingerprint(const std::string& source) {
  std::string out;
  for (size_t i = 0; i < source.size(); ++i) {
    if (source.compare(i, 2, "//") == 0) {
      i = source.find('\n', i);
      if (i == std::string::npos) break;
    } else if (source.compare(i, 2, "/*") == 0) {
      i = source.find("*/", i + 2);
      if (i == std::string::npos) break;
      ++i;
    } else if (!std::isspace(static_cast<unsigned char>(source[i]))) {
      out.push_back(source[i]);
    }
  }
  return out;
}

namespace {

std::string CleanSkillId(std::string t) {
  static const std::string kStrip = "`'\"[]()*.;:";
  while (!t.empty() && kStrip.find(t.front()) != std::string::npos) t.erase(t.begin());
  while (!t.empty() && kStrip.find(t.back()) != std::string::npos) t.pop_back();
  return Lower(t);
}

void AddSkillIds(const std::string& text, std::vector<std::string>* ids) {
  std::string word;
  auto flush = [&] {
    std::string id = CleanSkillId(word);
    word.clear();
    if (id.empty() || id == "none") return;
    if (std::find(ids->begin(), ids->end(), id) == ids->end()) ids->push_back(id);
  };
  for (char c : text) {
    if (c == ',' || std::isspace(static_cast<unsigned char>(c)))
      flush();
    else
      word.push_back(c);
  }
  flush();
}

}  // namespace

std::optional<std::vector<std::string>> AppliedSkillsLine(const std::string& text) {
  static const std::string kLabel = "applied skills:";
  std::optional<std::string> last;
  bool in_fence = false;
  for (const auto& line : Lines(text)) {
    std::string t = Trim(line);
    if (t.rfind("```", 0) == 0 || t.rfind("~~~", 0) == 0) {
      in_fence = !in_fence;
      continue;
    }
    if (in_fence) continue;
    while (!t.empty() &&
           (t.front() == '*' || t.front() == '#' || t.front() == '-' || t.front() == '_' || t.front() == '>'))
      t = Trim(t.substr(1));
    std::string l = Lower(t);
    if (l.rfind(kLabel, 0) == 0)
      last = t.substr(kLabel.size());
    else if (l.rfind("applied skills**:", 0) == 0)
      last = t.substr(kLabel.size() + 2);
  }
  if (!last) return std::nullopt;
  std::vector<std::string> ids;
  AddSkillIds(*last, &ids);
  return ids;
}

std::vector<std::string> SkillIdList(const std::string& text) {
  std::vector<std::string> ids;
  for (const auto& line : Lines(text)) AddSkillIds(line.substr(0, line.find('#')), &ids);
  return ids;
}

AppliedSkills FilterAppliedSkills(const std::vector<std::string>& named, const std::vector<std::string>& offered) {
  AppliedSkills out;
  for (const auto& id : named) {
    auto& to = std::find(offered.begin(), offered.end(), id) != offered.end() ? out.kept : out.dropped;
    if (std::find(to.begin(), to.end(), id) == to.end()) to.push_back(id);
  }
  return out;
}

std::string DroppedSkillsNote(const std::vector<std::string>& dropped) {
  if (dropped.empty()) return "";
  std::string s;
  for (const auto& id : dropped) s += (s.empty() ? "" : ", ") + id.substr(0, 64);
  return " [skill ids not offered, ignored: " + s + "]";
}

std::string SummaryLine(const std::string& text) { return LabelledLine(text, "Summary:"); }
std::string FindingLine(const std::string& text) { return LabelledLine(text, "Finding:"); }

ExtractedCandidate ExtractCandidate(const std::string& reply) {
  ExtractedCandidate out;
  out.summary = SummaryLine(reply);
  out.finding = FindingLine(reply);
  if (out.summary.empty()) {
    bool in_fence = false;
    for (const auto& line : Lines(reply)) {
      std::string t = Trim(line);
      if (t.rfind("```", 0) == 0 || t.rfind("~~~", 0) == 0)
        in_fence = !in_fence;
      else if (!in_fence && !t.empty()) {
        out.summary = t.substr(0, 200);
        break;
      }
    }
  }
  std::vector<CodeBlock> blocks = FencedBlocks(reply);
  std::vector<const CodeBlock*> code, launching;
  for (const auto& b : blocks)
    if (IsCodeLanguage(b.language)) code.push_back(&b);
  if (code.empty()) {
    out.problem =
        "the reply has no fenced code block — reply with the whole candidate file in one ```cpp (or ```cuda) block";
    return out;
  }
  static const std::regex kLaunch(R"(\bkpilot_launch\s*\()");
  for (const auto* b : code)
    if (std::regex_search(b->code, kLaunch)) launching.push_back(b);
  if (launching.size() > 1) {
    out.problem =
        "the reply has " + std::to_string(launching.size()) +
        " code blocks that define kpilot_launch (several files) — reply with exactly one complete candidate file";
    return out;
  }
  const CodeBlock* pick =
      launching.empty()
          ? *std::max_element(code.begin(), code.end(),
                              [](const CodeBlock* a, const CodeBlock* b) { return a->code.size() < b->code.size(); })
          : launching.front();
  out.problem = AbiProblem(pick->code);
  if (out.problem.empty()) out.source = pick->code;
  return out;
}

}  // namespace kpilot
