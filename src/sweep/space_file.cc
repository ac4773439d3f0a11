#include "sweep/space_file.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/fs.h"
#include "core/stats.h"

namespace kpilot {
namespace {

using nlohmann::json;

// The entry keys EvaluatedFields writes.
constexpr const char* kEvaluatedKeys[] = {
    "status", "message", "candidate_ms", "baseline_ms", "median_ms", "baseline_median_ms", "speedup", "paired_speedup"};

// Whether a config's samples hold at least one usable pair (what a passed entry must have).
bool HasPairedSamples(const SpaceConfig& c) {
  for (size_t i = 0; i < std::min(c.candidate_ms.size(), c.baseline_ms.size()); ++i)
    if (c.candidate_ms[i] > 0 && c.baseline_ms[i] > 0) return true;
  return false;
}

}  // namespace

Result<VerdictKind> SpaceVerdict(const std::string& status) {
  if (auto k = ParseVerdictKind(status)) return *k;
  if (status == "not_run" || status == "error") return VerdictKind::kRuntimeError;
  return Status::InvalidInput("unknown status \"" + status + "\"");
}

Result<Space> LoadSpace(const std::filesystem::path& file) {
  auto text = ReadFile(file);
  if (!text.ok()) return text.status();
  json j = json::parse(*text, nullptr, false);
  if (!j.is_object() || !j.contains("configs") || !j["configs"].is_array())
    return Status::InvalidInput(file.string() +
                                ": not a space file (a JSON object with \"configs\"; see docs/sweep.md)");
  Space s;
  s.file = file;
  std::map<ParamValues, size_t> seen;
  size_t i = 0;
  bool in_configs = false;
  auto bad = [&](const std::string& why) {
    return Status::InvalidInput(file.string() + ": " + (in_configs ? "config " + std::to_string(i) + ": " : "") + why);
  };
  try {
    s.task = j.at("task").get<std::string>();
    s.workload = j.value("workload", "");
    s.baseline = j.value("baseline", "reference");
    if (j.contains("gpu") && j["gpu"].is_object()) s.gpu = j["gpu"].value("name", "");
    if (j.contains("calibration")) {
      s.calibration = CalibrationFromJson(j["calibration"]);
      if (!s.calibration.valid())
        return bad("calibration: needs positive dram_bytes_per_s and fp32_flops_per_s (or leave the key out)");
    }
    in_configs = true;
    for (; i < j["configs"].size(); ++i) {
      const json& c = j["configs"][i];
      SpaceConfig sc;
      for (auto it = c.at("params").begin(); it != c.at("params").end(); ++it)
        sc.params[it.key()] = it->is_string() ? it->get<std::string>() : it->dump();
      sc.status = c.at("status").get<std::string>();
      auto kind = SpaceVerdict(sc.status);
      if (!kind.ok()) return bad(kind.status().message());
      sc.object_sha = c.value("object_sha", "");
      sc.message = c.value("message", "");
      if (c.contains("compile_s") && c["compile_s"].is_number()) sc.compile_s = c["compile_s"].get<double>();
      if (c.contains("candidate_ms") && c["candidate_ms"].is_array())
        sc.candidate_ms = c["candidate_ms"].get<std::vector<double>>();
      if (c.contains("baseline_ms") && c["baseline_ms"].is_array())
        sc.baseline_ms = c["baseline_ms"].get<std::vector<double>>();
      for (const json& r : c.value("resources", json::array())) {
        KernelResources k;
        k.name = r.value("kernel", "");
        k.registers = r.value("registers", 0);
        k.shared_bytes = r.value("shared_bytes", int64_t{0});
        k.stack_bytes = r.value("stack_bytes", int64_t{0});
        k.spill_stores = r.value("spill_store_bytes", int64_t{0});
        k.spill_loads = r.value("spill_load_bytes", int64_t{0});
        if (r.contains("mix") && r["mix"].is_object()) sc.mixes.push_back({{"kernel", k.name}, {"mix", r["mix"]}});
        sc.resources.push_back(std::move(k));
      }
      if (*kind == VerdictKind::kPassed && !HasPairedSamples(sc))
        return bad("passed, but has no paired candidate_ms/baseline_ms samples");
      if (!seen.emplace(sc.params, i).second)
        return bad("the same params as config " + std::to_string(seen[sc.params]) + " (" +
                   ParamsText(sc.params, "(no params)") + ")");
      s.configs.push_back(std::move(sc));
    }
  } catch (const std::exception& e) {
    return bad(e.what());
  }
  return s;
}

json NewSpaceHeader(const SpaceIdentity& id, const std::string& created) {
  return {{"version", kSpaceFileVersion},
          {"task", id.task},
          {"task_dir", std::filesystem::absolute(id.task_dir).string()},
          {"candidate", std::filesystem::absolute(id.candidate).string()},
          {"workload", id.workload},
          {"baseline", id.baseline},
          {"created", created}};
}

bool FinalSpaceStatus(const std::string& status) { return !status.empty() && status != "not_run"; }

json NotRunEntry(const ParamValues& params) { return {{"params", params}, {"status", "not_run"}}; }

json ResourceEntry(const KernelResources& r, const json& mix) {
  json entry = {{"kernel", r.name},
                {"registers", r.registers},
                {"shared_bytes", r.shared_bytes},
                {"stack_bytes", r.stack_bytes},
                {"spill_store_bytes", r.spill_stores},
                {"spill_load_bytes", r.spill_loads}};
  if (!mix.is_null()) entry["mix"] = mix;
  return entry;
}

json EvaluatedFields(const RunResult& r) {
  json f;
  f["status"] = r.status;
  f["message"] = VerdictFromRun(r).summary;
  if (r.timings.empty()) return f;
  const TimingRecord& t = r.timings.front();
  SampleSummary cand = Summarize(t.candidate_ms), base = Summarize(t.baseline_ms);
  PairedRatio paired = PairedSpeedup(t.baseline_ms, t.candidate_ms);
  f["candidate_ms"] = t.candidate_ms;
  f["baseline_ms"] = t.baseline_ms;
  f["median_ms"] = cand.median;
  f["baseline_median_ms"] = base.median;
  f["speedup"] = cand.median > 0 ? base.median / cand.median : 0.0;
  f["paired_speedup"] = {{"ratio", paired.ratio}, {"ci", {paired.ci.lo, paired.ci.hi}}, {"n", paired.n}};
  return f;
}

json EvaluatedPart(const json& entry) {
  json f = json::object();
  for (const char* k : kEvaluatedKeys)
    if (entry.contains(k)) f[k] = entry[k];
  return f;
}

std::string SpaceEntryKey(const json& params) { return params.dump(); }

std::string SpaceFileText(const json& header, const std::vector<json>& entries) {
  std::string text = header.dump(1);
  text.erase(text.rfind('}'));
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  text += ",\n \"configs\": [";
  for (size_t i = 0; i < entries.size(); ++i) text += (i ? ",\n  " : "\n  ") + entries[i].dump();
  text += "\n ]\n}\n";
  return text;
}

Status WriteSpaceFile(const std::filesystem::path& file, const json& header, const std::vector<json>& entries) {
  KPILOT_RETURN_IF_ERROR(WriteFileAtomic(file, SpaceFileText(header, entries)));
  std::error_code ec;
  std::filesystem::remove(SpaceJournalPath(file), ec);
  return Status::Ok();
}

std::filesystem::path SpaceJournalPath(const std::filesystem::path& file) { return file.string() + ".journal"; }

Status AppendSpaceJournal(const std::filesystem::path& file, const std::vector<json>& entries) {
  std::string lines;
  for (const json& e : entries) lines += e.dump() + "\n";
  if (lines.empty()) return Status::Ok();
  std::ofstream f(SpaceJournalPath(file), std::ios::app | std::ios::binary);
  f << lines;
  f.flush();
  if (!f) return Status::Internal("cannot append to " + SpaceJournalPath(file).string());
  return Status::Ok();
}

Result<SpaceFileEntries> ReadSpaceFileEntries(const std::filesystem::path& file) {
  auto text = ReadFile(file);
  json old = text.ok() ? json::parse(*text, nullptr, false) : json();
  if (!old.is_object() || old.value("version", 0) != kSpaceFileVersion || !old["configs"].is_array())
    return Status::InvalidInput(file.string() + ": not a kpilot space file of version " +
                                std::to_string(kSpaceFileVersion));
  SpaceFileEntries out;
  for (const auto& c : old["configs"]) out.entries[SpaceEntryKey(c.value("params", json::object()))] = c;
  old.erase("configs");
  out.header = std::move(old);
  if (auto journal = ReadFile(SpaceJournalPath(file)); journal.ok()) {
    std::istringstream lines(*journal);
    for (std::string line; std::getline(lines, line);) {
      json e = json::parse(line, nullptr, false);
      if (e.is_object() && e.contains("params"))
        out.entries[SpaceEntryKey(e["params"])] = e;
      else
        out.journal_lines_skipped += !line.empty();
    }
  }
  return out;
}

}  // namespace kpilot
