// The metrics of a bench run and their renderings (table, JSON, Markdown).
#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "bench/bench.h"
#include "core/text.h"

namespace kpilot {

using nlohmann::json;

namespace {

json ToJson(const ProblemSeconds& s) {
  return {{"load", s.load},
          {"python_start", s.python_start},
          {"import_torch", s.import_torch},
          {"setup", s.setup},
          {"compile", s.compile},
          {"lock_wait", s.lock_wait},
          {"checks", s.checks},
          {"timing", s.timing},
          {"evaluations", s.evaluations}};
}

ProblemSeconds ProblemSecondsFromJson(const json& j) {
  ProblemSeconds s;
  s.load = j.value("load", 0.0);
  s.python_start = j.value("python_start", 0.0);
  s.import_torch = j.value("import_torch", 0.0);
  s.setup = j.value("setup", 0.0);
  s.compile = j.value("compile", 0.0);
  s.lock_wait = j.value("lock_wait", 0.0);
  s.checks = j.value("checks", 0.0);
  s.timing = j.value("timing", 0.0);
  s.evaluations = j.value("evaluations", 0);
  return s;
}

void Add(ProblemSeconds* to, const ProblemSeconds& s) {
  to->load += s.load;
  to->python_start += s.python_start;
  to->import_torch += s.import_torch;
  to->setup += s.setup;
  to->compile += s.compile;
  to->lock_wait += s.lock_wait;
  to->checks += s.checks;
  to->timing += s.timing;
  to->evaluations += s.evaluations;
}

double SpeedupOver(const ProblemResult& r, Baseline b) {
  if (!r.correct()) return 0;
  if (b == Baseline::kCompile) return r.compile_measured ? r.speedup_compile : 0;
  return r.speedup_eager;
}

BaselineMetrics MetricsOver(const std::vector<ProblemResult>& results, Baseline b) {
  BaselineMetrics m;
  for (const auto& r : results) m.measured += SpeedupOver(r, b) > 0;
  for (size_t i = 0; i < kFastPCount; ++i) m.fast_p[i] = FastP(results, kFastP[i], b);
  m.geomean = GeomeanSpeedup(results, b);
  return m;
}

LevelReport Level(const std::string& name, const std::vector<ProblemResult>& results) {
  LevelReport l;
  l.level = name;
  l.problems = static_cast<int>(results.size());
  for (const auto& r : results) {
    l.correct += r.correct();
    l.errors += !r.error.empty();
    l.evaluations += r.evaluations;
    l.requests += r.requests;
    l.input_tokens += r.input_tokens;
    l.output_tokens += r.output_tokens;
    l.cost_usd += r.cost_usd;
    l.gpu_s += r.gpu_s;
    l.wall_s += r.wall_s;
    Add(&l.seconds, r.seconds);
    l.flawed += !r.reference_findings.empty();
    l.compile_cached += r.compile_measured && r.compile_cached;
  }
  l.correctness = l.problems ? static_cast<double>(l.correct) / l.problems : 0;
  l.eager = MetricsOver(results, Baseline::kEager);
  l.compile = MetricsOver(results, Baseline::kCompile);
  return l;
}

json ToJson(const BaselineMetrics& m) {
  json fast = json::object();
  for (size_t i = 0; i < kFastPCount; ++i) fast[fmt::format("{:g}", kFastP[i])] = m.fast_p[i];
  return {{"measured", m.measured}, {"fast_p", fast}, {"geomean_speedup", m.geomean}};
}

json ToJson(const LevelReport& l) {
  return {{"level", l.level},
          {"problems", l.problems},
          {"correct", l.correct},
          {"errors", l.errors},
          {"correctness", l.correctness},
          {"eager", ToJson(l.eager)},
          {"compile", ToJson(l.compile)},
          {"cost",
           {{"evaluations", l.evaluations},
            {"requests", l.requests},
            {"input_tokens", l.input_tokens},
            {"output_tokens", l.output_tokens},
            {"cost_usd", l.cost_usd},
            {"gpu_s", l.gpu_s},
            {"wall_s", l.wall_s}}},
          {"seconds", ToJson(l.seconds)},
          {"flawed_references", l.flawed},
          {"compile_cached", l.compile_cached}};
}

// "83%"; a geomean "2.41×"; "—" for a baseline no correct problem was measured against.
std::string Percent(double v) { return fmt::format("{:.0f}%", 100 * v); }
std::string Times(const BaselineMetrics& m) { return m.measured ? fmt::format("{:.3f}×", m.geomean) : "—"; }
std::string FastCell(const BaselineMetrics& m, size_t i) { return m.measured || i == 0 ? Percent(m.fast_p[i]) : "—"; }

// The rows both renderings share: one per level (and "all" when there are several levels).
std::vector<const LevelReport*> Rows(const BenchReport& r) {
  std::vector<const LevelReport*> rows;
  for (const auto& l : r.levels) rows.push_back(&l);
  if (r.levels.size() != 1) rows.push_back(&r.total);
  return rows;
}

// A level's seconds per problem, split; `other` is the wall time no step accounts for.
struct SecondsSplit {
  double wall = 0, load = 0, python = 0, torch = 0, setup = 0, compile = 0, lock_wait = 0, checks = 0, timing = 0,
         other = 0;
};
SecondsSplit MeanSplit(const LevelReport& l) {
  SecondsSplit m;
  if (l.problems == 0) return m;
  const double n = l.problems;
  const ProblemSeconds& s = l.seconds;
  m = {l.wall_s / n,  s.load / n,      s.python_start / n, s.import_torch / n, s.setup / n,
       s.compile / n, s.lock_wait / n, s.checks / n,       s.timing / n,       0};
  m.other =
      std::max(0.0, m.wall - m.load - m.python - m.torch - m.setup - m.compile - m.lock_wait - m.checks - m.timing);
  return m;
}

// `text` in a Markdown table's cell: its line breaks as spaces, its pipes escaped.
std::string MarkdownCell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c == '\n' ? ' ' : c;
  }
  return out;
}

