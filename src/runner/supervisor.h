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
// exits with kExitCallerGone, printing nothing. RunServing does the same for many requests.
#pragma once

#include <functional>
#include <memory>

#include "runner/protocol.h"
#include "runner/worker.h"

namespace kpilot {

inline constexpr int kExitCallerGone = 3;

using WorkerFn = std::function<RunResult(const RunRequest&, PhaseReporter&)>;

// Runs `worker` under supervision; returns the process exit code (0 once a result was printed,
// kExitCallerGone when the caller went away first).
int RunSupervised(const RunRequest& request, const WorkerFn& worker);

using SessionFactory = std::function<std::unique_ptr<WorkerSession>(Backend)>;

// kpilot-runner --serve: one request per line on stdin (the path of a request file, in the
// folder the run works in, as --request takes), one result line on stdout per request, in
// order. The first request starts a worker that serves the ones after it in the same process:
// one CUDA context, stream and CUPTI set-up for all. Each request is supervised as
// RunSupervised does it (wall-clock limit from its first phase, CPU and file limits, crash
// attribution, the parent's clock). Every result carries details["served"] = {"request" (1, 2, …),
// "pid", "next", "why"}. "next" is "retire" when this process serves no more: the run did not
// pass, the worker died or timed out, the candidate left a process, a thread, a library, GPU
// memory or a poisoned context behind, or the request was not an evaluation. The runner then
// exits and the caller starts a fresh one for the next request. Only the network namespace
// is used: a PID namespace's init would end with the first worker. A request that cannot be read
// gets an "error" result and the runner goes on. Exits 0 when stdin closes, kExitCallerGone
// when no one reads its stdout any more (its worker killed with all it started).
int RunServing(const SessionFactory& make_session);

}  // namespace kpilot
