#include "generate/folder_generator.h"

#include <algorithm>
#include <future>
#include <system_error>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/fs.h"

namespace kpilot {
namespace {

namespace fs = std::filesystem;

std::string CandidateExtension(const Task& task) { return task.backend == Backend::kCuda ? ".cu" : ".cpp"; }

// 1-based line of byte offset `byte` (nlohmann counts the offending byte too).
int LineAt(const std::string& text, size_t byte) {
  size_t end = std::min(text.size(), byte > 0 ? byte - 1 : 0);
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(end), '\n'));
}

std::string JsonType(const nlohmann::json& v) { return v.type_name(); }

// Fills `entry` from the sidecar at `path`.
Status ReadSidecar(const fs::path& path, DraftFile* entry) {
  auto text = ReadFile(path);
  if (!text.ok()) return text.status();
  const std::string where = path.string();
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(*text);
  } catch (const nlohmann::json::parse_error& e) {
    return Status::InvalidInput(where + ":" + std::to_string(LineAt(*text, e.byte)) + ": not valid JSON (" + e.what() +
                                ") — fix the sidecar or delete it (sidecars are optional)");
  }
  if (!doc.is_object()) {
    return Status::InvalidInput(where +
                                ": expected a JSON object like {\"params\": {\"BLOCK\": 256}, "
                                "\"summary\": \"…\", \"finding\": \"…\"}, got " +
                                JsonType(doc));
  }
  for (const auto& [key, value] : doc.items()) {
    if (key == "params") {
      if (!value.is_object())
        return Status::InvalidInput(where + ": params: expected an object of NAME: value, got " + JsonType(value));
      for (const auto& [name, v] : value.items()) {
        if (v.is_string()) {
          entry->params[name] = v.get<std::string>();
        } else if (v.is_number()) {
          entry->params[name] = v.dump();  // 256, 0.5, 2.0 — as written for the -D value
        } else {
          return Status::InvalidInput(where + ": params." + name + ": expected a string or number, got " + JsonType(v));
        }
      }
    } else if (key == "summary" || key == "finding") {
      if (!value.is_string())
        return Status::InvalidInput(where + ": " + key + ": expected a string, got " + JsonType(value));
      (key == "summary" ? entry->summary : entry->finding) = value.get<std::string>();
    } else {
      return Status::InvalidInput(where + ": unknown key \"" + key +
                                  "\" — a sidecar may hold params, summary and finding");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<DraftFile>> ReadDraftFolder(const fs::path& dir, const Task& task) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    return Status::NotFound("draft folder " + dir.string() +
                            " does not exist — pass folder:DIR with a folder of candidate files");
  }
  if (!fs::is_directory(dir, ec)) {
    return Status::InvalidInput("folder:" + dir.string() +
                                " is not a folder — pass folder:DIR with a "
                                "folder of candidate files");
  }
  const std::string ext = CandidateExtension(task);
  std::vector<fs::path> sources;
  fs::directory_iterator it(dir, ec), end;
  if (ec) return Status::Internal("draft folder " + dir.string() + ": cannot list it: " + ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec) return Status::Internal("draft folder " + dir.string() + ": cannot list it: " + ec.message());
    const fs::path& p = it->path();
    std::string file = p.filename().string();
    if (file.empty() || file[0] == '.' || p.extension() != ext) continue;
    if (!it->is_regular_file(ec)) continue;
    sources.push_back(p);
  }
  if (sources.empty()) {
    return Status::InvalidInput("draft folder " + dir.string() + " has no candidate files — put " + ext +
                                " files there (task " + task.name + " is " + std::string(BackendName(task.backend)) +
                                "), one per draft");
  }
  std::sort(sources.begin(), sources.end(),
            [](const fs::path& a, const fs::path& b) { return a.filename().string() < b.filename().string(); });

  std::vector<DraftFile> entries;
  for (const fs::path& source : sources) {
    DraftFile entry;
    entry.source = source;
    entry.summary = "folder: " + source.filename().string();
    fs::path by_stem = dir / (source.stem().string() + ".json");
    fs::path by_name = dir / (source.filename().string() + ".json");
    bool stem = fs::is_regular_file(by_stem, ec), name = fs::is_regular_file(by_name, ec);
    if (stem && name) {
      return Status::InvalidInput("draft folder " + dir.string() + ": both " + by_stem.filename().string() + " and " +
                                  by_name.filename().string() + " describe " + source.filename().string() +
                                  " — keep one");
    }
    if (stem || name) KPILOT_RETURN_IF_ERROR(ReadSidecar(stem ? by_stem : by_name, &entry));
    entries.push_back(std::move(entry));
  }
  return entries;
}

FolderGenerator::FolderGenerator(std::string spec, std::vector<DraftFile> entries)
    : spec_(std::move(spec)), entries_(std::move(entries)) {}

size_t FolderGenerator::remaining() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size() - next_;
}

std::future<Result<std::vector<Draft>>> FolderGenerator::Propose(const ProposalContext& ctx) {
  size_t begin, end;
  {
    std::lock_guard<std::mutex> lock(mu_);
    begin = next_;
    end = std::min(entries_.size(), next_ + static_cast<size_t>(std::max(ctx.k, 0)));
    next_ = end;
  }
  Result<std::vector<Draft>> result = std::vector<Draft>{};
  for (size_t i = begin; i < end; ++i) {
    const DraftFile& e = entries_[i];
    auto source = ReadFile(e.source);
    if (!source.ok()) {
      result = source.status().WithContext(spec_);
      break;
    }
    Draft d;
    d.source = std::move(*source);
    d.source_name = e.source.filename().string();
    d.params = e.params;
    d.summary = e.summary;
    d.targeted_finding = e.finding;
    result->push_back(std::move(d));
  }
  return std::async(std::launch::deferred, [r = std::move(result)]() mutable { return std::move(r); });
}

Result<std::unique_ptr<Generator>> MakeFolderGenerator(const std::string& spec, const Task& task) {
  const std::string prefix = "folder:";
  std::string dir = spec.rfind(prefix, 0) == 0 ? spec.substr(prefix.size()) : "";
  if (dir.empty()) {
    return Status::InvalidInput("generator \"" + spec + "\": name the folder, e.g. folder:drafts/");
  }
  auto entries = ReadDraftFolder(dir, task);
  if (!entries.ok()) return entries.status();
  return std::unique_ptr<Generator>(std::make_unique<FolderGenerator>(spec, std::move(*entries)));
}

}  // namespace kpilot
