"""kpilot's Python worker: `python -m kpilot_torch.worker describe|run REQUEST.json`.

Prints exactly one JSON object on the last line of stdout (docs/pytorch.md, "Worker protocol"):
for `describe`, the problem's tensors, axes and tolerance; for `run`, the runner's RunResult
(src/runner/protocol.h, version 1). While user code runs, file descriptor 1 is redirected to a
temporary file, so whatever a candidate prints (Python or C) cannot corrupt the reply; it is
copied to stderr and its tail returned in `candidate_stdout_tail`. Exit code 0 whenever a reply
was printed.

The worker owns the procedures — correctness trials, exploit checks, timing — and reaches a task
format only through problem.Problem (kernelbench.py, flashinfer.py).
"""

import fcntl
import json
import os
import select
import signal
import sys
import tempfile
import threading
import time
import traceback

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


# ---- torch and the problem -----------------------------------------------------------------------

def import_torch():
    """(torch module, None) or (None, error message)."""
    try:
        import torch  # noqa: F401
        return torch, None
    except Exception as e:
        return None, ("torch is not importable by %s (%s: %s); install PyTorch for this interpreter "
                      "(on a machine without a GPU: scripts/setup-torch-venv.sh) or pass --python" %
                      (sys.executable, type(e).__name__, e))


def make_problem(request):
    fmt = request.get("format", "kernelbench")
    if fmt == "kernelbench":
        from .kernelbench import KernelBenchProblem
        return KernelBenchProblem(request)
    if fmt == "flashinfer":
        from .flashinfer import FlashInferProblem
        return FlashInferProblem(request)
    from .problem import ProblemError
    raise ProblemError("request: format %r is not one the worker knows (kernelbench, flashinfer)" % fmt)


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
        return error_reply("describing %s failed: %s" % (request.get("problem"), _tail()))
    reply = {"version": PROTOCOL_VERSION, "status": "ok", "torch": torch.__version__,
             "cuda": bool(torch.cuda.is_available())}
    reply.update(body)
    return reply


# ---- run -----------------------------------------------------------------------------------------

class RunTimeout(BaseException):
    """Raised by SIGALRM when timeout_s has passed (a BaseException: candidates cannot catch it
    with `except Exception`)."""


