// The options of a run, as stored with it (resume reuses them).
#include "optimize/options.h"

namespace kpilot {

using nlohmann::json;

std::optional<FeedbackMode> ParseFeedbackMode(const std::string& name) {
  if (name == "none") return FeedbackMode::kNone;
  if (name == "raw") return FeedbackMode::kRaw;
  if (name == "tools") return FeedbackMode::kTools;
  return std::nullopt;
}

std::optional<Objective> ParseObjective(std::string_view name) {
  if (name == "time") return Objective::kTime;
  if (name == "energy") return Objective::kEnergy;
  if (name == "mix") return Objective::kMix;
  return std::nullopt;
}

const char* ObjectiveName(Objective o) {
  switch (o) {
    case Objective::kTime:
      return "time";
    case Objective::kEnergy:
      return "energy";
    case Objective::kMix:
      return "mix";
  }
  return "time";
}

std::optional<GuidanceMode> ParseGuidanceMode(const std::string& name) {
  if (name == "proactive") return GuidanceMode::kProactive;
  if (name == "on-request") return GuidanceMode::kOnRequest;
  return std::nullopt;
}

const char* FeedbackModeName(FeedbackMode m) {
  switch (m) {
    case FeedbackMode::kNone:
      return "none";
    case FeedbackMode::kRaw:
      return "raw";
    case FeedbackMode::kTools:
      return "tools";
  }
  return "tools";
}

const char* GuidanceModeName(GuidanceMode m) { return m == GuidanceMode::kOnRequest ? "on-request" : "proactive"; }

Status ApplyAblationFlags(const std::string& feedback, const std::string& guidance, const std::string& memory,
                          OptimizeOptions* o) {
  auto f = ParseFeedbackMode(feedback);
  if (!f) return Status::InvalidInput("--feedback " + feedback + ": use none, raw or tools");
  auto t = ParseGuidanceMode(guidance);
  if (!t) return Status::InvalidInput("--guidance " + guidance + ": use proactive or on-request");
  if (memory != "on" && memory != "off") return Status::InvalidInput("--memory " + memory + ": use on or off");
  if (*f == FeedbackMode::kNone && o->raw_metrics)
    return Status::InvalidInput("--feedback none hides every measurement; drop --raw-metrics (or use --feedback raw)");
  o->feedback = *f;
  o->guidance = *t;
  o->memory = memory == "on";
  if (*f == FeedbackMode::kRaw) o->raw_metrics = true;
  return Status::Ok();
}

void FitSearchToGenerator(OptimizeOptions* o) {
  o->search.exploration = o->generator == "params" ? kGlobalDraftsExploration : SearchConfig{}.exploration;
}

json ToJson(const OptimizeOptions& o) {
  return {{"task_dir", o.task_dir},
          {"from", o.from},
          {"generator", o.generator},
          {"llm_config", o.llm_config},
          {"raw_metrics", o.raw_metrics},
          {"max_cost_usd", o.max_cost_usd},
          {"max_tokens", o.max_tokens},
          {"policy", PolicyName(o.search.policy)},
          {"exploration", o.search.exploration},
          {"widen_c", o.search.widen_c},
          {"widen_alpha", o.search.widen_alpha},
          {"asymmetry", o.search.asymmetry},
          {"failure_reward", o.search.failure_reward},
          {"prune_window", o.search.prune_window},
          {"beam_width", o.search.beam_width},
          {"max_weight", o.search.max_weight},
          {"regress_margin", o.search.regress_margin},
          {"budget", o.budget},
          {"time_limit_s", o.time_limit_s},
          {"plateau", o.plateau},
          {"target_fraction", o.target_fraction},
          {"objective", ObjectiveName(o.objective)},
          {"energy_weight", o.energy_weight},
          {"drafts_per_expansion", o.drafts_per_expansion},
          {"pipeline_depth", o.pipeline_depth},
          {"seed", o.seed},
          {"skills", o.skills},
          {"skill_dirs", o.skill_dirs},
          {"feedback", FeedbackModeName(o.feedback)},
          {"guidance", GuidanceModeName(o.guidance)},
          {"tool_dirs", o.tool_dirs},
          {"memory", o.memory},
          {"footprints", o.footprints},
          {"anticipate", o.anticipate},
          {"counters", o.counters},
          {"devices", o.devices},
          {"device", o.device},
          {"timing", std::string(TimingModeName(o.timing))},
          {"workloads", o.workloads},
          {"arch", o.arch},
          {"eval_timeout_s", o.eval_timeout_s},
          {"timing_max_seconds", o.timing_max_seconds},
          {"space", o.space_file},
          {"space_calibration", o.space_calibration}};
}

Status CheckOptions(const Task& task, const OptimizeOptions& o) {
  if (o.max_tokens < 0) return Status::InvalidInput("--max-tokens must be 0 (no cap) or more");
  if (o.plateau < 0) return Status::InvalidInput("--plateau must be 0 (off) or more");
  if (!(o.target_fraction >= 0 && o.target_fraction <= 2))
    return Status::InvalidInput("--target " + std::to_string(o.target_fraction) +
                                ": give a fraction of the roofline ceiling such as 0.85 (0 = off)");
  const bool live_cuda = task.backend == Backend::kCuda && o.space_file.empty();
  const std::string objective = ObjectiveName(o.objective);
  if (o.objective != Objective::kTime) {
    if (task.backend != Backend::kCuda || task.reference.kind == ReferenceKind::kPython)
      return Status::InvalidInput("--objective " + objective +
                                  " needs each candidate's joules per call, which kpilot "
                                  "measures through NVML for native cuda tasks only; task " +
                                  task.name +
                                  (task.backend != Backend::kCuda ? " runs on the host" : " is PyTorch-defined") +
                                  " — use --objective time");
    if (!live_cuda)
      return Status::InvalidInput("--objective " + objective +
                                  " cannot be replayed: a sweep space stores no joules "
                                  "— use --objective time with --space");
  }
  if (o.objective == Objective::kMix && !(o.energy_weight > 0 && o.energy_weight <= 10))
    return Status::InvalidInput("--energy-weight " + std::to_string(o.energy_weight) +
                                ": give a weight above 0 and at most 10 (1 values a halving of the joules like a "
                                "doubling of the speed)");
  if (o.target_fraction > 0 && task.backend != Backend::kCuda)
    return Status::InvalidInput(
        "--target needs the roofline ceiling, which kpilot measures for cuda tasks only (kpilot "
        "calibrate); task " +
        task.name +
        " runs on the host — stop it with --budget, --time "
        "or --plateau");
  return Status::Ok();
}

Result<OptimizeOptions> OptimizeOptionsFromJson(const json& j) {
  try {
    OptimizeOptions o;
    o.task_dir = j.at("task_dir").get<std::string>();
    o.from = j.at("from").get<std::string>();
    o.generator = j.at("generator").get<std::string>();
    o.llm_config = j.value("llm_config", "");
    o.raw_metrics = j.value("raw_metrics", false);
    o.max_cost_usd = j.value("max_cost_usd", 0.0);
    o.max_tokens = j.value("max_tokens", int64_t{0});  // runs stored before it existed had no token cap
    auto policy = ParsePolicy(j.at("policy").get<std::string>());
    if (!policy) return Status::InvalidInput("stored run options: unknown policy");
    o.search.policy = *policy;
    o.search.exploration = j.at("exploration").get<double>();
    o.search.widen_c = j.at("widen_c").get<double>();
    o.search.widen_alpha = j.at("widen_alpha").get<double>();
    o.search.asymmetry = j.at("asymmetry").get<double>();
    o.search.failure_reward = j.at("failure_reward").get<double>();
    o.search.prune_window = j.at("prune_window").get<int>();
    o.search.beam_width = j.at("beam_width").get<int>();
    o.search.max_weight = j.value("max_weight", o.search.max_weight);
    o.search.regress_margin = j.value("regress_margin", o.search.regress_margin);
    o.budget = j.at("budget").get<int>();
    o.time_limit_s = j.at("time_limit_s").get<double>();
    o.plateau = j.at("plateau").get<int>();
    o.target_fraction = j.at("target_fraction").get<double>();
    auto objective = ParseObjective(j.at("objective").get<std::string>());
    if (!objective) return Status::InvalidInput("stored run options: unknown objective " + j.at("objective").dump());
    o.objective = *objective;
    o.energy_weight = j.at("energy_weight").get<double>();
    o.drafts_per_expansion = j.at("drafts_per_expansion").get<int>();
    o.pipeline_depth = j.value("pipeline_depth", 2);  // runs stored before it existed used 2; 0 = adaptive
    o.seed = j.at("seed").get<uint64_t>();
    o.skills = j.value("skills", false);  // runs stored before cards existed had none
    o.skill_dirs = j.value("skill_dirs", std::vector<std::string>{});
    // Runs stored before the ablation switches existed had tools' guidance, proactive, with memory.
    auto feedback = ParseFeedbackMode(j.value("feedback", "tools"));
    // Runs stored before the guidance switch had its name were "tools".
    auto guidance = ParseGuidanceMode(j.value("guidance", j.value("tools", "proactive")));
    if (!feedback || !guidance) return Status::InvalidInput("stored run options: unknown feedback or guidance mode");
    o.feedback = *feedback;
    o.guidance = *guidance;
    o.tool_dirs = j.value("tool_dirs", std::vector<std::string>{});
    o.memory = j.value("memory", true);
    o.footprints = j.value("footprints", false);
    o.anticipate = j.value("anticipate", false);
    o.counters = j.value("counters", false);
    o.devices = j.value("devices", std::vector<int>{});
    o.device = j.value("device", 0);
    auto timing = ParseTimingMode(j.value("timing", "default"));
    if (!timing) return Status::InvalidInput("stored run options: unknown timing procedure");
    o.timing = *timing;
    o.workloads = j.at("workloads").get<std::vector<std::string>>();
    o.arch = j.at("arch").get<std::string>();
    o.eval_timeout_s = j.at("eval_timeout_s").get<double>();
    o.host_threads = j.value("host_threads", 0);
    o.timing_max_seconds = j.at("timing_max_seconds").get<double>();
    o.space_file = j.value("space", j.value("replay", ""));  // older stores name it "replay"
    o.space_calibration = j.value("space_calibration", "");
    return o;
  } catch (const std::exception& e) {
    return Status::InvalidInput(std::string("stored run options are malformed: ") + e.what());
  }
}

}  // namespace kpilot

namespace kpilot {

EvalOptions BaseEvalOptions(const OptimizeOptions& o) {
  EvalOptions e;
  e.workloads = o.workloads;
  e.compile.cuda_arch = o.arch;
  e.timeout_s = o.eval_timeout_s;
  e.host_threads = o.host_threads;
  e.timing.max_seconds = o.timing_max_seconds;
  e.energy = o.objective != Objective::kTime;
  e.device = o.device;
  e.timing.mode = o.timing;
  return e;
}

}  // namespace kpilot