std::string ProblemCell(const ProblemResult& p) {
  std::string flaws;
  for (const auto& f : p.reference_findings)
    flaws += (flaws.empty() ? " [reference: " : ", ") + std::string(ReferenceFlawName(f.flaw));
  if (!flaws.empty()) flaws += "]";
  if (!p.error.empty()) return "error: " + Gist(p.error, 160);
  if (!p.correct()) return p.verdict + flaws + (p.message.empty() ? "" : ": " + Gist(p.message, 160));
  return fmt::format("{:.3f}× eager{}", p.speedup_eager,
                     p.compile_measured ? fmt::format(", {:.3f}× compile", p.speedup_compile) : "") +
         flaws;
}

// "Wall time 448 s (7.5 min) over 2 slices: 100 problems in 171 s, 150 in 277 s." ("" when no
// result says its slice).
std::string WallSentence(const BenchReport& r) {
  if (r.slices.empty()) return "";
  std::string s = fmt::format("Wall time {:.0f} s ({:.1f} min)", r.wall_s, r.wall_s / 60);
  if (r.slices.size() > 1) {
    s += fmt::format(" over {} slices:", r.slices.size());
    for (size_t i = 0; i < r.slices.size(); ++i)
      s += fmt::format("{} {}{} in {:.0f} s", i ? "," : "", r.slices[i].problems, i ? "" : " problems",
                       r.slices[i].wall_s);
  }
  return s + ".";
}

// "torch.compile times: 248 of 250 read from the baseline cache, 2 timed." ("" when none was had).
std::string CompileCacheSentence(const BenchReport& r) {
  const int measured = r.total.compile.measured, cached = r.total.compile_cached;
  if (measured == 0) return "";
  return fmt::format("torch.compile times: {} of {} read from the baseline cache, {} timed.", cached, measured,
                     measured - cached);
}

}  // namespace

