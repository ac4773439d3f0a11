// Starting and resuming runs (optimizer.h): the run's record and lock, the tools it profiles
// with, and the loop (loop.h) that does the work.
#include "optimize/optimizer.h"

#include "core/fs.h"
#include "optimize/loop.h"

namespace kpilot {

using nlohmann::json;

namespace {

// A run that ends in an error is recorded as failed, with the reason, so `kpilot runs` never
// shows it as running forever; --resume can still continue it.
Result<OptimizeResult> MarkFailure(Store& store, int64_t run_id, Result<OptimizeResult> r) {
  if (r.ok()) return r;
  auto run = store.GetRun(run_id);
  if (run.ok() && run->has_value()) {
    RunRecord rec = **run;
    rec.status = "failed";
    rec.stop_reason = r.status().message().substr(0, 300);
    (void)store.UpdateRun(rec);
  }
  return r;
}

}  // namespace

std::string ShownRunStatus(const Store& store, const RunRecord& run) {
  if (run.status != "running") return run.status;
  auto lock = FileLock::TryLock(RunLockPath(store, run.id));  // released at once
  return lock.ok() && lock->has_value() ? "interrupted" : run.status;
}

Optimizer::Optimizer(const Task& task, Generator& generator, Executor& executor, Store& store, ProgressSink& progress)
    : deps_{task, generator, executor, store, progress} {}

Result<OptimizeResult> Optimizer::Run(const OptimizeOptions& options) {
  if (options.budget < 1) return Status::InvalidInput("--budget must be at least 1");
  KPILOT_RETURN_IF_ERROR(CheckOptions(deps_.task, options));
  auto tools = RunTools(options);
  if (!tools.ok()) return tools.status();
  RunRecord r;
  r.task_name = deps_.task.name;
  r.task_dir = deps_.task.dir.string();
  r.config_json = ToJson(options).dump();
  r.status = "running";
  auto id = deps_.store.CreateRun(r);
  if (!id.ok()) return id.status();
  // A `kpilot runs` probing the new run takes and drops its lock at once: wait that out.
  auto lock = FileLock::TryLock(RunLockPath(deps_.store, *id), 2.0);
  if (lock.ok() && !lock->has_value())
    lock = Status::Unavailable("the lock of new run " + std::to_string(*id) + " (" +
                               RunLockPath(deps_.store, *id).string() + ") is held by another process");
  if (!lock.ok()) return MarkFailure(deps_.store, *id, lock.status());
  OptimizeLoop loop(deps_, options, *id, std::move(tools).value());
  return MarkFailure(deps_.store, *id, loop.Start());
}

Result<OptimizeResult> Optimizer::Resume(int64_t run_id, const ResumeOverrides& overrides) {
  auto run = deps_.store.GetRun(run_id);
  if (!run.ok()) return run.status();
  if (!run->has_value())
    return Status::NotFound("run " + std::to_string(run_id) + " is not in store " + deps_.store.dir().string());
  if ((*run)->status == "finished")
    return Status::InvalidInput("run " + std::to_string(run_id) + " is finished (stopped: " + (*run)->stop_reason +
                                ") — see it with kpilot show " + std::to_string(run_id) + ", or start a new run");
  auto lock = FileLock::TryLock(RunLockPath(deps_.store, run_id), 1.0);
  if (!lock.ok()) return lock.status();
  if (!lock->has_value())
    return Status::InvalidInput("run " + std::to_string(run_id) +
                                " is being optimized by another kpilot process now "
                                "(it holds " +
                                RunLockPath(deps_.store, run_id).string() +
                                "); let it finish, or stop it "
                                "and resume again");
  auto opts = OptimizeOptionsFromJson(json::parse((*run)->config_json, nullptr, false));
  if (!opts.ok()) return opts.status();
  if (opts->generator.rfind("agent:", 0) == 0)
    return Status::InvalidInput("run " + std::to_string(run_id) + " is an agent's session (kpilot mcp, " +
                                opts->generator +
                                "): only its agent can go on; start a new session from its best "
                                "(kpilot export " +
                                std::to_string(run_id) + " DIR, then kpilot mcp TASK --from DIR/…)");
  if (overrides.max_cost_usd) opts->max_cost_usd = *overrides.max_cost_usd;
  if (overrides.max_tokens) opts->max_tokens = *overrides.max_tokens;
  if (overrides.devices && !overrides.devices->empty()) {
    opts->devices = *overrides.devices;
    opts->device = overrides.devices->front();
  }
  RunRecord rec = **run;  // running again (a failed run's reason is in its events)
  rec.status = "running";
  rec.stop_reason = "";
  KPILOT_RETURN_IF_ERROR(deps_.store.UpdateRun(rec));
  auto nodes = deps_.store.ListRunNodes(run_id);
  if (!nodes.ok()) return nodes.status();
  auto events = deps_.store.ListRunEvents(run_id);
  if (!events.ok()) return events.status();
  auto tools = RunTools(*opts);
  if (!tools.ok()) return tools.status();
  OptimizeLoop loop(deps_, *opts, run_id, std::move(tools).value());
  return MarkFailure(deps_.store, run_id, loop.Continue(*nodes, *events, (*run)->created_at));
}

}  // namespace kpilot
