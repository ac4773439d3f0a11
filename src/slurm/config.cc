// LoadSlurmConfig: the [slurm] table of a TOML file (slurm.h). Every key maps to one field; a key
// the table does not know is an error, so a typo never silently keeps a default.
#include <toml++/toml.h>

#include <cmath>

#include <fmt/format.h>

#include "core/fs.h"
#include "slurm/slurm.h"

namespace kpilot::slurm {
namespace {

namespace fs = std::filesystem;

class Reader {
 public:
  Reader(std::string file, fs::path dir, SlurmConfig* c) : file_(std::move(file)), dir_(std::move(dir)), c_(c) {}

  void Problem(const toml::node& at, const std::string& key, const std::string& what, const std::string& fix) {
    problems_ += fmt::format("{}{}:{}: {}: {}; {}", problems_.empty() ? "" : "\n", file_, at.source().begin.line, key,
                             what, fix);
  }
  void Text(const std::string& key, const toml::node& n, std::string* out) {
    if (const auto* s = n.as_string())
      *out = s->get();
    else
      Problem(n, key, "expected a string", fmt::format("write e.g. {} = \"...\"", key));
  }
  void Number(const std::string& key, const toml::node& n, double min, double* out) {
    double v = NAN;
    if (const auto* i = n.as_integer()) v = static_cast<double>(i->get());
    if (const auto* f = n.as_floating_point()) v = f->get();
    if (!std::isfinite(v) || v <= min)
      Problem(n, key, "expected a number above " + fmt::format("{:g}", min), fmt::format("write e.g. {} = 30", key));
    else
      *out = v;
  }
  void Count(const std::string& key, const toml::node& n, const std::string& fix, int* out) {
    const auto* i = n.as_integer();
    if (!i || i->get() < 1 || i->get() > 4096)
      Problem(n, key, "expected a whole number from 1 to 4096", fix);
    else
      *out = static_cast<int>(i->get());
  }
  void Read(const std::string& key, const toml::node& n) {
    if (key == "partition") return Text(key, n, &c_->partition);
    if (key == "account") return Text(key, n, &c_->account);
    if (key == "gres") return Text(key, n, &c_->gres);
    if (key == "time_limit") return Text(key, n, &c_->time_limit);
    if (key == "sbatch") return Text(key, n, &c_->sbatch);
    if (key == "srun") return Text(key, n, &c_->srun);
    if (key == "squeue") return Text(key, n, &c_->squeue);
    if (key == "scancel") return Text(key, n, &c_->scancel);
    if (key == "start_timeout_s") return Number(key, n, 0, &c_->start_timeout_s);
    if (key == "heartbeat_s") return Number(key, n, 0, &c_->heartbeat_s);
    if (key == "shared_dir") {
      std::string dir;
      Text(key, n, &dir);
      if (!dir.empty()) c_->shared_dir = fs::path(dir).is_absolute() ? fs::path(dir) : (dir_ / dir).lexically_normal();
      return;
    }
    if (key == "workers") return Count(key, n, "write e.g. workers = 2 (one allocation each)", &c_->workers);
    if (key == "compile_partition") return Text(key, n, &c_->compile_partition);
    if (key == "compile_cpus")
      return Count(key, n, "write e.g. compile_cpus = 16 (compilers at once on the compile node)", &c_->compile_cpus);
    if (key == "sbatch_extra") {
      const auto* a = n.as_array();
      if (!a) return Problem(n, key, "expected an array of strings", "write e.g. sbatch_extra = [\"--qos=short\"]");
      for (const auto& item : *a) {
        if (const auto* s = item.as_string())
          c_->sbatch_extra.push_back(s->get());
        else
          Problem(item, key, "expected strings only", "quote each sbatch option");
      }
      return;
    }
    Problem(n, key, "unknown key",
            "the [slurm] keys are partition, account, gres, time_limit, sbatch_extra, shared_dir, workers, "
            "compile_partition, compile_cpus, start_timeout_s, heartbeat_s, sbatch, srun, squeue, scancel");
  }
  const std::string& problems() const { return problems_; }

 private:
  const std::string file_;
  const fs::path dir_;
  SlurmConfig* c_;
  std::string problems_;
};

}  // namespace

Result<SlurmConfig> ParseSlurmConfig(const std::string& text, const std::string& file_name) {
  toml::table doc;
  try {
    doc = toml::parse(text, file_name);
  } catch (const toml::parse_error& e) {
    return Status::InvalidInput(
        fmt::format("{}:{}: {}; fix the TOML syntax", file_name, e.source().begin.line, std::string(e.description())));
  }
  const toml::table* t = doc["slurm"].as_table();
  if (!t)
    return Status::InvalidInput(file_name +
                                ": no [slurm] table; start the file with [slurm] and its keys "
                                "(docs/slurm.md has an example)");
  SlurmConfig c;
  c.file = file_name;
  Reader reader(file_name, std::filesystem::path(file_name).parent_path(), &c);
  for (const auto& [key, node] : *t) reader.Read(std::string(key.str()), node);
  if (!reader.problems().empty()) return Status::InvalidInput(reader.problems());
  return c;
}

Result<SlurmConfig> LoadSlurmConfig(const std::filesystem::path& file) {
  auto text = ReadFile(file);
  if (!text.ok())
    return Status::InvalidInput("cannot read the Slurm config " + file.string() + ": " + text.status().message() +
                                " (pass --slurm-config FILE; docs/slurm.md has an example)");
  return ParseSlurmConfig(*text, file.string());
}

}  // namespace kpilot::slurm