const char* ReferenceFlawName(ReferenceFlaw f) {
  switch (f) {
    case ReferenceFlaw::kConstantOutput:
      return "constant_output";
    case ReferenceFlaw::kIgnoresInputs:
      return "ignores_inputs";
    case ReferenceFlaw::kRandom:
      return "random";
    case ReferenceFlaw::kNondeterministic:
      return "nondeterministic";
  }
  return "?";
}

std::optional<ReferenceFlaw> ParseReferenceFlaw(const std::string& name) {
  for (ReferenceFlaw f : {ReferenceFlaw::kConstantOutput, ReferenceFlaw::kIgnoresInputs, ReferenceFlaw::kRandom,
                          ReferenceFlaw::kNondeterministic})
    if (name == ReferenceFlawName(f)) return f;
  return std::nullopt;
}

double FastP(const std::vector<ProblemResult>& results, double p, Baseline b) {
  if (results.empty()) return 0;
  int fast = 0;
  for (const auto& r : results) fast += SpeedupOver(r, b) > p;
  return static_cast<double>(fast) / static_cast<double>(results.size());
}

double GeomeanSpeedup(const std::vector<ProblemResult>& results, Baseline b) {
  double log_sum = 0;
  int n = 0;
  for (const auto& r : results)
    if (double s = SpeedupOver(r, b); s > 0) {
      log_sum += std::log(s);
      ++n;
    }
  return n ? std::exp(log_sum / n) : 0;
}

json ToJson(const ProblemResult& r) {
  json w = json::array();
  for (const auto& x : r.workloads)
    w.push_back({{"name", x.name},
                 {"passed", x.passed},
                 {"speedup", x.speedup},
                 {"ci", {x.ci_lo, x.ci_hi}},
                 {"candidate_ms", x.candidate_ms},
                 {"eager_ms", x.eager_ms}});
  json flaws = json::array();
  for (const auto& f : r.reference_findings)
    flaws.push_back({{"flaw", ReferenceFlawName(f.flaw)}, {"evidence", f.evidence}});
  return {{"id", r.id},
          {"level", r.level},
          {"error", r.error},
          {"verdict", r.verdict},
          {"message", r.message},
          {"out_of_memory", r.out_of_memory},
          {"correct", r.correct()},
          {"speedup_eager", r.speedup_eager},
          {"speedup_compile", r.speedup_compile},
          {"compile_measured", r.compile_measured},
          {"compile_cached", r.compile_cached},
          {"candidate", r.candidate},
          {"where", r.where},
          {"run", r.run_id},
          {"evaluations", r.evaluations},
          {"requests", r.requests},
          {"input_tokens", r.input_tokens},
          {"output_tokens", r.output_tokens},
          {"cost_usd", r.cost_usd},
          {"gpu_s", r.gpu_s},
          {"wall_s", r.wall_s},
          {"slice", r.slice},
          {"finished_at_s", r.finished_at_s},
          {"workloads", w},
          {"seconds", ToJson(r.seconds)},
          {"reference_flaws", flaws},
          {"warnings", r.warnings},
          {"traces", r.traces}};
}