class Verdict(Exception):
    """Ends the run early with a status (incorrect, runtime_error, suspicious, error)."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def trial_seeds(request):
    seeds = [int(s) for s in (request.get("seeds") or [1, 2, 3])]
    n = request.get("check_trials")
    if n is None:
        mode = (request.get("timing") or {}).get("mode", "default")
        n = 5 if mode == "kernelbench" else len(seeds)
    n = int(n)
    while len(seeds) < n:
        seeds.append(seeds[-1] + 1)
    return seeds[:n]


def seeds_for_sets(request, n):
    seeds = [int(s) for s in (request.get("seeds") or [1, 2, 3])]
    while len(seeds) < n:
        seeds.append(seeds[-1] + 1)
    return seeds[:n]


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
    finally:
        deadline.stop()
        signal.signal(signal.SIGALRM, old)
    res["wall_s"] = time.perf_counter() - started
    return res


def hold_gpu_lock(lock_dir, index):
    """Takes the per-GPU timing lock kpilot-runner takes (an flock on
    LOCK_DIR/kpilot-gpu-INDEX.lock), so two kpilot processes never check or time on one GPU at
    once. Held until the process ends, however it ends. Returns (seconds waited, warning or "").
    In kpilot's sandbox the lock's folder is hidden: the sandbox passes the file, opened, at the
    descriptor KPILOT_GPU_LOCK_FD names."""
    path = os.path.join(lock_dir, "kpilot-gpu-%d.lock" % index)
    inherited = os.environ.get("KPILOT_GPU_LOCK_FD")
    try:
        if inherited and os.readlink("/proc/self/fd/%s" % inherited) == path:
            fd = int(inherited)
        else:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    except OSError as e:
        return 0.0, "could not open the GPU lock file %s (%s); another kpilot may time on this GPU at the same time" % (
            path, e.strerror)
    t0 = time.perf_counter()
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            break
        except InterruptedError:
            continue
    return time.perf_counter() - t0, ""


def _tail(limit=10):
    return "\n".join(traceback.format_exc().strip().splitlines()[-limit:])


class Run:
    """One `run` request: load, correctness trials with exploit checks, timing."""

    def __init__(self, torch, request, res, deadline=None):
        self.torch = torch
        self.deadline = deadline
        self.request = request
        self.res = res
        self.details = res["details"]
        # Every timing procedure keeps every check: an official-aligned timing changes how time is
        # measured, never what is checked.
        self.exploit = True
        self.timing = dict(request.get("timing") or {})
        self.mode = self.timing.get("mode", "default")
        self.out_bytes = {}  # workload → bytes of the reference's outputs (sizes the timing's input sets)
        if self.mode not in ("default", "kernelbench", "flashinfer"):
            raise Verdict("error", "request: timing.mode %r is not default, kernelbench or flashinfer" % self.mode)

    # -- helpers --

    def sync(self):
        if self.device.type == "cuda":
            self.torch.cuda.synchronize(self.device)

    def call(self, fn, args):
        with self.torch.no_grad():
            out = fn(*args)
        self.sync()
        return out

    def for_workload(self, wl):
        """Tells workload-aware callables (native.NativeModel) which workload the next calls are for."""
        for fn in (getattr(self, "candidate", None), getattr(self, "baseline", None)):
            if hasattr(fn, "workload"):
                fn.workload = wl

    def exploit_note(self, check, found, **info):
        """Records one run of an exploit check in details.exploits: one entry per check with the
        calls it covered; what a finding saw is kept in the entry."""
        entries = self.details["exploits"]
        entry = next((e for e in entries if e["check"] == check), None)
        if entry is None:
            entry = {"check": check, "found": False, "calls": 0}
            entries.append(entry)
        entry["calls"] += 1
        if found or entry["calls"] == 1:
            entry.update(info)
        entry["found"] = entry["found"] or bool(found)

    def timer_functions(self):
        """The functions the timing procedures rely on, by identity: a candidate that replaces one
        (timer monkey-patching) is caught before any sample is taken."""
        import torch
        found = {"time.perf_counter": time.perf_counter, "torch.cuda.synchronize": torch.cuda.synchronize,
                 "torch.cuda.Event": torch.cuda.Event}
        for attr in ("record", "synchronize", "elapsed_time", "query"):
            found["torch.cuda.Event." + attr] = getattr(torch.cuda.Event, attr, None)
        return found

    def check_timers(self):
        changed = [k for k, v in self.timer_functions().items() if self.timers.get(k) is not v]
        self.exploit_note("timer_patching", changed, replaced=changed)
        if changed:
            raise Verdict("suspicious", "user code replaced %s, which the timing relies on" % ", ".join(changed))

    # -- procedure --

    def execute(self):
        torch = self.torch
        from .problem import CandidateError
        device = self.request.get("device", "cuda:0")
        try:
            self.device = torch.device(device)
        except Exception:
            raise Verdict("error", "request: device %r is not a torch device (cuda:0, cpu)" % device)
        self.lock_index = 0
        if self.device.type == "cuda":
            # Only the assigned GPU is visible to the candidate: CUDA reads CUDA_VISIBLE_DEVICES
            # when torch first initializes it, which has not happened yet in this process.
            self.lock_index = self.device.index or 0
            entry = visible_device_entry(os.environ.get("CUDA_VISIBLE_DEVICES"), self.lock_index)
            if entry is None:
                raise Verdict("error", "device %s is not among CUDA_VISIBLE_DEVICES=%s"
                              % (device, os.environ.get("CUDA_VISIBLE_DEVICES")))
            os.environ["CUDA_VISIBLE_DEVICES"] = entry
            self.device = torch.device("cuda:0")
        self.details["torch"] = torch.__version__
        self.details["python"] = sys.executable
        self.timers = self.timer_functions()
        if self.device.type == "cuda":
            if not torch.cuda.is_available():
                raise Verdict("error", "device %s was requested but torch %s reports no usable CUDA device; "
                                       "run on the GPU machine or pass device cpu" % (device, torch.__version__))
            self.details["gpu"] = torch.cuda.get_device_name(self.device)
            torch.cuda.set_device(self.device)
        else:
            self.details["gpu"] = ""
        self.problem = make_problem(self.request)
        workloads = self.problem.workloads()

        cand_spec = self.request.get("candidate") or {"kind": "reference"}
        self.cand_kind = cand_spec.get("kind", "reference")
        t0 = time.perf_counter()
        try:
            self.candidate = self.problem.build_candidate(cand_spec, self.device)
        except CandidateError as e:
            self.res["phase"] = getattr(e, "phase", "load") or "load"
            raise Verdict("runtime_error", str(e))
        self.details["candidate_setup_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        self.reference = self.problem.reference(self.device)
        self.details["reference_setup_s"] = time.perf_counter() - t0
        if self.device.type == "cuda":
            # After the candidate's build (load_inline compiles of parallel runs overlap), before
            # any check or timing; the wait does not count against timeout_s.
            if self.deadline:
                self.deadline.pause()
            waited, warning = hold_gpu_lock(self.request.get("lock_dir") or "/tmp", self.lock_index)
            if self.deadline:
                self.deadline.start()
            self.details["gpu_lock_wait_s"] = waited
            if warning:
                self.res["warnings"].append(warning)
        self.protected = [(n, t.clone()) for n, t in getattr(self.candidate, "guarded_tensors", lambda: [])()]

        self.res["phase"] = "correctness"
        t_check = time.perf_counter()
        for wl in workloads:
            self.correctness(wl, wl == workloads[0])
        if self.exploit:
            self.res["phase"] = "correctness"
            for wl in workloads[:1]:
                self.fallback_check(wl)
                if self.device.type == "cuda":
                    self.side_stream_check(wl)
                    if self.request.get("libraries", True) is False:
                        self.library_check(wl)
        self.check_timers()
        # Where the run's time went (the cost figure of docs/pytorch.md): the checks, with the
        # reference's calls and exploit checks, then the timing, with the baseline's set-up.
        self.details["check_s"] = time.perf_counter() - t_check
        if self.request.get("time", True):
            t_time = time.perf_counter()
            self.timed(workloads)
            self.check_timers()
            self.details["timing_s"] = time.perf_counter() - t_time

    def out_of_memory(self, e):
        oom = getattr(self.torch.cuda, "OutOfMemoryError", None)
        return (oom is not None and isinstance(e, oom)) or "CUDA out of memory" in str(e)

    def memory_note(self, args):
        """One sentence on the memory a call needs and the device has (an out-of-memory verdict)."""
        torch = self.torch
        gib = float(1 << 30)
        need = sum(a.numel() * a.element_size() for a in args if isinstance(a, torch.Tensor)) / gib
        free = total = 0
        if self.device.type == "cuda":
            torch.cuda.empty_cache()
            free, total = torch.cuda.mem_get_info(self.device)
        return ("the inputs of one call are %.2f GiB and the checks hold about three copies of them beside the "
                "outputs; %.1f of the GPU's %.1f GiB are free (%s)" % (need, free / gib, total / gib, _tail(1)))

    def seed_rng(self, seed):
        self.torch.manual_seed(int(seed))
        if self.device.type == "cuda":
            self.torch.cuda.manual_seed_all(int(seed))

    def reference_checks(self, wl, seed, args, saved, ref_out, tol, rule):
        """What the reference's own outputs say of the problem, recorded in details.reference_flaws
        (never a verdict): an output that is constant; that changes between two calls on the same
        inputs and random seed (nondeterministic); that changes with the random seed alone
        (random); that is the same for the first two trials' different inputs (ignores its
        inputs). Such a problem cannot tell a right candidate from a wrong one, or a right one from
        itself. The call checks run on the first trial, the inputs check on the second."""
        from .checks import as_outputs, check_record, clone_args, constant_value, fingerprint, output_names
        if getattr(self, "_inputs_checked", False):
            return
        flaws = self.details.setdefault("reference_flaws", [])
        names = output_names(len(ref_out))
        prints = [fingerprint(o) for o in ref_out]
        if not hasattr(self, "_first_trial"):
            self._first_trial = (seed, prints, [fingerprint(a) for a in args])
            for name, o in zip(names, ref_out):
                v = constant_value(o)
                if v is not None:
                    flaws.append({"flaw": "constant_output",
                                  "evidence": "output %s (%d elements) is %r everywhere" % (name, o.numel(), v)})
            for flaw, call_seed in (("nondeterministic", seed), ("random", seed + 7919)):
                self.seed_rng(call_seed)
                again = as_outputs(self.call(self.reference, clone_args(saved)))
                for name, a, r in zip(names, again, ref_out):
                    rec, _ = check_record(wl, seed, name, a, r, tol, rule)
                    if rec["ok"]:
                        continue
                    how = ("called twice on the same inputs with the same random seed" if flaw == "nondeterministic"
                           else "called again on the same inputs with another random seed")
                    flaws.append({"flaw": flaw, "evidence": "%s, output %s differs: %d of %d elements beyond the "
                                  "tolerance, max abs error %g" % (how, name, rec["mismatches"], rec["numel"],
                                                                   rec["max_abs_error"])})
                    break
                del again
                if any(f["flaw"] == "nondeterministic" for f in flaws):
                    break  # the seed's effect cannot be told from the noise
            return
        first_seed, first_prints, first_inputs = self._first_trial
        if seed == first_seed:
            return
        self._inputs_checked = True
        inputs_differ = [fingerprint(a) for a in args] != first_inputs
        if inputs_differ and prints == first_prints and any(p is not None for p in prints):
            flaws.append({"flaw": "ignores_inputs",
                          "evidence": "the outputs for the inputs of seeds %d and %d are the same, though the inputs "
                                      "differ" % (first_seed, seed)})

    def correctness(self, wl, first_workload=False):
        tol = self.problem.tolerance(wl)
        rule = self.problem.element_rule()
        self.details["tolerance"] = tol
        self.details["element_rule"] = rule
        self.for_workload(wl)
        for seed in trial_seeds(self.request):
            # One trial's tensors die with its call: at KernelBench's sizes two trials' inputs
            # alive at once would not fit the GPU.
            self.trial(wl, seed, tol, rule, first_workload)

    def trial(self, wl, seed, tol, rule, first_workload):
        from .checks import as_outputs, check_record, clone_args, impostor, mutated, near_zero, output_names
        args = []
        try:
            args = self.problem.make_inputs(wl, seed, self.device)
            ref_args = clone_args(args) if self.exploit else args
            saved = clone_args(args) if self.exploit else None
        except Exception as e:
            if self.out_of_memory(e):
                raise Verdict("error", "the GPU's memory cannot hold workload %s: %s" % (wl, self.memory_note(args)))
            raise
        names = self.problem.input_names(wl, args)
        ref_writes = []
        self.res["phase"] = "reference"
        try:
            # The same random state for the reference's call and the candidate's: a problem
            # that draws random numbers (dropout in training mode) compares like any other.
            self.seed_rng(seed)
            ref_out = as_outputs(self.call(self.reference, ref_args))
            # A reference that writes its inputs (in-place ops) makes that part of the problem:
            # the candidate must leave them as the reference does.
            ref_writes = mutated(ref_args, saved, names) if self.exploit else []
            if ref_writes:
                self.details.setdefault("reference_writes_inputs", {})[wl] = ref_writes
            else:
                ref_args = None  # at KernelBench's sizes one copy of the inputs is gigabytes
            self.out_bytes[wl] = sum(o.numel() * o.element_size() for o in ref_out
                                     if isinstance(o, self.torch.Tensor))
            if first_workload and self.exploit:
                self.reference_checks(wl, seed, args, saved, ref_out, tol, rule)
        except Verdict:
            raise
        except Exception as e:
            if self.out_of_memory(e):
                raise Verdict("error", "the GPU's memory cannot hold workload %s: %s" % (wl, self.memory_note(args)))
            raise Verdict("error", "the reference failed on workload %s, seed %d:\n%s" % (wl, seed, _tail()))
        self.res["phase"] = "correctness"
        self.seed_rng(seed)
        poisoned = self.exploit and hasattr(self.candidate, "poison")
        if poisoned:
            self.candidate.poison = True
        try:
            cand_out = as_outputs(self.call(self.candidate, args))
        except Exception:
            raise Verdict("runtime_error", "the candidate failed on workload %s, seed %d:\n%s" % (wl, seed, _tail()))
        finally:
            if poisoned:
                self.candidate.poison = False
        if len(cand_out) != len(ref_out):
            raise Verdict("incorrect", "workload %s, seed %d: the candidate returned %d outputs, the reference %d" %
                          (wl, seed, len(cand_out), len(ref_out)))
        failed = None
        for name, c, r in zip(output_names(len(ref_out)), cand_out, ref_out):
            # Before anything touches it: a tensor subclass can answer every comparison as it
            # likes (__torch_function__), or compute only when looked at.
            disguised = impostor(c, r)
            if disguised:
                raise Verdict("suspicious", "workload %s, seed %d: output %s %s" % (wl, seed, name, disguised))
            rec, why = check_record(wl, seed, name, c, r, tol, rule)
            if poisoned and not getattr(self.candidate, "guards_intact", True):
                rec["guards_intact"] = False
                rec["ok"] = False
                why = why or "output %s: the candidate wrote outside the output's memory" % name
            self.res["checks"].append(rec)
            if not rec["ok"] and failed is None:
                failed = why
        if failed:
            raise Verdict("incorrect", "workload %s, seed %d: %s" % (wl, seed, failed))
        if not self.exploit:
            return
        changed = [n for n in mutated(args, saved, names) if n not in ref_writes]
        for n, a, r in zip(names, args, ref_args or []):
            if n in ref_writes:
                rec, why = check_record(wl, seed, "input " + n, a, r, tol, rule)
                if not rec["ok"]:
                    raise Verdict("incorrect", "workload %s, seed %d: the reference writes its input %s and the "
                                  "candidate leaves it otherwise: %s" % (wl, seed, n, why))
        changed += [n for n, t in self.protected
                    if not _same(t, dict(self.candidate.guarded_tensors())[n])]
        self.exploit_note("input_mutation", changed, workload=wl, seed=seed, tensors=changed)
        if changed:
            raise Verdict("suspicious", "workload %s, seed %d: the candidate modified its input(s) %s" %
                          (wl, seed, ", ".join(changed)))
        zeros = [n for n, c, r in zip(output_names(len(ref_out)), cand_out, ref_out) if near_zero(c, r)]
        self.exploit_note("near_zero_output", zeros, workload=wl, seed=seed, outputs=zeros)
        if zeros:
            raise Verdict("suspicious", "workload %s, seed %d: output(s) %s are (nearly) all zero while the "
                          "reference's are not; the tolerance cannot tell them apart" % (wl, seed, ", ".join(zeros)))

    def fallback_check(self, wl):
        """Calls the candidate once with the reference's entry points replaced by raising ones and
        torch calls made while an exception is being handled recorded."""
        if self.cand_kind in ("reference", "compile"):
            self.exploit_note("fallback", False, skipped="the candidate is the reference itself")
            return
        from .checks import FallbackProbe, ReferenceCalled
        probe = FallbackProbe(self.problem.reference_entry_points())
        self.for_workload(wl)
        args = self.problem.make_inputs(wl, trial_seeds(self.request)[0], self.device)
        raised = None
        try:
            with probe.active():
                self.call(self.candidate, args)
        except ReferenceCalled as e:
            raised = e
        except Exception as e:
            raised = e
        found = bool(probe.reference_calls or probe.handled_torch_calls)
        self.exploit_note("fallback", found, entry_points=["%s.%s" % (getattr(o, "__name__", "?"), a)
                                                           for o, a in probe.entry_points],
                          reference_calls=probe.reference_calls[:5],
                          torch_calls_while_handling=["%s (handling %s)" % c for c in probe.handled_torch_calls[:5]])
        if probe.reference_calls:
            context = raised.__context__ if raised is not None else None
            how = " while handling %s" % type(context).__name__ if context is not None else ""
            raise Verdict("suspicious", "the candidate calls the reference (%s)%s; a candidate must compute the "
                          "result itself" % (probe.reference_calls[0], how))
        if probe.handled_torch_calls:
            fn, exc = probe.handled_torch_calls[0]
            raise Verdict("suspicious", "the candidate called torch %s while handling %s: a try/except fallback "
                          "to PyTorch" % (fn, exc))
        if raised is not None and not isinstance(raised, ReferenceCalled):
            raise Verdict("suspicious", "the candidate fails when the reference cannot run (%s: %s)" %
                          (type(raised).__name__, raised))

    def library_check(self, wl):
        """Where the task says libraries = false: the kernels one candidate call launches, from
        torch.profiler's CUDA activity, must all be the candidate's own. A vendor library's or a
        PyTorch operator's kernel makes the verdict incorrect, as in kpilot-runner; a ModelNew that
        falls back to the reference's torch ops, with a try/except or without, shows up here."""
        if self.cand_kind in ("reference", "compile"):
            self.exploit_note("library_kernels", False, skipped="the candidate is the reference itself")
            return
        from torch.autograd import DeviceType
        from torch.profiler import ProfilerActivity, profile
        from .checks import library_kernels
        args = self.problem.make_inputs(wl, trial_seeds(self.request)[0], self.device)
        self.for_workload(wl)
        try:
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                self.call(self.candidate, args)
        except Exception:
            raise Verdict("runtime_error", "the candidate failed on workload %s during the library check:\n%s" %
                          (wl, _tail()))
        kernels = [e.name for e in prof.events() if e.device_type == DeviceType.CUDA]
        used = library_kernels(kernels)
        self.exploit_note("library_kernels", bool(used), kernels=len(kernels), library_kernels=used[:5])
        if used:
            self.details["library_use"] = ["kernel " + k[:200] for k in used[:10]]
            raise Verdict("incorrect", "the candidate runs library kernels (%s) but the task says libraries = false" %
                          ", ".join(k[:120] for k in used[:3]))

    def side_stream_check(self, wl):
        """Work that escapes the current stream: after the candidate's end event completes, the
        device should be idle (a full synchronize returns at once) and its outputs final."""
        from .timing import median
        args = self.problem.make_inputs(wl, trial_seeds(self.request)[0], self.device)
        self.for_workload(wl)
        try:
            event_ms, extra_ms, wall_ms, changed = self._stream_samples(args)
        except Exception:
            raise Verdict("runtime_error", "the candidate failed on workload %s during the side-stream check:\n%s" %
                          (wl, _tail()))
        ev, ex = median(event_ms), median(extra_ms)
        late = ex > 0.1 and ex > ev
        found = changed or late
        self.exploit_note("side_stream", found, event_ms=event_ms, sync_after_event_ms=extra_ms,
                          host_wall_ms=wall_ms, outputs_changed_after_stream_done=changed)
        if found:
            raise Verdict("suspicious", "the candidate's work escapes the current stream: %s" % (
                "its outputs changed after the stream's last event completed" if changed else
                "the device stayed busy %.3f ms after the stream's last event (%.3f ms between events)" % (ex, ev)))

    def _stream_samples(self, args):
        """8 candidate calls: on even ones, the event time and how long a device-wide synchronize
        takes after the end event completed; on odd ones, whether the outputs change after it."""
        torch = self.torch
        from .checks import as_outputs, bitwise_equal
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        event_ms, extra_ms, wall_ms, changed = [], [], [], False
        with torch.no_grad():
            for k in range(8):
                torch.cuda.synchronize(self.device)
                t0 = time.perf_counter()
                start.record()
                out = self.candidate(*args)
                end.record()
                end.synchronize()
                if k % 2 == 0:
                    t1 = time.perf_counter()
                    torch.cuda.synchronize(self.device)
                    t2 = time.perf_counter()
                    extra_ms.append((t2 - t1) * 1e3)
                    wall_ms.append((t2 - t0) * 1e3)
                    event_ms.append(start.elapsed_time(end))
                else:
                    outs = [o for o in as_outputs(out) if isinstance(o, torch.Tensor)]
                    snap = [o.clone() for o in outs]
                    torch.cuda.synchronize(self.device)
                    if not all(bitwise_equal(s, o) for s, o in zip(snap, outs)):
                        changed = True
        return event_ms, extra_ms, wall_ms, changed

    def fitting_sets(self, wl, first, wanted):
        """The input sets to rotate for workload `wl`, sized from one set's bytes, the outputs the
        correctness trials saw and the GPU's free memory (details.input_sets says what was chosen;
        fewer than wanted is also a warning)."""
        from .timing import input_sets_that_fit
        torch = self.torch
        set_bytes = sum(a.numel() * a.element_size() for a in first if isinstance(a, torch.Tensor))
        out_bytes = self.out_bytes.get(wl, set_bytes)
        free = total = 0
        if self.device.type == "cuda":
            torch.cuda.empty_cache()  # what the correctness trials left cached goes back first
            free, total = torch.cuda.mem_get_info(self.device)
        n, why = input_sets_that_fit(wanted, set_bytes, out_bytes, free, total)
        self.details.setdefault("input_sets", []).append(
            {"workload": wl, "wanted": wanted, "chosen": n, "set_bytes": set_bytes, "out_bytes": out_bytes,
             "free_bytes": free, "total_bytes": total})
        if why:
            self.res["warnings"].append("workload %s: %s" % (wl, why))
        return n, why

    def timed(self, workloads):
        from . import timing
        from .checks import clone_args
        from .problem import CandidateError
        torch = self.torch
        base_spec = self.request.get("baseline") or {"kind": "reference"}
        self.res["phase"] = "load"
        t0 = time.perf_counter()
        try:
            self.baseline = self.problem.build_candidate(base_spec, self.device)
        except CandidateError as e:
            raise Verdict("error", "the baseline (%s) could not be built: %s" % (base_spec.get("kind"), e))
        self.details["baseline_setup_s"] = time.perf_counter() - t0
        self.res["phase"] = "timing"
        flush = None
        if self.device.type == "cuda" and self.mode == "kernelbench":
            flush = max(256 << 20, 2 * timing.l2_bytes(self.device))
        clock = timing.Clock(self.device, flush)
        wanted = self.problem.timing_input_sets(self.mode)
        for wl in workloads:
            seeds = seeds_for_sets(self.request, wanted)
            sets = [self.problem.make_inputs(wl, seeds[0], self.device)]
            n_sets, why = self.fitting_sets(wl, sets[0], wanted)
            sets += [self.problem.make_inputs(wl, s, self.device) for s in seeds[1:n_sets]]
            self.for_workload(wl)
            cand_calls = [_bind(self.candidate, a) for a in sets]
            base_calls = [_bind(self.baseline, clone_args(a)) for a in sets]
            try:
                with torch.no_grad():
                    if self.mode == "kernelbench":
                        rec = timing.time_kernelbench(clock, cand_calls[0], base_calls[0], self.timing)
                    elif self.mode == "flashinfer":
                        rec = timing.time_flashinfer(clock, cand_calls, base_calls, self.timing)
                    else:
                        rec = timing.time_default(clock, cand_calls, base_calls, self.timing)
            except Exception:
                raise Verdict("runtime_error", "a call failed while timing workload %s:\n%s" % (wl, _tail()))
            rec["workload"] = wl
            self.res["timings"].append(rec)


def _bind(fn, args):
    return lambda: fn(*args)


def _same(a, b):
    from .checks import bitwise_equal
    return bitwise_equal(a, b)


# ---- entry point ---------------------------------------------------------------------------------

def visible_device_entry(visible, index):
    """The CUDA_VISIBLE_DEVICES entry naming device `index` as the caller numbers them: the index
    itself when the variable is unset or empty, else the list's entry at that place (an index, a
    UUID or a MIG name); None when the list has no such entry."""
    if not visible:
        return str(index)
    entries = visible.split(",")
    return entries[index] if 0 <= index < len(entries) else None


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
