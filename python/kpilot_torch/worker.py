"""kpilot's Python worker: `python -m kpilot_torch.worker describe|run REQUEST.json`.

Prints exactly one JSON object on the last line of stdout (docs/pytorch.md, "Worker protocol"):
for `describe`, the problem's tensors, axes and tolerance; for `run`, the runner's RunResult
(src/runner/protocol.h, version 1). While user code runs, file descriptor 1 is redirected to a
temporary file, so whatever a candidate prints (Python or C) cannot corrupt the reply; it is
copied to stderr and its tail returned in `candidate_stdout_tail`. Exit code 0 whenever a reply
was printed.

This module is the process around a request: the reply channel, the deadline and the entry point.
The procedures (correctness trials, exploit checks, timing) are procedure.py's; a task format is
reached only through problem.Problem (kernelbench.py, flashinfer.py).
"""

import json
import os
import select
import signal
import sys
import tempfile
import threading
import time
import traceback

from .problem import make_problem, traceback_tail
from .procedure import Run, Verdict, ran_out_of_memory

PROTOCOL_VERSION = 1
USAGE = "usage: python -m kpilot_torch.worker describe|run REQUEST.json"
# Seconds the watchdog waits past timeout_s before it gives up on a call stuck in native code.
WATCHDOG_GRACE_S = 5.0


# ---- the reply channel ---------------------------------------------------------------------------

class ReplyChannel:
    """Owns the real stdout. Until `emit`, fd 1 points at a temporary file that collects what user
    code prints. `emit` writes one JSON line to the real stdout, once (the watchdog thread and the
    main thread may race; the first wins)."""

    def __init__(self):
        sys.stdout.flush()
        self.real_stdout = os.dup(1)
        self.capture = tempfile.TemporaryFile()
        os.dup2(self.capture.fileno(), 1)
        self.lock = threading.Lock()
        self.done = False
        watcher = threading.Thread(target=self._watch_reader, daemon=True)
        watcher.start()

    def _watch_reader(self):
        """Once no one reads the real stdout (kpilot was killed, with -9 perhaps), ends this
        worker's process group: an evaluation no one records must not go on holding the GPU lock.
        A pipe whose reader is gone polls POLLERR; a terminal or file never does."""
        poller = select.poll()
        poller.register(self.real_stdout, 0)
        while True:
            events = [ev for _, ev in poller.poll(200)]
            if any(ev & select.POLLNVAL for ev in events):
                return  # candidate code closed the fd: nothing left to watch
            if any(ev & (select.POLLERR | select.POLLHUP) for ev in events):
                if os.getpgid(0) == os.getpid():  # kpilot starts the worker as a group leader
                    os.killpg(0, signal.SIGKILL)
                os._exit(3)

    def captured_tail(self, limit=4000):
        try:
            sys.stdout.flush()
            self.capture.seek(0)
            text = self.capture.read().decode("utf-8", "replace")
        except Exception:
            return ""
        return text[-limit:]

    def emit(self, reply, with_stdout_tail):
        with self.lock:
            if self.done:
                return False
            self.done = True
            tail = self.captured_tail()
            if tail:
                sys.stderr.write(tail if tail.endswith("\n") else tail + "\n")
                sys.stderr.flush()
            if with_stdout_tail:
                reply["candidate_stdout_tail"] = tail
            line = json.dumps(reply, allow_nan=False, default=str) + "\n"
            os.write(self.real_stdout, line.encode())
            return True


def error_reply(message):
    return {"version": PROTOCOL_VERSION, "kpilot_result_version": PROTOCOL_VERSION, "status": "error",
            "message": message}


def new_result():
    return {"kpilot_result_version": PROTOCOL_VERSION, "version": PROTOCOL_VERSION, "status": "error",
            "message": "", "phase": "load", "checks": [], "timings": [], "candidate_stdout_tail": "",
            "candidate_stderr_tail": "", "sandbox": {"pid_namespace": False, "net_namespace": False,
                                                     "leftover_processes_killed": 0},
            "exit_signal": 0, "wall_s": 0.0, "warnings": [], "details": {"exploits": []}}


