// The pure pieces of slurm.h: command lines, the keeper script and the parsers of sbatch's and
// squeue's output.
#include <algorithm>
#include <cmath>
#include <sstream>

#include <fmt/format.h>

#include "core/text.h"
#include "slurm/slurm.h"

namespace kpilot::slurm {
namespace {

// 'text' for sh, single quotes inside closed and escaped.
std::string ShellQuote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

struct StateName {
  JobState state;
  const char* name;
};
constexpr StateName kStates[] = {
    {JobState::kPending, "PENDING"},
    {JobState::kConfiguring, "CONFIGURING"},
    {JobState::kRunning, "RUNNING"},
    {JobState::kCompleting, "COMPLETING"},
    {JobState::kCompleted, "COMPLETED"},
    {JobState::kCancelled, "CANCELLED"},
    {JobState::kFailed, "FAILED"},
    {JobState::kTimeout, "TIMEOUT"},
    {JobState::kNodeFail, "NODE_FAIL"},
    {JobState::kPreempted, "PREEMPTED"},
    {JobState::kOutOfMemory, "OUT_OF_MEMORY"},
    {JobState::kBootFail, "BOOT_FAIL"},
    {JobState::kDeadline, "DEADLINE"},
    {JobState::kUnknown, "UNKNOWN"},
};

}  // namespace

std::string KeeperScript(const std::filesystem::path& heartbeat, double heartbeat_s) {
  const long limit = std::lround(std::ceil(kMissedBeats * heartbeat_s));
  const long step = std::max(1L, std::lround(heartbeat_s));
  return fmt::format(
      "#!/bin/sh\n"
      "# kpilot's allocation keeper: holds the allocation while kpilot touches its heartbeat file\n"
      "# (every {hb:g} s) and ends it once kpilot has missed {missed} beats, so that an allocation whose\n"
      "# kpilot was killed does not outlive it.\n"
      "hb={path}\n"
      "while :; do\n"
      "  now=$(date +%s); last=$(stat -c %Y \"$hb\" 2>/dev/null || echo 0)\n"
      "  [ $((now - last)) -gt {limit} ] && exit 0\n"
      "  sleep {step}\n"
      "done\n",
      fmt::arg("hb", heartbeat_s), fmt::arg("missed", kMissedBeats), fmt::arg("path", ShellQuote(heartbeat.string())),
      fmt::arg("limit", limit), fmt::arg("step", step));
}

std::vector<std::string> SbatchArgv(const SlurmConfig& c, const std::string& job_name,
                                    const std::filesystem::path& script, const std::filesystem::path& log) {
  std::vector<std::string> argv = {c.sbatch, "--parsable", "--job-name=" + job_name, "--output=" + log.string(),
                                   "--nodes=1", "--ntasks=1", "--time=" + c.time_limit,
                                   // A failed node ends the allocation; kpilot, not the scheduler,
                                   // decides what runs again.
                                   "--no-requeue"};
  if (!c.partition.empty()) argv.push_back("--partition=" + c.partition);
  if (!c.account.empty()) argv.push_back("--account=" + c.account);
  if (!c.gres.empty()) argv.push_back("--gres=" + c.gres);
  argv.insert(argv.end(), c.sbatch_extra.begin(), c.sbatch_extra.end());
  argv.push_back(script.string());
  return argv;
}

std::vector<std::string> StepWrapper(const SlurmConfig& c, int64_t job_id) {
  return {c.srun,         "--jobid=" + std::to_string(job_id),
          "--overlap",    "--nodes=1",
          "--ntasks=1",   "--quiet",
          "--unbuffered", "--kill-on-bad-exit=1"};
}

Result<int64_t> ParseSbatchJobId(const std::string& out) {
  std::string first = Trim(out);
  first = first.substr(0, first.find('\n'));
  first = Trim(first.substr(0, first.find(';')));
  if (first.empty() || !std::all_of(first.begin(), first.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return Status::InvalidInput("sbatch --parsable printed no job id: \"" + Trim(out).substr(0, 200) + "\"");
  return std::stoll(first);
}

const char* JobStateName(JobState s) {
  for (const auto& e : kStates)
    if (e.state == s) return e.name;
  return "UNKNOWN";
}

JobState ParseJobState(const std::string& name) {
  const std::string n = Trim(name);
  for (const auto& e : kStates)
    if (n == e.name) return e.state;
  return JobState::kUnknown;
}

bool IsFinished(JobState s) {
  switch (s) {
    case JobState::kPending:
    case JobState::kConfiguring:
    case JobState::kRunning:
    case JobState::kUnknown:
      return false;
    default:
      return true;
  }
}

std::optional<JobInfo> ParseSqueueLine(const std::string& line) {
  std::istringstream in(Trim(line));
  std::string state, reason, nodes;
  if (!std::getline(in, state, '|') || !std::getline(in, reason, '|')) return std::nullopt;
  std::getline(in, nodes);
  JobInfo info;
  info.state = ParseJobState(state);
  if (info.state == JobState::kUnknown && Trim(state) != "UNKNOWN") return std::nullopt;
  info.reason = Trim(reason);
  info.nodes = Trim(nodes);
  return info;
}

bool PendsForever(const std::string& reason) {
  static const char* kForever[] = {"PartitionNodeLimit", "PartitionTimeLimit", "PartitionConfig", "InvalidAccount",
                                   "InvalidQOS",         "BadConstraints",     "PartitionDown",   "PartitionInactive"};
  for (const char* r : kForever)
    if (reason.rfind(r, 0) == 0) return true;
  return false;
}

}  // namespace kpilot::slurm