Result<ProblemResult> ProblemResultFromJson(const json& j) {
  try {
    ProblemResult r;
    r.id = j.at("id").get<std::string>();
    r.level = j.at("level").get<std::string>();
    r.error = j.value("error", "");
    r.verdict = j.value("verdict", "");
    r.message = j.value("message", "");
    r.out_of_memory = j.value("out_of_memory", false);
    r.speedup_eager = j.value("speedup_eager", 0.0);
    r.speedup_compile = j.value("speedup_compile", 0.0);
    r.compile_measured = j.value("compile_measured", false);
    r.compile_cached = j.value("compile_cached", false);
    r.candidate = j.value("candidate", "");
    r.where = j.value("where", "");
    r.run_id = j.value("run", int64_t{0});
    r.evaluations = j.value("evaluations", 0);
    r.requests = j.value("requests", int64_t{0});
    r.input_tokens = j.value("input_tokens", int64_t{0});
    r.output_tokens = j.value("output_tokens", int64_t{0});
    r.cost_usd = j.value("cost_usd", 0.0);
    r.gpu_s = j.value("gpu_s", 0.0);
    r.wall_s = j.value("wall_s", 0.0);
    r.slice = j.value("slice", 0);
    r.finished_at_s = j.value("finished_at_s", 0.0);
    for (const auto& w : j.value("workloads", json::array())) {
      WorkloadScore x{w.value("name", ""), w.value("passed", false), w.value("speedup", 0.0)};
      if (auto ci = w.find("ci"); ci != w.end() && ci->is_array() && ci->size() == 2) {
        x.ci_lo = (*ci)[0].get<double>();
        x.ci_hi = (*ci)[1].get<double>();
      }
      x.candidate_ms = w.value("candidate_ms", 0.0);
      x.eager_ms = w.value("eager_ms", 0.0);
      r.workloads.push_back(x);
    }
    if (auto sec = j.find("seconds"); sec != j.end() && sec->is_object()) r.seconds = ProblemSecondsFromJson(*sec);
    for (const auto& f : j.value("reference_flaws", json::array()))
      if (auto flaw = ParseReferenceFlaw(f.value("flaw", "")))
        r.reference_findings.push_back({*flaw, f.value("evidence", "")});
    r.warnings = j.value("warnings", std::vector<std::string>{});
    r.traces = j.value("traces", json::array());
    return r;
  } catch (const std::exception& e) {
    return Status::InvalidInput(std::string("a stored bench result is malformed: ") + e.what());
  }
}

BenchReport Summarize(const std::string& suite, SuiteFormat format, const std::vector<ProblemResult>& results,
                      const ContestScoreFn& contest_score) {
  BenchReport rep;
  rep.suite = suite;
  rep.format = SuiteFormatName(format);
  rep.results = results;
  std::vector<std::string> order;
  for (const auto& r : results)
    if (std::find(order.begin(), order.end(), r.level) == order.end()) order.push_back(r.level);
  for (const auto& level : order) {
    std::vector<ProblemResult> in;
    for (const auto& r : results)
      if (r.level == level) in.push_back(r);
    rep.levels.push_back(Level(level, in));
  }
  rep.total = Level("all", results);
  std::map<int, SliceWall> slices;
  for (const auto& r : results) {
    if (r.slice <= 0) continue;
    SliceWall& w = slices[r.slice];
    w.slice = r.slice;
    ++w.problems;
    w.wall_s = std::max(w.wall_s, r.finished_at_s);
  }
  for (const auto& [n, w] : slices) {
    rep.slices.push_back(w);
    rep.wall_s += w.wall_s;
  }
  if (format == SuiteFormat::kFlashInfer && contest_score) {
    for (const auto& r : results) {
      DefinitionScore d;
      d.id = r.id;
      std::vector<double> speedups;
      std::vector<bool> passed;
      for (const auto& w : r.workloads) {
        speedups.push_back(w.speedup);
        passed.push_back(w.passed && r.error.empty());
        d.passed += w.passed;
      }
      d.workloads = static_cast<int>(r.workloads.size());
      // A definition that did not run, or ran no workload, scores zero.
      d.score = r.error.empty() && !speedups.empty() ? contest_score(speedups, passed) : 0;
      rep.contest.push_back(d);
    }
  }
  return rep;
}

json ToJson(const BenchReport& r) {
  json levels = json::array();
  for (const auto& l : r.levels) levels.push_back(ToJson(l));
  json problems = json::array();
  for (const auto& p : r.results) problems.push_back(ToJson(p));
  json slices = json::array();
  for (const auto& w : r.slices) slices.push_back({{"slice", w.slice}, {"problems", w.problems}, {"wall_s", w.wall_s}});
  json j = {{"suite", r.suite},   {"format", r.format},       {"fast_p_rule", "correct and speedup > p"},
            {"levels", levels},   {"total", ToJson(r.total)}, {"problems", problems},
            {"wall_s", r.wall_s}, {"slices", slices}};
  if (!r.contest.empty()) {
    json c = json::array();
    for (const auto& d : r.contest)
      c.push_back({{"definition", d.id}, {"score", d.score}, {"workloads", d.workloads}, {"passed", d.passed}});
    j["contest"] = c;
  }
  return j;
}

