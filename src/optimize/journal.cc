// The run's journal of finished evaluations (journal.h).
#include "optimize/journal.h"

#include "core/fs.h"

namespace kpilot {

using nlohmann::json;

bool SeenBinaries::Insert(const std::string& sha) {
  std::lock_guard<std::mutex> lock(mu_);
  return seen_.insert(sha).second;
}

void RunJournal::Record(json key, const EvalJobResult& r) {
  Status st = Status::Ok();
  try {  // on the executor's thread: nothing may escape
    auto blob = store_.PutBlob(JsonText(RecordJson(r)));
    st = blob.status();
    if (blob.ok()) {
      key["blob"] = *blob;
      auto seq = store_.AddRunEvent(run_id_, "result", JsonText(key));
      st = seq.status();
    }
  } catch (const std::exception& e) {
    st = Status::Internal(e.what());
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!st.ok() && error_.ok()) error_ = st.WithContext("journaling a finished evaluation");
}

Status RunJournal::status() {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

std::optional<std::future<EvalJobResult>> RunJournal::Read(const std::string& blob) {
  auto text = store_.GetBlob(blob);
  if (!text.ok()) return std::nullopt;
  auto r = EvalJobResultFromRecord(json::parse(*text, nullptr, false));
  if (!r.ok()) return std::nullopt;
  seen_.Insert(r->object_sha);  // as admit did in the interrupted process
  std::promise<EvalJobResult> p;
  p.set_value(std::move(r).value());
  return p.get_future();
}

void RunJournal::Remember(const json& payload) {
  if (!payload.is_object() || !payload.contains("blob")) return;
  json key = payload;
  key.erase("blob");
  journaled_[JsonText(key)] = payload.value("blob", "");
}

int RunJournal::ReadAhead(const std::function<bool(const json& key)>& wanted) {
  for (auto it = journaled_.begin(); it != journaled_.end();) {
    auto served = wanted(json::parse(it->first)) ? Read(it->second) : std::nullopt;
    if (!served) {
      ++it;
      continue;
    }
    read_ahead_.emplace(it->first, std::move(*served));
    it = journaled_.erase(it);
  }
  return static_cast<int>(read_ahead_.size());
}

std::future<EvalJobResult> RunJournal::Submit(EvalJob job, const json& key) {
  const std::string k = JsonText(key);
  if (auto it = read_ahead_.find(k); it != read_ahead_.end()) {
    std::future<EvalJobResult> served = std::move(it->second);
    read_ahead_.erase(it);
    return served;
  }
  if (auto it = journaled_.find(k); it != journaled_.end()) {
    auto served = Read(it->second);
    journaled_.erase(it);
    if (served) return std::move(*served);
  }
  job.on_done = [this, key, then = std::move(job.on_done)](const EvalJobResult& r) {
    Record(key, r);
    if (then) then(r);
  };
  return executor_.Submit(std::move(job));
}

}  // namespace kpilot
