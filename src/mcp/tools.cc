// kpilot's MCP tools (mcp.h, KpilotTools): each a thin layer over the libraries `kpilot eval`,
// `kpilot profile`, `kpilot skills` and the llm: generator's code tools already use, answering
// with text for the model and the same as JSON.
#include <algorithm>
#include <chrono>
#include <set>

#include <fmt/format.h>

#include "core/fs.h"
#include "core/text.h"
#include "generate/code_tools.h"
#include "generate/prompt.h"
#include "mcp/mcp.h"
#include "task/loader.h"

namespace kpilot::mcp {

using nlohmann::json;

namespace {

json Schema(json properties, std::vector<std::string> required = {}) {
  return {{"type", "object"},
          {"properties", std::move(properties)},
          {"required", required},
          {"additionalProperties", false}};
}

json Prop(const std::string& type, const std::string& description) {
  return {{"type", type}, {"description", description}};
}

json FindingsJson(const std::vector<Finding>& findings, size_t limit) {
  json a = json::array();
  for (size_t i = 0; i < findings.size() && i < limit; ++i)
    a.push_back({{"id", findings[i].id},
                 {"severity", findings[i].severity},
                 {"guidance", findings[i].guidance},
                 {"evidence", findings[i].evidence}});
  return a;
}

ToolResult Answer(std::string text, json structured, bool is_error = false) {
  return {std::move(text), std::move(structured), is_error};
}

}  // namespace

struct KpilotTools::Impl {
  Impl(const Task& t, const AgentDeps& d, OptimizeOptions ro, KpilotToolsOptions o)
      : task(t), deps(d), run_options(std::move(ro)), options(std::move(o)) {
    CodeToolsOptions c;
    c.roots = options.code_roots;
    c.max_read_bytes = options.limits.max_read_bytes;
    code = std::make_unique<CodeTools>(c, nullptr);
  }

  Result<AgentRun*> Run(const std::string& client, const CallContext& ctx);
  Status Spent(bool evaluation) const;
  Result<ToolResult> DescribeTask();
  Result<ToolResult> Evaluate(const json& a, const std::string& client, const CallContext& ctx);
  Result<ToolResult> Profile(const json& a, const std::string& client, const CallContext& ctx);
  Result<ToolResult> SearchSkills(const json& a);
  Result<ToolResult> GetSkill(const json& a);
  Result<ToolResult> GetSource(const json& a, const std::string& client, const CallContext& ctx);
  Result<ToolResult> Finish(const std::string& client, const CallContext& ctx);
  Result<std::string> SourceArgument(const json& a, std::string* name) const;

