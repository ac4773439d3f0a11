"""The procedure of one `run` request (docs/pytorch.md): load the candidate and the reference,
correctness trials with the exploit checks, then timing. A task format is reached only through
problem.Problem; worker.py owns the process around it (the reply, the deadline)."""

import os
import sys
import time

from .gpu import GpuLock, visible_device_entry
from .problem import make_problem, traceback_tail


class Verdict(Exception):
    """Ends the run early with a status (incorrect, runtime_error, suspicious, error)."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def is_out_of_memory(torch, e):
    """Whether `e` is the GPU's memory running out (torch's OutOfMemoryError, or its message)."""
    oom = getattr(torch.cuda, "OutOfMemoryError", None)
    return (oom is not None and isinstance(e, oom)) or "CUDA out of memory" in str(e)


def ran_out_of_memory(torch, e):
    """Whether the GPU's memory running out caused `e`: `e` itself or an exception it was raised
    while handling (a runtime_error verdict raised from the candidate's failed call, a
    CandidateError from a model that could not be built)."""
    seen = set()
    while e is not None and id(e) not in seen:
        if is_out_of_memory(torch, e):
            return True
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return False


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
        # Several problems in flight on one host share its cores: model construction and input
        # draws on the CPU use torch's intra-op threads, one per core unless the request says.
        threads = int(self.request.get("host_threads") or 0)
        if threads > 0:
            torch.set_num_threads(threads)
        self.details["host_threads"] = torch.get_num_threads()
        self.timers = self.timer_functions()
        if self.device.type == "cuda":
            if not torch.cuda.is_available():
                raise Verdict("error", "device %s was requested but torch %s reports no usable CUDA device; "
                                       "run on the GPU machine or pass device cpu" % (device, torch.__version__))
            self.details["gpu"] = torch.cuda.get_device_name(self.device)
        else:
            self.details["gpu"] = ""
        self.problem = make_problem(self.request)
        workloads = self.problem.workloads()

        cand_spec = self.request.get("candidate") or {"kind": "reference"}
        self.cand_kind = cand_spec.get("kind", "reference")
        t0 = time.perf_counter()
        try:
            # Imports and compiles (a ModelNew's load_inline, a Solution's extension) touch no GPU:
            # they run before the GPU lock, so the compiles of parallel runs overlap.
            self.problem.load_candidate(cand_spec)
        except CandidateError as e:
            self.res["phase"] = getattr(e, "phase", "load") or "load"
            raise Verdict("runtime_error", str(e))
        load_s = time.perf_counter() - t0
        if self.device.type == "cuda":
            # Before any model is built on the GPU: the GPU time-slices between processes, so one
            # run's parameter draws and copies would slow another's timed calls. The wait does not
            # count against timeout_s.
            self.gpu_lock = GpuLock(self.request.get("lock_dir") or "/tmp", self.lock_index)
            self.details["gpu_lock_wait_s"] = 0.0
            self.take_gpu_lock()
            # CUDA 12's cudaSetDevice creates the device's context (memory, loaded modules): that
            # too waits for the lock.
            torch.cuda.set_device(self.device)
        t0 = time.perf_counter()
        try:
            self.candidate = self.problem.build_candidate(cand_spec, self.device)
        except CandidateError as e:
            self.res["phase"] = getattr(e, "phase", "load") or "load"
            raise Verdict("runtime_error", str(e))
        self.details["candidate_setup_s"] = load_s + time.perf_counter() - t0
        t0 = time.perf_counter()
        self.reference = self.problem.reference(self.device)
        self.details["reference_setup_s"] = time.perf_counter() - t0
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
            baseline_ready_s = self.timed(workloads)
            self.check_timers()
            # The baseline's set-up, its compile and the lock's wait are counted on their own.
            self.details["timing_s"] = time.perf_counter() - t_time - baseline_ready_s

    def take_gpu_lock(self):
        """Waits for the GPU lock; the wait does not count against timeout_s."""
        if self.deadline:
            self.deadline.pause()
        waited, warning = self.gpu_lock.acquire()
        if self.deadline:
            self.deadline.start()
        self.details["gpu_lock_wait_s"] += waited
        if warning:
            self.res["warnings"].append(warning)

    def compile_unlocked(self, fn, wl):
        """torch.compile compiles on a model's first call, for seconds to minutes of CPU work: that
        call runs with the GPU lock released, so other runs build, check and time meanwhile (at
        the cost of one call's GPU time beside theirs), and compiles of runs side by side overlap.
        The lock is taken again before anything is checked or timed."""
        torch = self.torch
        args = self.problem.make_inputs(wl, seeds_for_sets(self.request, 1)[0], self.device)
        self.gpu_lock.release()
        t0 = time.perf_counter()
        try:
            with torch.no_grad():
                fn(*args)
            torch.cuda.synchronize(self.device)
        except Exception:
            raise Verdict("runtime_error", "the first call (torch.compile's compile) failed on workload %s:\n%s"
                          % (wl, traceback_tail()))
        finally:
            del args
            self.details["compile_s"] = time.perf_counter() - t0
            self.take_gpu_lock()

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
                "outputs; %.1f of the GPU's %.1f GiB are free (%s)" % (need, free / gib, total / gib, traceback_tail(1)))

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
            if is_out_of_memory(self.torch, e):
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
            if is_out_of_memory(self.torch, e):
                raise Verdict("error", "the GPU's memory cannot hold workload %s: %s" % (wl, self.memory_note(args)))
            raise Verdict("error", "the reference failed on workload %s, seed %d:\n%s" % (wl, seed, traceback_tail()))
        self.res["phase"] = "correctness"
        self.seed_rng(seed)
        poisoned = self.exploit and hasattr(self.candidate, "poison")
        if poisoned:
            self.candidate.poison = True
        try:
            cand_out = as_outputs(self.call(self.candidate, args))
        except Exception:
            raise Verdict("runtime_error", "the candidate failed on workload %s, seed %d:\n%s" % (wl, seed, traceback_tail()))
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
                          (wl, traceback_tail()))
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
                          (wl, traceback_tail()))
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
        """Times every workload against the baseline; returns the seconds spent making the baseline
        ready (its build, a torch.compile baseline's compile and the lock's wait after it)."""
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
        if base_spec.get("kind") == "compile" and self.device.type == "cuda":
            self.compile_unlocked(self.baseline, workloads[0])
        ready_s = time.perf_counter() - t0
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
                raise Verdict("runtime_error", "a call failed while timing workload %s:\n%s" % (wl, traceback_tail()))
            rec["workload"] = wl
            self.res["timings"].append(rec)
        return ready_s


def _bind(fn, args):
    return lambda: fn(*args)


def _same(a, b):
    from .checks import bitwise_equal
    return bitwise_equal(a, b)