def _sanitize(v):
    """Replaces NaN/Inf (which JSON lacks) by the runner's strings, recursively."""
    if isinstance(v, float):
        if v != v:
            return "nan"
        if v in (float("inf"), float("-inf")):
            return "inf" if v > 0 else "-inf"
        return v
    if isinstance(v, dict):
        return {k: _sanitize(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_sanitize(x) for x in v]
    return v


# ---- torch and describe --------------------------------------------------------------------------

def import_torch():
    """(torch module, None) or (None, error message)."""
    try:
        import torch  # noqa: F401
        return torch, None
    except Exception as e:
        return None, ("torch is not importable by %s (%s: %s); install PyTorch for this interpreter "
                      "(on a machine without a GPU: scripts/setup-torch-venv.sh) or pass --python" %
                      (sys.executable, type(e).__name__, e))


def describe(request):
    torch, why = import_torch()
    if torch is None:
        return error_reply(why)
    from .problem import ProblemError
    if request.get("format", "kernelbench") != "kernelbench":
        return error_reply("describe is for KernelBench problems; flashinfer definitions are read by kpilot itself")
    try:
        problem = make_problem(request)
        body = problem.describe()
    except ProblemError as e:
        return error_reply(str(e))
    except Exception:
        return error_reply("describing %s failed: %s" % (request.get("problem"), traceback_tail()))
    reply = {"version": PROTOCOL_VERSION, "status": "ok", "torch": torch.__version__,
             "cuda": bool(torch.cuda.is_available())}
    reply.update(body)
    return reply


# ---- run -----------------------------------------------------------------------------------------

class RunTimeout(BaseException):
    """Raised by SIGALRM when timeout_s has passed (a BaseException: candidates cannot catch it
    with `except Exception`)."""


class Deadline:
    """The run's timeout_s: SIGALRM interrupts Python code; a watchdog thread replies for a call
    stuck in native code, WATCHDOG_GRACE_S later. `pause` stops both while the worker waits for
    the GPU lock, as kpilot-runner's limit starts after that wait."""

    def __init__(self, timeout_s, on_stuck):
        self.remaining = timeout_s
        self.on_stuck = on_stuck
        self.timer = None
        self.since = 0.0

    def start(self):
        self.since = time.perf_counter()
        signal.setitimer(signal.ITIMER_REAL, self.remaining)
        self.timer = threading.Timer(self.remaining + WATCHDOG_GRACE_S, self.on_stuck)
        self.timer.daemon = True
        self.timer.start()

    def pause(self):
        self.stop()
        self.remaining = max(0.001, self.remaining - (time.perf_counter() - self.since))

    def stop(self):
        signal.setitimer(signal.ITIMER_REAL, 0)
        if self.timer is not None:
            self.timer.cancel()


def seconds_since_process_start():
    """Seconds since the kernel started this process (/proc), so a reply can say what the
    interpreter's own start cost; None where /proc is not Linux's."""
    try:
        with open("/proc/self/stat") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


def run(request, channel):
    started = time.perf_counter()
    res = new_result()
    python_start_s = seconds_since_process_start()
    torch, why = import_torch()
    if torch is None:
        res["message"] = why
        return res
    # Where a run's time goes before any user code: the interpreter's start, torch's import.
    if python_start_s is not None:
        res["details"]["python_start_s"] = python_start_s
    res["details"]["import_torch_s"] = time.perf_counter() - started
    timeout_s = float(request.get("timeout_s", 120) or 120)

    def on_alarm(signum, frame):
        raise RunTimeout()

    def watchdog():
        # The alarm could not interrupt the run (a call stuck in native code): reply and leave.
        res["status"] = "timeout"
        res["message"] = "the run exceeded timeout_s = %g s in phase %s (stuck in native code)" % (timeout_s,
                                                                                                res["phase"])
        res["wall_s"] = time.perf_counter() - started
        channel.emit(_sanitize(res), True)
        os._exit(0)

    deadline = Deadline(timeout_s, watchdog)
    old = signal.signal(signal.SIGALRM, on_alarm)
    deadline.start()
    try:
        Run(torch, request, res, deadline).execute()
        res["status"] = "passed"
        res["phase"] = "done"
    except RunTimeout:
        res["status"] = "timeout"
        res["message"] = "the run exceeded timeout_s = %g s in phase %s" % (timeout_s, res["phase"])
    except Verdict as v:
        res["status"] = v.status
        res["message"] = str(v)
        # The GPU's memory ran out (a bench runs such a problem again alone on its GPU).
        if ran_out_of_memory(torch, v):
            res["details"]["out_of_memory"] = True
    except SystemExit as e:
        res["status"] = "runtime_error"
        res["message"] = "user code called sys.exit(%r) in phase %s" % (e.code, res["phase"])
    except Exception as e:
        from .problem import ProblemError
        res["status"] = "error"
        if isinstance(e, ProblemError):
            res["message"] = str(e)
        else:
            res["message"] = "kpilot's worker failed in phase %s: %s" % (res["phase"], traceback.format_exc()[-2000:])
        if ran_out_of_memory(torch, e):
            res["details"]["out_of_memory"] = True
    finally:
        deadline.stop()
        signal.signal(signal.SIGALRM, old)
    res["wall_s"] = time.perf_counter() - started
    return res


# ---- entry point ---------------------------------------------------------------------------------

def main(argv):
    # Before torch starts: KernelBench's problems allocate and free tensors of several GiB in
    # turn, which the caching allocator's fixed segments fragment until a later one fails.
    os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    channel = ReplyChannel()
    mode = argv[1] if len(argv) > 1 else ""
    as_run = mode == "run"

    def fail(message):
        if as_run:
            reply = new_result()
            reply["message"] = message
        else:
            reply = error_reply(message)
        channel.emit(reply, as_run)
        return 0

    if len(argv) != 3 or mode not in ("describe", "run"):
        return fail(USAGE)
    try:
        with open(argv[2]) as f:
            request = json.load(f)
    except (OSError, ValueError) as e:
        return fail("cannot read the request %s: %s" % (argv[2], e))
    if not isinstance(request, dict):
        return fail("request %s: expected a JSON object" % argv[2])
    if request.get("version", PROTOCOL_VERSION) != PROTOCOL_VERSION:
        return fail("request %s has version %r; this worker speaks version %d" %
                    (argv[2], request.get("version"), PROTOCOL_VERSION))
    try:
        reply = describe(request) if mode == "describe" else run(request, channel)
    except BaseException:
        return fail("kpilot's worker failed: %s" % traceback.format_exc()[-2000:])
    channel.emit(_sanitize(reply), as_run)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