  const Task& task;
  AgentDeps deps;
  OptimizeOptions run_options;
  KpilotToolsOptions options;
  std::unique_ptr<CodeTools> code;
  std::unique_ptr<AgentRun> agent_run;
  Status start_status;
  int profiles = 0;
  std::set<int64_t> profiled;  // nodes profiled with counters in this session
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
};

KpilotTools::KpilotTools(const Task& task, const AgentDeps& deps, OptimizeOptions run_options,
                         KpilotToolsOptions options)
    : impl_(std::make_unique<Impl>(task, deps, std::move(run_options), std::move(options))) {}

KpilotTools::~KpilotTools() = default;

int64_t KpilotTools::run_id() const { return impl_->agent_run ? impl_->agent_run->run_id() : 0; }

void KpilotTools::Close(const std::string& reason) {
  if (impl_->agent_run && !impl_->agent_run->finished()) (void)impl_->agent_run->Abandon(reason);
}

std::vector<ToolSpec> KpilotTools::Tools() const {
  const ToolLimits& l = impl_->options.limits;
  const std::string ext = CandidateExtension(impl_->task);
  std::vector<ToolSpec> t;
  t.push_back({"describe_task", "Describe the task",
               "The task: what to compute, inputs and outputs with dtypes and shapes, workloads, tunable params, "
               "the ABI a candidate implements (kpilot/kernel.h), how it is compiled, the reference source, the "
               "roofline per workload, and this session's limits. Call it first.",
               Schema(json::object())});
  json params_prop = {{"type", "object"},
                      {"description", "Tunable params NAME: VALUE (strings), compiled in as -D NAME=VALUE"},
                      {"additionalProperties", {{"type", "string"}}}};
  t.push_back(
      {"evaluate", "Evaluate a candidate",
       fmt::format("Compile, check against the reference on fresh random inputs (3 seeds per workload), and "
                   "time one candidate ({} source) against the task's baseline, in kpilot's sandbox. Give the "
                   "source text in `source`, or a file of your workspace in `file`. Returns the verdict with "
                   "its evidence, per-workload times and speedups with 95% CIs, and the node it became. A "
                   "candidate faster than the best is timed against it in one process and promoted only "
                   "when that paired speedup's CI lies above 1.",
                   ext),
       Schema({{"source",
                {{"type", "string"}, {"description", "The whole candidate file"}, {"maxLength", l.max_source_bytes}}},
               {"file", Prop("string", "A candidate file in the workspace (instead of `source`)")},
               {"name", Prop("string", "A file name for the candidate, e.g. tiled" + ext)},
               {"params", params_prop},
               {"parent",
                {{"type", "integer"},
                 {"minimum", 0},
                 {"description",
                  "The node this candidate derives from (default: your previous "
                  "evaluation; the starting candidate first)"}}},
               {"summary", Prop("string", "One line: what you changed and why")}}),
       false});
  t.push_back(
      {"profile", "Profile a node",
       "Why a node is slow: its roofline class, the profiling tools' findings with guidance (what to change "
       "and why, with the numbers), its registers, spills and shared memory; on a GPU task measured with the "
       "counters its class needs (CUPTI or ncu).",
       Schema({{"node",
                {{"type", "integer"}, {"minimum", 0}, {"description", "The node (default: your latest evaluation)"}}}}),
       false});
  t.push_back({"search_skills", "Search skill cards",
               "Skill cards (verified optimization techniques) that fit this task and a query, ranked: id, intent, "
               "why it fits.",
               Schema({{"query", Prop("string", "What you want to do, e.g. 'shared memory tiling bank conflicts'")},
                       {"limit", {{"type", "integer"}, {"minimum", 1}, {"description", "At most this many (8)"}}}},
                      {"query"})});
  t.push_back({"get_skill", "Read a skill card", "One skill card's whole text (its recipe, preconditions, risks).",
               Schema({{"id", Prop("string", "The card's id, from search_skills")}}, {"id"})});
  t.push_back({"search_code", "Search reference code",
               "Keyword or regex search over the reference source trees (CUTLASS/CuTe headers and examples), "
               "read-only; at most 30 ranked hits with file and line.",
               Schema({{"query", Prop("string", "Keywords, or a regex with regex=true")},
                       {"regex", Prop("boolean", "Treat query as a regular expression")},
                       {"path", Prop("string", "Only files whose path contains this")}},
                      {"query"})});
  t.push_back({"read_file", "Read reference code",
               "A slice of one file of the reference trees, as ROOT/relative/path from search_code.",
               Schema({{"path", Prop("string", "ROOT/relative/path")},
                       {"start_line", {{"type", "integer"}, {"minimum", 1}, {"description", "First line (1)"}}},
                       {"max_lines", {{"type", "integer"}, {"minimum", 1}, {"description", "Lines (200)"}}}},
                      {"path"})});
  t.push_back({"get_source", "A node's source", "The source and params of a node of this session (0: the start).",
               Schema({{"node", {{"type", "integer"}, {"minimum", 0}, {"description", "The node"}}}}, {"node"})});
  t.push_back({"best_so_far", "The best so far",
               "The promoted best of this session (speedup and CI) and the fastest node not confirmed by its paired "
               "check, with evaluations used and left.",
               Schema(json::object())});
  t.push_back({"history", "The session's nodes",
               "Every node so far, oldest first: parent, summary, verdict, speedup with CI, params.",
               Schema(json::object())});
  t.push_back({"finish", "Finish the session",
               "Evaluate the best once more against the task's baseline and record the session's run as finished. "
               "Call it when you are done; no evaluation follows.",
               Schema(json::object()), false});
  return t;
}

Result<AgentRun*> KpilotTools::Impl::Run(const std::string& client, const CallContext& ctx) {
  if (agent_run) return agent_run.get();
  // A start that failed (the starting candidate's evaluation could not run) is not tried again
  // with a new run at every call.
  if (!start_status.ok()) return start_status;
  if (!run_options.from.empty()) ctx.progress(0, 2, "evaluating the starting candidate " + run_options.from);
  auto started = AgentRun::Start(deps, run_options, {client, options.start_params, options.context});
  if (!started.ok()) {
    start_status = started.status().WithContext("starting the session's run");
    return start_status;
  }
  agent_run = std::move(started).value();
  return agent_run.get();
}

Status KpilotTools::Impl::Spent(bool evaluation) const {
  const ToolLimits& l = options.limits;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (l.max_wall_s > 0 && elapsed > l.max_wall_s)
    return Status::Unavailable(fmt::format(
        "this session's wall-time limit ({:.0f} s) is spent: call finish to have the best evaluated once more",
        l.max_wall_s));
  if (evaluation && agent_run && l.max_evaluations > 0 && agent_run->evaluations() >= l.max_evaluations)
    return Status::Unavailable(
        fmt::format("this session's {} evaluations are spent: call finish to have the best evaluated once more",
                    l.max_evaluations));
  if (!evaluation && l.max_profiles > 0 && profiles >= l.max_profiles)
    return Status::Unavailable(fmt::format("this session's {} profiles are spent", l.max_profiles));
  return Status::Ok();
}

Result<ToolResult> KpilotTools::Call(const std::string& name, const json& a, const std::string& client,
                                     const CallContext& ctx) {
  Impl& m = *impl_;
  const auto t0 = std::chrono::steady_clock::now();
  Result<ToolResult> r = Status::Internal("no such tool: " + name);
  if (name == "describe_task") r = m.DescribeTask();
  if (name == "evaluate") r = m.Evaluate(a, client, ctx);
  if (name == "profile") r = m.Profile(a, client, ctx);
  if (name == "search_skills") r = m.SearchSkills(a);
  if (name == "get_skill") r = m.GetSkill(a);
  if (name == "get_source") r = m.GetSource(a, client, ctx);
  if (name == "finish") r = m.Finish(client, ctx);
  if (name == "search_code" || name == "read_file") {
    const std::string text =
        name == "search_code"
            ? m.code->SearchCode(a.at("query").get<std::string>(), a.value("regex", false), a.value("path", ""))
            : m.code->ReadFile(a.at("path").get<std::string>(), a.value("start_line", 1), a.value("max_lines", 200));
    r = Answer(text, {{"text", text}}, text.rfind("error:", 0) == 0);
  }
  if (name == "best_so_far" || name == "history") {
    auto run = m.Run(client, ctx);
    if (!run.ok()) return run.status();
    json j = name == "history" ? json{{"nodes", (*run)->History()}} : (*run)->Best();
    if (name == "best_so_far" && m.options.limits.max_evaluations > 0)
      j["evaluations_left"] = std::max(0, m.options.limits.max_evaluations - (*run)->evaluations());
    r = Answer(j.dump(1), j);
  }
  // Every call once the session's run exists is recorded in it (sources by size, not text); the
  // run starts at the first call that needs it.
  if (m.agent_run) {
    json args = a;
    if (args.contains("source") && args["source"].is_string())
      args["source"] = fmt::format("({} bytes)", args["source"].get_ref<const std::string&>().size());
    json ev = {{"tool", name},
               {"arguments", args},
               {"seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()},
               {"ok", r.ok() && !r->is_error}};
    if (!r.ok()) ev["error"] = r.status().message();
    (void)m.deps.store.AddRunEvent(m.agent_run->run_id(), "tool_call", JsonText(ev));
  }
  return r;
}

Result<ToolResult> KpilotTools::Impl::DescribeTask() {
  PromptOptions po;
  po.abi_header = options.abi_header;
  po.cutlass_include = options.cutlass_include;
  po.cutlass_version = options.cutlass_version;
  ProposalContext ctx;
  ctx.task = &task;
  PromptVars v = BuildPromptVars(task, ctx, po);
  json j = {{"name", task.name},
            {"description", task.description},
            {"backend", std::string(BackendName(task.backend))},
            {"candidate_extension", CandidateExtension(task)},
            {"compile", v["compile_command"]}};
  json inputs = json::array(), outputs = json::array(), workloads = json::array();
  for (const auto& t : task.inputs)
    inputs.push_back({{"name", t.name}, {"dtype", DTypeName(t.dtype)}, {"shape", t.shape}});
  for (const auto& t : task.outputs)
    outputs.push_back({{"name", t.name}, {"dtype", DTypeName(t.dtype)}, {"shape", t.shape}});
  for (const auto& w : task.workloads) {
    json wj = {{"name", w.name}, {"axes", w.axes}};
    if (w.flops > 0) wj["flops"] = w.flops;
    if (w.min_bytes > 0) wj["min_bytes"] = w.min_bytes;
    if (w.flops > 0 && w.min_bytes > 0) wj["arithmetic_intensity"] = w.flops / w.min_bytes;
    workloads.push_back(wj);
  }
  j["inputs"] = inputs;
  j["outputs"] = outputs;
  j["workloads"] = workloads;
  json params = json::object();
  for (const auto& p : task.params) params[p.name] = p.values;
  j["params"] = params;
  j["constraints"] = task.constraints;
  j["cutlass"] = options.cutlass_include.empty()
                     ? json()
                     : json{{"version", options.cutlass_version}, {"include", options.cutlass_include}};
  j["start"] = run_options.from.empty() ? json() : json(run_options.from);
  j["limits"] = {{"evaluations", options.limits.max_evaluations},
                 {"profiles", options.limits.max_profiles},
                 {"wall_s", options.limits.max_wall_s},
                 {"source_bytes", options.limits.max_source_bytes}};
  std::string text =
      fmt::format("# Task {} ({})\n\n{}\n\nCandidates are {} files, compiled with {}.\n\n", task.name,
                  BackendName(task.backend), task.description, CandidateExtension(task), v["compile_command"]);
  text += "## task.toml\n\n" + v["task_toml"] + "\n## The ABI a candidate implements (kpilot/kernel.h)\n\n" +
          v["abi_header"] + "\n## Reference (" + v["reference_name"] + ")\n\n" + v["reference_source"] + "\n" +
          v["params"];
  text += fmt::format(
      "## This session\n\n{}Limits: {} evaluations, {} profiles{}. Every evaluation becomes a node (the starting "
      "candidate is node 0 when there is one); call finish at the end.\n",
      run_options.from.empty() ? "" : "Starting candidate: " + run_options.from + " (node 0; get_source 0).\n",
      options.limits.max_evaluations > 0 ? std::to_string(options.limits.max_evaluations) : "no limit of",
      options.limits.max_profiles > 0 ? std::to_string(options.limits.max_profiles) : "no limit of",
      options.limits.max_wall_s > 0 ? fmt::format(", {:.0f} s of wall time", options.limits.max_wall_s) : "");
  j["text"] = text;
  return Answer(text, j);
}

Result<std::string> KpilotTools::Impl::SourceArgument(const json& a, std::string* name) const {
  const bool has_source = a.contains("source"), has_file = a.contains("file");
  if (has_source == has_file)
    return Status::InvalidInput(
        "give the candidate either as `source` (its text) or as `file` (a path in the "
        "workspace), not " +
        std::string(has_source ? "both" : "neither"));
  const std::string ext = CandidateExtension(task);
  if (has_source) {
    *name = a.value("name", "candidate" + ext);
    return a["source"].get<std::string>();
  }
  std::filesystem::path root = std::filesystem::weakly_canonical(options.workspace);
  std::filesystem::path p = std::filesystem::weakly_canonical(root / a["file"].get<std::string>());
  auto rel = p.lexically_relative(root);
  if (rel.empty() || *rel.begin() == ".." || a["file"].get_ref<const std::string&>().find('\0') != std::string::npos)
    return Status::InvalidInput("file " + a["file"].get<std::string>() + " is outside the workspace " + root.string());
  std::error_code ec;
  if (!std::filesystem::is_regular_file(p, ec))
    return Status::InvalidInput("file " + a["file"].get<std::string>() + " does not exist in the workspace " +
                                root.string());
  const auto size = std::filesystem::file_size(p, ec);
  if (!ec && size > options.limits.max_source_bytes)
    return Status::InvalidInput(fmt::format("file {} is {} bytes; the limit is {}", a["file"].get<std::string>(), size,
                                            options.limits.max_source_bytes));
  *name = a.value("name", p.filename().string());
  return ReadFile(p);
}

Result<ToolResult> KpilotTools::Impl::Evaluate(const json& a, const std::string& client, const CallContext& ctx) {
  std::string name;
  auto source = SourceArgument(a, &name);
  if (!source.ok()) return source.status();
  const std::string ext = CandidateExtension(task);
  if (std::filesystem::path(name).extension() != ext)
    return Status::InvalidInput("name " + name + ": a candidate of task " + task.name + " is a " + ext + " file");
  AgentDraft d;
  d.source = *source;
  d.source_name = std::filesystem::path(name).filename().string();
  d.summary = a.value("summary", "");
  if (a.contains("params"))
    for (const auto& [k, v] : a["params"].items()) d.params[k] = v.get<std::string>();
  if (a.contains("parent")) d.parent = a["parent"].get<int64_t>();
  if (Status s = CheckParams(task, d.params); !s.ok()) return Status::InvalidInput("params " + s.message());
  auto run = Run(client, ctx);
  if (!run.ok()) return run.status();
  if (Status s = Spent(true); !s.ok()) return s;
  if (ctx.cancelled()) return Status::Unavailable("the client cancelled the call");
  ctx.progress(1, 2, "compiling, checking and timing " + d.source_name);
  auto step = (*run)->Evaluate(d);
  if (!step.ok()) return step.status();
  ctx.progress(2, 2, "done");
  const Evaluation& e = step->evaluation;
  json timings = json::array();
  for (const auto& t : e.timings)
    timings.push_back({{"workload", t.workload},
                       {"candidate_ms", t.candidate_reported_ms},
                       {"baseline_ms", t.baseline_reported_ms},
                       {"statistic", t.statistic},
                       {"speedup", t.speedup.ratio},
                       {"ci", ToJson(t.speedup.ci)}});
  json resources = json::array();
  for (const auto& r : e.compile.resources) resources.push_back(ToJson(r));
  json j = {{"node", step->node},
            {"parent", step->parent},
            {"verdict", VerdictName(e.verdict.kind)},
            {"summary", e.verdict.summary},
            {"evidence", e.verdict.evidence},
            {"baseline", e.baseline},
            {"speedup", e.speedup_geomean},
            {"ci", ToJson(e.speedup_geomean_ci)},
            {"timings", timings},
            {"resources", resources},
            {"class", step->bottleneck},
            {"findings", FindingsJson(step->findings, 3)},
            {"best_node", step->incumbent},
            {"compile_s", e.compile_s},
            {"run_s", e.run_s},
            {"total_s", e.total_s},
            {"evaluations", (*run)->evaluations()}};
  if (step->duplicate) j["duplicate_of"] = step->duplicate_of;
  if (!step->promotion.empty()) j["promotion"] = step->promotion;
  if (step->promotion == "promoted" || step->promotion == "rejected") {
    j["paired_speedup_over_best"] = step->paired_speedup;
    j["paired_ci"] = ToJson(step->paired_ci);
  }
  if (options.limits.max_evaluations > 0)
    j["evaluations_left"] = std::max(0, options.limits.max_evaluations - (*run)->evaluations());
  std::string text;
  if (step->duplicate)
    text += fmt::format("Same binary as node {}: not evaluated again; its verdict follows.\n", step->duplicate_of);
  text += fmt::format("node {} (parent {}): {} — {}\n", step->node, step->parent, VerdictName(e.verdict.kind),
                      e.verdict.summary);
  if (!e.verdict.passed() && e.verdict.evidence.contains("log_excerpt"))
    text += "compiler log (from the first error):\n" + e.verdict.evidence["log_excerpt"].get<std::string>() + "\n";
  else if (!e.verdict.passed() && !e.verdict.evidence.empty())
    text += "evidence: " + e.verdict.evidence.dump() + "\n";
  for (const auto& t : e.timings)
    text +=
        fmt::format("  {}: {} vs {} {} → {:.3f}× [{:.3f}, {:.3f}]\n", t.workload, FormatMs(t.candidate_reported_ms),
                    e.baseline, FormatMs(t.baseline_reported_ms), t.speedup.ratio, t.speedup.ci.lo, t.speedup.ci.hi);
  if (!e.timings.empty())
    text += fmt::format("geomean speedup over {}: {:.3f}× [{:.3f}, {:.3f}]\n", e.baseline, e.speedup_geomean,
                        e.speedup_geomean_ci.lo, e.speedup_geomean_ci.hi);
  if (step->promotion == "promoted" || step->promotion == "rejected")
    text += fmt::format("paired check against the best: {:.3f}× [{:.3f}, {:.3f}] → {}\n", step->paired_speedup,
                        step->paired_ci.lo, step->paired_ci.hi, step->promotion);
  else if (!step->promotion.empty())
    text += "promoted: " + step->promotion + "\n";
  if (!step->bottleneck.empty()) text += "class: " + step->bottleneck + "\n";
  for (size_t i = 0; i < step->findings.size() && i < 3; ++i)
    text += "finding " + step->findings[i].id + ": " + step->findings[i].guidance + "\n";
  text += fmt::format("best node: {}; evaluations {}{}\n", step->incumbent, (*run)->evaluations(),
                      options.limits.max_evaluations > 0 ? fmt::format(" of {}", options.limits.max_evaluations) : "");
  return Answer(text, j);
}

Result<ToolResult> KpilotTools::Impl::Profile(const json& a, const std::string& client, const CallContext& ctx) {
  auto run = Run(client, ctx);
  if (!run.ok()) return run.status();
  auto history = (*run)->History();
  if (history.empty()) return Status::InvalidInput("there is no node to profile yet: evaluate a candidate first");
  const int64_t node = a.contains("node") ? a["node"].get<int64_t>() : history.back()["node"].get<int64_t>();
  // Only counter profiles made now count against the limit; static findings and a profile
  // already made cost nothing.
  const bool profiled_before = profiled.count(node) > 0;
  if (!profiled_before)
    if (Status s = Spent(false); !s.ok()) return s;
  ctx.progress(1, 2, fmt::format("profiling node {}", node));
  auto p = (*run)->Profile(node);
  if (!p.ok()) return p.status();
  if ((*p)["profiled_with"] == "counters" && !profiled_before) {
    ++profiles;
    profiled.insert(node);
  }
  std::string text =
      fmt::format("node {}: {} (profiled with {}{})\n", node,
                  (*p)["class"].get<std::string>().empty() ? "class unknown" : (*p)["class"].get<std::string>(),
                  (*p)["profiled_with"].get<std::string>(),
                  p->contains("why_static") ? ": " + (*p)["why_static"].get<std::string>() : "");
  for (const auto& f : (*p)["findings"])
    text += fmt::format("- {} (severity {:.2f}): {}\n  evidence: {}\n", f["id"].get<std::string>(),
                        f.value("severity", 0.0), f.value("guidance", ""), f.value("evidence", json::object()).dump());
  if ((*p)["findings"].empty()) text += "no findings\n";
  return Answer(text, *p);
}

Result<ToolResult> KpilotTools::Impl::SearchSkills(const json& a) {
  json cards = json::array();
  std::string text;
  if (options.skills) {
    RetrievalContext rc;
    rc.task_text = a["query"].get<std::string>() + " " + task.name + " " + task.description;
    rc.platform = options.platform;
    rc.language = task.backend == Backend::kCuda ? "cuda" : "cpp";
    for (const auto& t : task.inputs) rc.dtypes.insert(std::string(DTypeName(t.dtype)));
    RetrieveOptions ro;
    ro.limit = a.value("limit", 8);
    Retrieval r = Retrieve(*options.skills, rc, ro);
    for (const auto& c : r.cards) {
      cards.push_back({{"id", c.card->id},
                       {"intent", c.card->intent},
                       {"description", c.card->description},
                       {"origin", std::string(SkillOriginName(c.card->origin))},
                       {"text_only", c.card->text_only},
                       {"why", c.reason}});
      text += fmt::format("- {}: {}\n  why: {}\n", c.card->id,
                          c.card->intent.empty() ? c.card->description : c.card->intent, c.reason);
    }
  }
  if (cards.empty()) text = "no skill card fits this query and task\n";
  return Answer(text, {{"cards", cards}});
}

Result<ToolResult> KpilotTools::Impl::GetSkill(const json& a) {
  const std::string id = a["id"];
  const SkillCard* card = options.skills ? options.skills->Find(id) : nullptr;
  if (!card) return Status::InvalidInput("no skill card " + id + " (search_skills lists them)");
  auto text = ReadFile(card->source);
  if (!text.ok()) return text.status();
  std::string body = *text;
  if (body.size() > options.limits.max_read_bytes) {
    size_t cut = body.rfind('\n', options.limits.max_read_bytes);
    body = body.substr(0, cut == std::string::npos ? options.limits.max_read_bytes : cut) + "\n[cut]\n";
  }
  return Answer(body, {{"id", id}, {"text", body}});
}

Result<ToolResult> KpilotTools::Impl::GetSource(const json& a, const std::string& client, const CallContext& ctx) {
  auto run = Run(client, ctx);
  if (!run.ok()) return run.status();
  auto d = (*run)->NodeSource(a["node"].get<int64_t>());
  if (!d.ok()) return Status::InvalidInput(d.status().message());
  json j = {{"node", a["node"]}, {"name", d->source_name}, {"params", d->params}, {"source", d->source}};
  return Answer(fmt::format("node {} ({}, params {}):\n{}", a["node"].get<int64_t>(), d->source_name,
                            ParamsText(d->params, "(defaults)"), d->source),
                j);
}

Result<ToolResult> KpilotTools::Impl::Finish(const std::string& client, const CallContext& ctx) {
  auto run = Run(client, ctx);
  if (!run.ok()) return run.status();
  ctx.progress(1, 2, "evaluating the best once more");
  auto res = (*run)->Finish("the agent finished");
  if (!res.ok()) return res.status();
  json j = {{"run", res->run_id}, {"evaluations", res->evaluations}};
  std::string text;
  if (res->best_node < 0 || res->final.verdict.kind != VerdictKind::kPassed) {
    j["best"] = nullptr;
    text = fmt::format(
        "run {} finished with no passing candidate{}.\n", res->run_id,
        res->best_node >= 0 ? " (the best failed its final evaluation: " + res->final.verdict.summary + ")" : "");
  } else {
    j["best"] = {{"node", res->best_node},
                 {"speedup", res->final.speedup_geomean},
                 {"ci", ToJson(res->final.speedup_geomean_ci)},
                 {"params", res->best_params}};
    text = fmt::format(
        "run {} finished: best node {}, evaluated once more at {:.3f}× [{:.3f}, {:.3f}] over {}.\n"
        "kpilot export {} DIR writes it out; kpilot report {} shows the session.\n",
        res->run_id, res->best_node, res->final.speedup_geomean, res->final.speedup_geomean_ci.lo,
        res->final.speedup_geomean_ci.hi, res->final.baseline, res->run_id, res->run_id);
  }
  return Answer(text, j);
}

}  // namespace kpilot::mcp
