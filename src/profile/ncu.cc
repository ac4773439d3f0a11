// Nsight Compute's command line and its `--csv --page raw` output. Pure.
#include "profile/ncu.h"

#include <cctype>
#include <cstdlib>
#include <map>
#include <optional>
#include <regex>
#include <sstream>

#include "core/text.h"

namespace kpilot {
namespace {

// Parses `"a","b, c","d ""e"""` starting at `pos`: every field quoted (ncu quotes all of them),
// "" as an escaped quote, commas between fields, nothing after the last but white space.
// nullopt when the text from `pos` is not such a row.
std::optional<std::vector<std::string>> ParseQuotedRow(const std::string& line, size_t pos) {
  std::vector<std::string> fields;
  size_t i = pos;
  while (true) {
    if (i >= line.size() || line[i] != '"') return std::nullopt;
    std::string field;
    ++i;
    while (true) {
      if (i >= line.size()) return std::nullopt;  // unterminated
      if (line[i] == '"') {
        if (i + 1 < line.size() && line[i + 1] == '"') {
          field += '"';
          i += 2;
          continue;
        }
        ++i;
        break;
      }
      field += line[i++];
    }
    fields.push_back(std::move(field));
    if (i < line.size() && line[i] == ',') {
      ++i;
      continue;
    }
    if (!Trim(line.substr(i)).empty()) return std::nullopt;
    return fields;
  }
}

// A data or units row of `columns` fields somewhere in `line`: at its start, or after program
// output that was printed without a newline before ncu's row.
std::optional<std::vector<std::string>> FindRow(const std::string& line, size_t columns) {
  for (size_t pos = line.find('"'); pos != std::string::npos; pos = line.find('"', pos + 1)) {
    auto row = ParseQuotedRow(line, pos);
    if (row && row->size() == columns) return row;
  }
  return std::nullopt;
}

std::optional<long long> ParseInteger(const std::string& s) {
  std::string t = Trim(s);
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  long long v = std::strtoll(t.c_str(), &end, 10);
  if (*end != '\0') return std::nullopt;
  return v;
}

// "3,177,696" → 3177696; "87.53" → 87.53; nullopt for text ("NVIDIA H200", "n/a").
std::optional<double> ParseNumber(const std::string& s) {
  std::string t;
  for (char c : Trim(s)) {
    if (c != ',') t += c;
  }
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(t.c_str(), &end);
  if (*end != '\0') return std::nullopt;
  return v;
}

std::optional<double> TimeInSeconds(const std::string& unit) {
  if (unit == "nsecond" || unit == "ns") return 1e-9;
  if (unit == "usecond" || unit == "us") return 1e-6;
  if (unit == "msecond" || unit == "ms") return 1e-3;
  if (unit == "second" || unit == "s") return 1.0;
  return std::nullopt;
}

// ncu's byte units are decimal (Kbyte = 1000 bytes); the binary ones are listed for completeness.
std::optional<double> SizeInBytes(const std::string& unit) {
  if (unit == "byte") return 1.0;
  if (unit == "Kbyte") return 1e3;
  if (unit == "Mbyte") return 1e6;
  if (unit == "Gbyte") return 1e9;
  if (unit == "Tbyte") return 1e12;
  if (unit == "Kibyte") return 1024.0;
  if (unit == "Mibyte") return 1024.0 * 1024;
  if (unit == "Gibyte") return 1024.0 * 1024 * 1024;
  return std::nullopt;
}

// A decimal prefix on a count ("Kinst", "Msector"); 1 when there is none.
double CountScale(const std::string& unit) {
  if (unit.size() < 2 || !std::islower(static_cast<unsigned char>(unit[1]))) return 1.0;
  switch (unit[0]) {
    case 'K':
      return 1e3;
    case 'M':
      return 1e6;
    case 'G':
      return 1e9;
    case 'T':
      return 1e12;
    default:
      return 1.0;
  }
}

// The factor that takes a value in `unit` to kpilot's base units: times to nanoseconds, sizes to
// bytes, rates ("Gbyte/second", "cycle/nsecond", "Ghz") to units per second; "%", counts and
// ratios of counts ("inst", "sector/request") unchanged.
double NcuUnitScale(const std::string& unit) {
  if (auto t = TimeInSeconds(unit)) return *t / 1e-9;
  if (auto b = SizeInBytes(unit)) return *b;
  if (unit == "hz") return 1.0;
  if (unit == "Khz") return 1e3;
  if (unit == "Mhz") return 1e6;
  if (unit == "Ghz") return 1e9;
  size_t slash = unit.find('/');
  if (slash != std::string::npos) {
    std::string num = unit.substr(0, slash), den = unit.substr(slash + 1);
    auto den_s = TimeInSeconds(den);
    if (!den_s) return 1.0;  // a ratio of counts: sector/request, inst/warp
    double num_scale = SizeInBytes(num).value_or(CountScale(num));
    return num_scale / *den_s;
  }
  return 1.0;
}

}  // namespace

Result<std::vector<KernelMetrics>> ParseNcuRawCsv(const std::string& text) {
  static const std::string kHeaderStart = "\"ID\",\"Process ID\"";
  std::vector<KernelMetrics> kernels;
  std::vector<std::string> columns;  // the current header
  std::vector<double> scales;        // per column, from the units row
  int col_id = -1, col_kernel = -1, col_grid = -1, col_block = -1;
  bool header_seen = false;
  std::string first_line, first_error, first_warning, no_kernels;
  std::vector<std::string> available;  // "Available Kernels:" after "No kernels were profiled"
  bool in_available = false;
  size_t lines = 0;

  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    ++lines;
    if (first_line.empty() && !Trim(line).empty()) first_line = Trim(line);
    if (first_error.empty() && line.find("==ERROR==") != std::string::npos) first_error = Trim(line);
    // The "Note: Running with unmodified GPU clocks" warning opens every run: it explains nothing.
    if (first_warning.empty() && line.find("==WARNING==") != std::string::npos &&
        line.find("==WARNING== Note:") == std::string::npos)
      first_warning = Trim(line);
    if (no_kernels.empty() && line.find("No kernels were profiled") != std::string::npos) no_kernels = Trim(line);
    if (in_available) {
      static const std::regex kListed(R"(^\s*[0-9]+\.\s+(.*\S)\s*$)");
      std::smatch m;
      if (std::regex_match(line, m, kListed))
        available.push_back(m[1]);
      else
        in_available = false;
    }
    if (!no_kernels.empty() && Trim(line) == "Available Kernels:") in_available = true;

    // A header (again, when several reports follow one another): it resets the columns.
    if (size_t at = line.find(kHeaderStart); at != std::string::npos) {
      if (auto header = ParseQuotedRow(line, at)) {
        columns = std::move(*header);
        scales.assign(columns.size(), 1.0);
        col_id = col_kernel = col_grid = col_block = -1;
        for (size_t c = 0; c < columns.size(); ++c) {
          if (columns[c] == "ID")
            col_id = static_cast<int>(c);
          else if (columns[c] == "Kernel Name")
            col_kernel = static_cast<int>(c);
          else if (columns[c] == "Grid Size")
            col_grid = static_cast<int>(c);
          else if (columns[c] == "Block Size")
            col_block = static_cast<int>(c);
        }
        header_seen = true;
        continue;
      }
    }
    if (!header_seen) continue;
    auto row = FindRow(line, columns.size());
    if (!row) continue;  // the program's output, ==PROF== progress, warnings
    const std::vector<std::string>& f = *row;

    std::optional<long long> id = ParseInteger(f[col_id]);
    if (!id) {
      // The units row: empty under the fixed columns, a unit (or "") under each metric.
      if (Trim(f[col_id]).empty()) {
        for (size_t c = 0; c < f.size(); ++c) scales[c] = NcuUnitScale(Trim(f[c]));
      }
      continue;
    }

    KernelMetrics k;
    k.id = static_cast<int>(*id);
    if (col_kernel >= 0) k.kernel = f[col_kernel];
    if (col_grid >= 0) k.grid = f[col_grid];
    if (col_block >= 0) k.block = f[col_block];
    for (size_t c = 0; c < f.size(); ++c) {
      // Metric names are "unit__counter.rollup…"; the fixed columns ("Kernel Name", "CC", …)
      // have no double underscore.
      if (columns[c].find("__") == std::string::npos) continue;
      std::string value = Trim(f[c]);
      if (value.empty() || value == "n/a" || value == "N/A" || value == "no data") {
        k.unavailable.push_back(columns[c]);
        continue;
      }
      if (auto v = ParseNumber(value)) k.metrics[columns[c]] = *v * scales[c];
      // Text values (device names, cache configurations) are not metrics kpilot reads.
    }
    // --set full's name for DRAM throughput (see ncu.h).
    static const std::string kGpuDram = "gpu__dram_throughput.";
    for (auto it = k.metrics.lower_bound(kGpuDram); it != k.metrics.end() && it->first.rfind(kGpuDram, 0) == 0; ++it)
      k.metrics.emplace("dram__throughput." + it->first.substr(kGpuDram.size()), it->second);
    kernels.push_back(std::move(k));
  }