std::string ReportTable(const BenchReport& r) {
  std::string s = fmt::format("suite {} ({}): {} problems\n", r.suite, r.format, r.total.problems);
  for (const std::string& line : {WallSentence(r), CompileCacheSentence(r)})
    if (!line.empty()) s += line + "\n";
  s += "\n";
  std::string head = fmt::format("{:<8} {:>5} {:>8}", "level", "n", "correct");
  for (double p : kFastP) head += fmt::format(" {:>7}", fmt::format("fast_{:g}", p));
  head += fmt::format(" {:>9}", "geomean");
  for (const char* base : {"eager", "torch.compile"}) {
    s += "against " + std::string(base) + "\n" + head + "\n";
    for (const LevelReport* l : Rows(r)) {
      const BaselineMetrics& m = std::string(base) == "eager" ? l->eager : l->compile;
      s += fmt::format("{:<8} {:>5} {:>8}", l->level, l->problems, Percent(l->correctness));
      for (size_t i = 0; i < kFastPCount; ++i) s += fmt::format(" {:>7}", FastCell(m, i));
      s += fmt::format(" {:>9}\n", Times(m));
    }
    s += "\n";
  }
  s += "cost\n";
  s += fmt::format("{:<8} {:>11} {:>9} {:>13} {:>13} {:>10} {:>9}\n", "level", "evaluations", "requests",
                   "input tokens", "output tokens", "US$", "GPU s");
  for (const LevelReport* l : Rows(r))
    s += fmt::format("{:<8} {:>11} {:>9} {:>13} {:>13} {:>10.4f} {:>9.1f}\n", l->level, l->evaluations, l->requests,
                     l->input_tokens, l->output_tokens, l->cost_usd, l->gpu_s);
  if (r.total.seconds.evaluations > 0) {
    s += "\nseconds per problem (mean): where the wall time went\n";
    s += fmt::format("{:<8} {:>7} {:>7} {:>9} {:>9} {:>7} {:>7} {:>9} {:>7} {:>7} {:>7}\n", "level", "wall", "load",
                     "python", "torch", "setup", "compile", "lock wait", "checks", "timing", "other");
    for (const LevelReport* l : Rows(r)) {
      const SecondsSplit m = MeanSplit(*l);
      s += fmt::format(
          "{:<8} {:>7.1f} {:>7.1f} {:>9.2f} {:>9.1f} {:>7.1f} {:>7.1f} {:>9.1f} {:>7.1f} {:>7.1f} {:>7.1f}\n", l->level,
          m.wall, m.load, m.python, m.torch, m.setup, m.compile, m.lock_wait, m.checks, m.timing, m.other);
    }
  }
  if (r.total.flawed > 0) {
    s += fmt::format("\nproblems whose reference cannot tell right from wrong ({})\n", r.total.flawed);
    for (const auto& p : r.results)
      for (const auto& f : p.reference_findings)
        s += fmt::format("  {:<40} {}: {}\n", p.id, ReferenceFlawName(f.flaw), f.evidence);
  }
  if (!r.contest.empty()) {
    s += "\nflashinfer contest score (mean per-workload speedup; 0 if any workload failed)\n";
    for (const auto& d : r.contest)
      s += fmt::format("  {:<40} {:>8.3f}  ({}/{} workloads passed)\n", d.id, d.score, d.passed, d.workloads);
  }
  s += "\nproblems\n";
  for (const auto& p : r.results) s += fmt::format("  {:<40} {}\n", p.id, ProblemCell(p));
  s += "\nfast_p: share of problems correct and more than p× faster (KernelBench's rule; fast_0 = correctness).\n";
  return s;
}

