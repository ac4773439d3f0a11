#include "runner/protocol.h"

#include <algorithm>

#include "core/fs.h"

namespace kpilot {
namespace {

using nlohmann::json;

InitKind InitKindFromName(const std::string& s) {
  for (InitKind k : {InitKind::kNormal, InitKind::kUniform, InitKind::kRandint, InitKind::kRange, InitKind::kConstant})
    if (InitKindName(k) == s) return k;
  throw std::runtime_error("unknown init kind \"" + s + "\"");
}

DType DTypeFromName(const std::string& s) {
  auto d = ParseDType(s);
  if (!d) throw std::runtime_error("unknown dtype \"" + s + "\"");
  return *d;
}

json TensorJson(const RunTensor& t) {
  return {{"name", t.name},
          {"dtype", DTypeName(t.dtype)},
          {"shape", t.shape},
          {"init", {{"kind", InitKindName(t.init.kind)}, {"a", t.init.a}, {"b", t.init.b}}},
          {"tolerance",
           {{"atol", t.tolerance.atol}, {"rtol", t.tolerance.rtol}, {"matched_ratio", t.tolerance.matched_ratio}}}};
}

RunTensor TensorFromJson(const json& j) {
  RunTensor t;
  t.name = j.at("name").get<std::string>();
  t.dtype = DTypeFromName(j.at("dtype").get<std::string>());
  t.shape = j.at("shape").get<std::vector<int64_t>>();
  const json& init = j.at("init");
  t.init.kind = InitKindFromName(init.at("kind").get<std::string>());
  t.init.a = init.at("a").get<double>();
  t.init.b = init.at("b").get<double>();
  const json& tol = j.at("tolerance");
  t.tolerance.atol = tol.at("atol").get<double>();
  t.tolerance.rtol = tol.at("rtol").get<double>();
  t.tolerance.matched_ratio = tol.at("matched_ratio").get<double>();
  return t;
}

}  // namespace

std::string JsonText(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

double NumFrom(const json& j) {
  if (j.is_string()) {
    std::string s = j.get<std::string>();
    if (s == "nan") return NAN;
    if (s == "inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
    throw std::runtime_error("bad number \"" + s + "\"");
  }
  if (j.is_null()) return NAN;
  return j.get<double>();
}

json JsonNumber(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

std::string_view TimingModeName(TimingMode m) {
  switch (m) {
    case TimingMode::kDefault:
      return "default";
    case TimingMode::kKernelBench:
      return "kernelbench";
    case TimingMode::kFlashInfer:
      return "flashinfer";
  }
  return "?";
}

std::optional<TimingMode> ParseTimingMode(std::string_view name) {
  for (TimingMode m : {TimingMode::kDefault, TimingMode::kKernelBench, TimingMode::kFlashInfer})
    if (TimingModeName(m) == name) return m;
  return std::nullopt;
}

json ToJson(const RunRequest& r) {
  json workloads = json::array();
  for (const auto& w : r.workloads) {
    json ins = json::array(), outs = json::array();
    for (const auto& t : w.inputs) ins.push_back(TensorJson(t));
    for (const auto& t : w.outputs) outs.push_back(TensorJson(t));
    workloads.push_back({{"name", w.name},
                         {"inputs", ins},
                         {"outputs", outs},
                         {"scalar_values", w.scalar_values},
                         {"flops", w.flops},
                         {"min_bytes", w.min_bytes},
                         {"timed", w.timed}});
  }
  json scalars = json::array();
  for (const auto& s : r.scalars) scalars.push_back({{"name", s.name}, {"dtype", DTypeName(s.dtype)}});
  return {{"version", kRunnerProtocolVersion},
          {"backend", BackendName(r.backend)},
          {"reference_object", r.reference_object},
          {"candidate_object", r.candidate_object},
          {"baseline_object", r.baseline_object},
          {"scalars", scalars},
          {"workloads", workloads},
          {"seeds", r.seeds},
          {"time", r.time},
          {"device", r.device},
          {"energy", r.energy},
          {"libraries", r.libraries},
          {"compute_precision", r.compute_precision ? json(DTypeName(*r.compute_precision)) : json(nullptr)},
          {"calibration", ToJson(r.calibration)},
          {"lock_dir", r.lock_dir},
          {"profile_only", r.profile_only},
          {"counters_max_ranges", r.counters_max_ranges},
          {"counters_replay", r.counters_replay},
          {"calibrate_only", r.calibrate_only},
          {"counters", r.counters},
          {"sweep_objects", r.sweep_objects},
          {"timing",
           {{"mode", TimingModeName(r.timing.mode)},
            {"input_sets", r.timing.input_sets},
            {"warmup", r.timing.warmup},
            {"min_reps", r.timing.min_reps},
            {"max_reps", r.timing.max_reps},
            {"max_seconds", r.timing.max_seconds},
            {"target_rel_ci", r.timing.target_rel_ci}}},
          {"timeout_s", r.timeout_s},
          {"cpu_seconds", r.cpu_seconds},
          {"file_bytes", r.file_bytes},
          {"address_space_bytes", r.address_space_bytes},
          {"sandbox", r.sandbox},
          {"sandbox_hide", r.sandbox_hide}};
}

Result<RunRequest> RunRequestFromJson(const json& j) {
  try {
    RunRequest r;
    int v = j.at("version").get<int>();
    if (v != kRunnerProtocolVersion)
      return Status::InvalidInput("runner request has protocol version " + std::to_string(v) + ", this runner speaks " +
                                  std::to_string(kRunnerProtocolVersion) +
                                  " — use the kpilot-runner installed with this kpilot");
    std::string backend = j.at("backend").get<std::string>();
    if (backend != "host" && backend != "cuda")
      return Status::InvalidInput("runner request: unknown backend " + backend);
    r.backend = backend == "cuda" ? Backend::kCuda : Backend::kHost;
    r.reference_object = j.at("reference_object").get<std::string>();
    r.candidate_object = j.at("candidate_object").get<std::string>();
    r.baseline_object = j.at("baseline_object").get<std::string>();
    for (const auto& s : j.at("scalars")) {
      ScalarSpec spec;
      spec.name = s.at("name").get<std::string>();
      spec.dtype = DTypeFromName(s.at("dtype").get<std::string>());
      r.scalars.push_back(spec);
    }
    for (const auto& wj : j.at("workloads")) {
      RunWorkload w;
      w.name = wj.at("name").get<std::string>();
      for (const auto& t : wj.at("inputs")) w.inputs.push_back(TensorFromJson(t));
      for (const auto& t : wj.at("outputs")) w.outputs.push_back(TensorFromJson(t));
      w.scalar_values = wj.at("scalar_values").get<std::vector<double>>();
      w.flops = wj.value("flops", 0.0);
      w.min_bytes = wj.value("min_bytes", 0.0);
      w.timed = wj.value("timed", true);
      if (w.scalar_values.size() != r.scalars.size())
        return Status::InvalidInput("runner request: workload " + w.name + " has " +
                                    std::to_string(w.scalar_values.size()) + " scalar values for " +
                                    std::to_string(r.scalars.size()) + " scalars");
      r.workloads.push_back(std::move(w));
    }
    r.seeds = j.at("seeds").get<std::vector<uint64_t>>();
    r.time = j.at("time").get<bool>();
    r.device = j.value("device", 0);
    r.energy = j.value("energy", false);
    r.libraries = j.value("libraries", true);
    if (j.contains("compute_precision") && !j.at("compute_precision").is_null())
      r.compute_precision = DTypeFromName(j.at("compute_precision").get<std::string>());
    if (j.contains("calibration")) r.calibration = CalibrationFromJson(j.at("calibration"));
    r.lock_dir = j.value("lock_dir", "/tmp");
    r.profile_only = j.value("profile_only", false);
    r.counters_max_ranges = j.value("counters_max_ranges", 0);
    r.counters_replay = j.value("counters_replay", std::string("user"));
    if (r.counters_replay != "user" && r.counters_replay != "kernel")
      return Status::InvalidInput("counters_replay: expected \"user\" or \"kernel\", got \"" + r.counters_replay +
                                  "\"");
    r.calibrate_only = j.value("calibrate_only", false);
    r.counters = j.value("counters", std::vector<std::string>{});
    r.sweep_objects = j.value("sweep_objects", std::vector<std::string>{});
    const json& t = j.at("timing");
    auto mode = ParseTimingMode(t.value("mode", "default"));
    if (!mode) return Status::InvalidInput("runner request: unknown timing mode " + t.value("mode", ""));
    r.timing.mode = *mode;
    r.timing.input_sets = t.value("input_sets", 3);
    r.timing.warmup = t.at("warmup").get<int>();
    r.timing.min_reps = t.at("min_reps").get<int>();
    r.timing.max_reps = t.at("max_reps").get<int>();
    r.timing.max_seconds = t.at("max_seconds").get<double>();
    r.timing.target_rel_ci = t.at("target_rel_ci").get<double>();
    r.timeout_s = j.at("timeout_s").get<double>();
    r.cpu_seconds = j.at("cpu_seconds").get<double>();
    r.file_bytes = j.at("file_bytes").get<int64_t>();
    r.address_space_bytes = j.at("address_space_bytes").get<int64_t>();
    r.sandbox = j.at("sandbox").get<bool>();
    if (j.contains("sandbox_hide")) r.sandbox_hide = j.at("sandbox_hide").get<std::vector<std::string>>();
    return r;
  } catch (const std::exception& e) {
    return Status::InvalidInput(std::string("runner request: ") + e.what());
  }
}

Result<RunRequest> ReadRunRequestFile(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) return text.status();
  json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::InvalidInput(path + ": not valid JSON");
  auto request = RunRequestFromJson(j);
  if (!request.ok()) return request.status().WithContext(path);
  return request;
}

json SandboxJson(const RunResult& r) {
  json s = ToJson(r.sandbox);
  s["leftover_processes_killed"] = r.leftover_processes_killed;
  return s;
}

void ApplySandboxDenials(RunResult* r) {
  const SandboxReport& s = r->sandbox;
  if (s.denied.empty() || r->status == "error") return;
  std::string tried;
  for (size_t i = 0; i < s.denied.size() && i < 3; ++i) tried += (i ? "; " : "") + s.denied[i];
  if (s.denied_count > 3) tried += " and " + std::to_string(s.denied_count - 3) + " more";
  const std::string what = "the sandbox denied what the candidate tried: " + tried;
  if (r->status == "passed") {
    r->status = "suspicious";
    r->message = what;
  } else {
    r->message += r->message.empty() ? what : " (" + what + ")";
  }
}

json ToJson(const RunResult& r) {
  json checks = json::array();
  for (const auto& c : r.checks)
    checks.push_back({{"workload", c.workload},
                      {"seed", c.seed},
                      {"output", c.output},
                      {"numel", c.numel},
                      {"mismatches", c.mismatches},
                      {"max_abs_error", JsonNumber(c.max_abs_error)},
                      {"max_rel_error", JsonNumber(c.max_rel_error)},
                      {"first_bad_index", c.first_bad_index},
                      {"first_bad_value", JsonNumber(c.first_bad_value)},
                      {"first_bad_expected", JsonNumber(c.first_bad_expected)},
                      {"guards_intact", c.guards_intact},
                      {"ok", c.ok}});
  json timings = json::array();
  for (const auto& t : r.timings)
    timings.push_back({{"workload", t.workload},
                       {"candidate_ms", t.candidate_ms},
                       {"baseline_ms", t.baseline_ms},
                       {"method", t.method},
                       {"statistic", t.statistic},
                       {"host_ms", t.host_ms},
                       {"cupti_ms", t.cupti_ms},
                       {"loop_wall_ms", t.loop_wall_ms},
                       {"joules_per_call", t.joules_per_call},
                       {"watts", t.watts},
                       {"baseline_joules_per_call", t.baseline_joules_per_call},
                       {"baseline_watts", t.baseline_watts}});
  return {{"kpilot_result_version", r.version},
          {"status", r.status},
          {"message", r.message},
          {"phase", r.phase},
          {"checks", checks},
          {"timings", timings},
          {"candidate_stdout_tail", r.candidate_stdout_tail},
          {"candidate_stderr_tail", r.candidate_stderr_tail},
          {"sandbox", SandboxJson(r)},
          {"exit_signal", r.exit_signal},
          {"wall_s", r.wall_s},
          {"warnings", r.warnings},
          {"calibration", ToJson(r.calibration)},
          {"calibration_measured", r.calibration_measured},
          {"details", r.details}};
}

RunReport ReadRunReport(const json& details) {
  RunReport r;
  if (!details.is_object()) return r;
  if (auto g = details.find("gpu"); g != details.end()) {
    if (g->is_string()) {
      r.gpu_name = g->get<std::string>();
    } else if (g->is_object()) {
      if (auto n = g->find("name"); n != g->end() && n->is_string()) r.gpu_name = n->get<std::string>();
      if (auto c = g->find("sm_count"); c != g->end() && c->is_number_integer()) r.gpu_sm_count = c->get<int>();
    }
  }
  if (auto t = details.find("torch"); t != details.end() && t->is_string()) r.torch_version = t->get<std::string>();
  if (auto s = details.find("served"); s != details.end() && s->is_object()) {
    ServedState st;
    if (auto v = s->find("request"); v != s->end() && v->is_number_integer()) st.request = v->get<int>();
    if (auto v = s->find("pid"); v != s->end() && v->is_number_integer()) st.pid = v->get<int>();
    if (auto v = s->find("next"); v != s->end() && v->is_string()) st.ready = v->get<std::string>() == "ready";
    if (auto v = s->find("why"); v != s->end() && v->is_string()) st.why = v->get<std::string>();
    r.served = st;
  }
  if (auto tl = details.find("timeline_s"); tl != details.end() && tl->is_object())
    for (const auto& [step, at] : tl->items())
      if (at.is_number()) r.timeline_s[step] = at.get<double>();
  auto seconds = [&](const char* key) {
    auto v = details.find(key);
    return v != details.end() && v->is_number() ? v->get<double>() : 0.0;
  };
  r.python_start_s = seconds("python_start_s");
  r.import_torch_s = seconds("import_torch_s");
  r.setup_s = seconds("candidate_setup_s") + seconds("reference_setup_s") + seconds("baseline_setup_s");
  r.compile_s = seconds("compile_s");
  r.lock_wait_s = seconds("gpu_lock_wait_s");
  r.check_s = seconds("check_s");
  r.timing_s = seconds("timing_s");
  if (auto m = details.find("out_of_memory"); m != details.end() && m->is_boolean()) r.out_of_memory = m->get<bool>();
  if (auto f = details.find("reference_flaws"); f != details.end() && f->is_array())
    for (const auto& x : *f)
      if (x.is_object() && x.contains("flaw") && x["flaw"].is_string())
        r.reference_flaws.push_back({x["flaw"].get<std::string>(), x.value("evidence", std::string())});
  return r;
}

double RunReport::ChecksAndTimingSeconds() const {
  auto objects = timeline_s.find("objects");
  if (objects == timeline_s.end()) return 0;
  auto last = timeline_s.find("timing");
  if (last == timeline_s.end()) last = timeline_s.find("checks");
  if (last == timeline_s.end()) return 0;
  return std::max(0.0, last->second - objects->second);
}

Result<RunResult> RunResultFromJson(const json& j) {
  try {
    RunResult r;
    r.version = j.at("kpilot_result_version").get<int>();
    if (r.version != kRunnerProtocolVersion)
      return Status::Internal("runner result has version " + std::to_string(r.version) + ", expected " +
                              std::to_string(kRunnerProtocolVersion));
    r.status = j.at("status").get<std::string>();
    r.message = j.value("message", "");
    r.phase = j.value("phase", "");
    for (const auto& c : j.at("checks")) {
      CheckRecord k;
      k.workload = c.at("workload").get<std::string>();
      k.seed = c.at("seed").get<uint64_t>();
      k.output = c.at("output").get<std::string>();
      k.numel = c.at("numel").get<int64_t>();
      k.mismatches = c.at("mismatches").get<int64_t>();
      k.max_abs_error = NumFrom(c.at("max_abs_error"));
      k.max_rel_error = NumFrom(c.at("max_rel_error"));
      k.first_bad_index = c.at("first_bad_index").get<int64_t>();
      k.first_bad_value = NumFrom(c.at("first_bad_value"));
      k.first_bad_expected = NumFrom(c.at("first_bad_expected"));
      k.guards_intact = c.at("guards_intact").get<bool>();
      k.ok = c.at("ok").get<bool>();
      r.checks.push_back(k);
    }
    for (const auto& t : j.at("timings")) {
      TimingRecord k;
      k.workload = t.at("workload").get<std::string>();
      k.candidate_ms = t.at("candidate_ms").get<std::vector<double>>();
      k.baseline_ms = t.at("baseline_ms").get<std::vector<double>>();
      k.method = t.value("method", "");
      k.statistic = t.value("statistic", "median");
      if (t.contains("host_ms")) k.host_ms = t.at("host_ms").get<std::vector<double>>();
      if (t.contains("cupti_ms")) k.cupti_ms = t.at("cupti_ms").get<std::vector<double>>();
      k.loop_wall_ms = t.value("loop_wall_ms", 0.0);
      k.joules_per_call = t.value("joules_per_call", 0.0);
      k.watts = t.value("watts", 0.0);
      k.baseline_joules_per_call = t.value("baseline_joules_per_call", 0.0);
      k.baseline_watts = t.value("baseline_watts", 0.0);
      r.timings.push_back(std::move(k));
    }
    r.candidate_stdout_tail = j.value("candidate_stdout_tail", "");
    r.candidate_stderr_tail = j.value("candidate_stderr_tail", "");
    if (j.contains("sandbox")) {
      const json& s = j.at("sandbox");
      r.sandbox = SandboxReportFromJson(s);
      r.leftover_processes_killed = s.value("leftover_processes_killed", 0);
    }
    r.exit_signal = j.value("exit_signal", 0);
    r.wall_s = j.value("wall_s", 0.0);
    if (j.contains("warnings")) r.warnings = j.at("warnings").get<std::vector<std::string>>();
    if (j.contains("calibration")) r.calibration = CalibrationFromJson(j.at("calibration"));
    r.calibration_measured = j.value("calibration_measured", false);
    if (j.contains("details")) r.details = j.at("details");
    return r;
  } catch (const std::exception& e) {
    return Status::Internal(std::string("runner result is malformed: ") + e.what());
  }
}

json ToJson(const Calibration& c) {
  return {{"gpu", c.gpu}, {"dram_bytes_per_s", c.dram_bytes_per_s}, {"fp32_flops_per_s", c.fp32_flops_per_s}};
}

Calibration CalibrationFromJson(const json& j) {
  Calibration c;
  c.gpu = j.value("gpu", "");
  c.dram_bytes_per_s = j.value("dram_bytes_per_s", 0.0);
  c.fp32_flops_per_s = j.value("fp32_flops_per_s", 0.0);
  return c;
}

}  // namespace kpilot