  if (!header_seen) {
    auto quote = [](std::string s) { return "'" + (s.size() > 200 ? s.substr(0, 200) + "…" : s) + "'"; };
    if (first_error.empty() && !no_kernels.empty()) {
      // The run worked, but the kernel filter (-k) matched none of the kernels the program ran.
      std::string msg = "ncu profiled no kernels: " + quote(no_kernels) + "; does the kernel filter match?";
      if (!available.empty()) {
        std::string names;
        for (const auto& n : available) names += (names.empty() ? "" : ", ") + n;
        msg += " The program ran: " + names;
      }
      return Status::InvalidInput(msg);
    }
    std::string msg = "ncu output has no CSV header (\"ID\",\"Process ID\",…) in " + std::to_string(lines) +
                      " line(s); was it run with --csv --page raw?";
    if (!first_error.empty())
      msg += " ncu reported: " + quote(first_error);
    else if (!first_warning.empty())
      msg += " ncu warned: " + quote(first_warning);
    else if (!first_line.empty())
      msg += " First line: " + quote(first_line);
    else
      msg += " The output is empty.";
    return Status::InvalidInput(msg);
  }
  return kernels;
}

std::vector<KernelMetrics> MergeInvocations(const std::vector<KernelMetrics>& rows) {
  std::map<std::string, std::pair<KernelMetrics, std::map<std::string, std::vector<double>>>> by_name;
  std::vector<std::string> order;
  for (const auto& r : rows) {
    if (!by_name.count(r.kernel)) order.push_back(r.kernel);
    auto& [first, values] = by_name[r.kernel];
    if (first.kernel.empty()) first = r;
    for (const auto& [k, v] : r.metrics) values[k].push_back(v);
  }
  std::vector<KernelMetrics> out;
  for (const auto& name : order) {
    auto [km, values] = by_name[name];
    for (auto& [k, v] : values) {
      double sum = 0;
      for (double x : v) sum += x;
      km.metrics[k] = sum / static_cast<double>(v.size());
    }
    out.push_back(km);
  }
  return out;
}