std::string ReportMarkdown(const BenchReport& r) {
  std::string s = fmt::format(
      "# kpilot bench: {} ({})\n\n{} problems. fast_p is the share of problems that are "
      "correct **and** more than p× faster than the baseline (KernelBench's rule; fast_0 is "
      "the correctness rate); the geometric mean is over correct problems.\n",
      r.suite, r.format, r.total.problems);
  for (const std::string& line : {WallSentence(r), CompileCacheSentence(r)})
    if (!line.empty()) s += "\n" + line + "\n";
  for (const char* base : {"eager", "torch.compile"}) {
    s += fmt::format("\n## Against {}\n\n| level | n | correct |", base);
    std::string rule = "|---|---:|---:|";
    for (double p : kFastP) {
      s += fmt::format(" fast_{:g} |", p);
      rule += "---:|";
    }
    s += " geomean |\n" + rule + "---:|\n";
    for (const LevelReport* l : Rows(r)) {
      const BaselineMetrics& m = std::string(base) == "eager" ? l->eager : l->compile;
      s += fmt::format("| {} | {} | {} |", l->level, l->problems, Percent(l->correctness));
      for (size_t i = 0; i < kFastPCount; ++i) s += " " + FastCell(m, i) + " |";
      s += " " + Times(m) + " |\n";
    }
  }
  s += "\n## Cost\n\n| level | evaluations | requests | input tokens | output tokens | US$ | GPU s |\n"
       "|---|---:|---:|---:|---:|---:|---:|\n";
  for (const LevelReport* l : Rows(r))
    s += fmt::format("| {} | {} | {} | {} | {} | {:.4f} | {:.1f} |\n", l->level, l->evaluations, l->requests,
                     l->input_tokens, l->output_tokens, l->cost_usd, l->gpu_s);
  if (r.total.seconds.evaluations > 0) {
    s += "\n## Where the time went\n\nSeconds per problem (mean): loading the problem, the torch worker's "
         "interpreter start and torch import, building the models, the `torch.compile` baseline's compile, waiting "
         "for the GPU's lock (held by other problems' runs), the correctness and exploit checks, the timing, and the "
         "rest (kpilot's side: processes, the store).\n\n"
         "| level | wall | load | python | import torch | setup | compile | lock wait | checks | timing | other |\n"
         "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    for (const LevelReport* l : Rows(r)) {
      const SecondsSplit m = MeanSplit(*l);
      s += fmt::format(
          "| {} | {:.1f} | {:.1f} | {:.2f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} |\n",
          l->level, m.wall, m.load, m.python, m.torch, m.setup, m.compile, m.lock_wait, m.checks, m.timing, m.other);
    }
  }
  if (r.total.flawed > 0) {
    s += fmt::format(
        "\n## References that cannot tell right from wrong\n\n{} problems. The torch worker checks every "
        "reference on its first trials: a constant output, outputs that ignore the inputs, outputs that change with "
        "the random seed (compared under one seed on both sides) or between two calls on the same inputs.\n\n"
        "| problem | flaw | evidence |\n|---|---|---|\n",
        r.total.flawed);
    for (const auto& p : r.results)
      for (const auto& f : p.reference_findings)
        s += fmt::format("| {} | {} | {} |\n", p.id, ReferenceFlawName(f.flaw), MarkdownCell(f.evidence));
  }
  if (!r.contest.empty()) {
    s += "\n## flashinfer contest score\n\nMean per-workload speedup over the definition's reference; 0 if any "
         "workload failed.\n\n| definition | score | workloads passed |\n|---|---:|---:|\n";
    for (const auto& d : r.contest) s += fmt::format("| {} | {:.3f} | {}/{} |\n", d.id, d.score, d.passed, d.workloads);
  }
  s += "\n## Problems\n\n| problem | result | evaluations | run |\n|---|---|---:|---:|\n";
  for (const auto& p : r.results)
    s += fmt::format("| {} | {} | {} | {} |\n", p.id, MarkdownCell(ProblemCell(p)), p.evaluations,
                     p.run_id ? std::to_string(p.run_id) : "");
  return s;
}

}  // namespace kpilot
