// The supervisor side of kpilot-runner: sandboxes and watches the worker.
//
// It becomes a child subreaper, enters new PID and network namespaces where permitted, forks
// the worker (which sets CPU-time and file-size limits, sends its stdout/stderr to files in the
// working directory and runs the backend), enforces the wall-clock timeout, and afterwards kills
// every process the worker left behind — a fork or a setsid() cannot escape: in a PID namespace
// the kernel kills them when the worker (its init) exits; without one they are reparented to the
// supervisor, which kills them. It then prints exactly one JSON result on stdout: the worker's,
// or one it writes itself when the worker crashed, hung or exited early. When no one reads its
// stdout any more (the caller was killed), it kills the worker and all it started at once and
// exits with kExitCallerGone, printing nothing.
#pragma once

#include <functional>

#include "runner/protocol.h"
#include "runner/worker.h"

namespace kpilot {

inline constexpr int kExitCallerGone = 3;

using WorkerFn = std::function<RunResult(const RunRequest&, PhaseReporter&)>;

// Runs `worker` under supervision; returns the process exit code (0 once a result was printed,
// kExitCallerGone when the caller went away first).
int RunSupervised(const RunRequest& request, const WorkerFn& worker);

}  // namespace kpilot