void ApplyMeasured(const MetricMap& m, RooflineInput* in) {
  if (auto it = m.find("sm__throughput.avg.pct_of_peak_sustained_elapsed"); it != m.end())
    in->sm_throughput_pct = it->second;
  if (auto it = m.find("dram__throughput.avg.pct_of_peak_sustained_elapsed"); it != m.end())
    in->dram_throughput_pct = it->second;
}

std::string ParseNcuVersion(const std::string& version_output) {
  static const std::regex kVersion(R"(Version\s+([0-9]+(\.[0-9]+)+))");
  std::smatch m;
  if (!std::regex_search(version_output, m, kVersion)) return "";
  return m[1];
}

std::vector<std::string> NcuCommand(const std::string& ncu_path, const NcuRequest& request) {
  std::vector<std::string> argv = {ncu_path, "--clock-control",    "none", "--csv", "--page",
                                   "raw",    "--target-processes", "all"};
  if (!request.set.empty()) {
    argv.insert(argv.end(), {"--set", request.set});
  } else {
    for (const std::string& section : request.sections) argv.insert(argv.end(), {"--section", section});
    if (!request.metrics.empty()) {
      std::string joined;
      for (const std::string& m : request.metrics) joined += (joined.empty() ? "" : ",") + m;
      argv.insert(argv.end(), {"--metrics", joined});
    }
  }
  if (!request.kernel_regex.empty()) {
    const std::string& r = request.kernel_regex;
    argv.insert(argv.end(), {"-k", r.rfind("regex:", 0) == 0 ? r : "regex:" + r});
  }
  if (request.launch_skip > 0) argv.insert(argv.end(), {"--launch-skip", std::to_string(request.launch_skip)});
  if (request.launch_count > 0) argv.insert(argv.end(), {"-c", std::to_string(request.launch_count)});
  argv.insert(argv.end(), request.target.begin(), request.target.end());
  return argv;
}

}  // namespace kpilot
