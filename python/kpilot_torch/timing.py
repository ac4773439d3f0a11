"""Timing procedures: kpilot's default, KernelBench's and flashinfer-bench's (docs/pytorch.md).

Each procedure takes zero-argument callables (one per input set) for the candidate and the
baseline and returns the fields of a TimingRecord (src/runner/protocol.h) without `workload`.
On CUDA, samples are CUDA events on the current stream with the L2 flushed before each call; on
the CPU (tests), the host clock around each call, no flush.
"""

import math
import time

import torch


class Clock:
    """Times one call: CUDA events on the current stream after an L2 flush, or the host clock."""

    def __init__(self, device, flush_bytes=None):
        self.device = torch.device(device)
        self.cuda = self.device.type == "cuda"
        self.flush_buffer = None
        if self.cuda:
            if flush_bytes is None:
                flush_bytes = 2 * l2_bytes(self.device)
            self.flush_buffer = torch.empty(int(flush_bytes) // 4, dtype=torch.int32, device=self.device)
            self.start = torch.cuda.Event(enable_timing=True)
            self.end = torch.cuda.Event(enable_timing=True)

    def method(self):
        if self.cuda:
            return "cuda events on the current stream, L2 flushed (%d MiB written) before each call" % (
                self.flush_buffer.numel() * 4 >> 20)
        return "host perf_counter per call (cpu, no L2 flush)"

    def flush(self):
        if self.flush_buffer is not None:
            self.flush_buffer.zero_()

    def once(self, fn, host_ms=None):
        """Milliseconds of one call. With `host_ms` (a list), also appends the host clock around
        launch + device synchronize (cuda)."""
        if not self.cuda:
            t0 = time.perf_counter()
            fn()
            return (time.perf_counter() - t0) * 1e3
        self.flush()
        t0 = time.perf_counter()
        self.start.record()
        fn()
        self.end.record()
        torch.cuda.synchronize(self.device)
        if host_ms is not None:
            host_ms.append((time.perf_counter() - t0) * 1e3)
        return self.start.elapsed_time(self.end)


def l2_bytes(device):
    """The GPU's L2 size in bytes (torch ≥ 2.x reports it; else a generous 64 MiB)."""
    props = torch.cuda.get_device_properties(device)
    size = getattr(props, "L2_cache_size", 0) or 0
    return size if size > 0 else 64 << 20


def input_sets_that_fit(wanted, set_bytes, out_bytes, free_bytes, total_bytes):
    """How many rotated input sets the timing can hold, and why: the first set is there already;
    each further one costs two copies (the candidate's and the baseline's), and the outputs of a
    candidate call and a baseline call plus a tenth of the device's memory must stay free.
    Pure: the worker passes what torch.cuda.mem_get_info reports (a CPU run passes 0s)."""
    wanted = max(1, int(wanted))
    if wanted == 1 or total_bytes <= 0:
        return wanted, ""
    spare = free_bytes - 2 * out_bytes - total_bytes // 10
    per_set = max(1, 2 * set_bytes)
    extra = max(0, min(wanted - 1, spare // per_set))
    n = 1 + int(extra)
    if n == wanted:
        return n, ""
    gib = float(1 << 30)
    return n, ("%d of %d input sets rotated: one set is %.2f GiB (held twice, candidate and baseline), the outputs "
               "%.2f GiB, and %.2f GiB of the GPU's %.1f GiB were free" %
               (n, wanted, set_bytes / gib, out_bytes / gib, free_bytes / gib, total_bytes / gib))


def median(xs):
    s = sorted(xs)
    n = len(s)
    if n == 0:
        return float("nan")
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def median_rel_ci(xs):
    """Half-width of a distribution-free 95% CI of the median (order statistics), relative to the
    median; inf with too few samples."""
    n = len(xs)
    if n < 6:
        return float("inf")
    s = sorted(xs)
    half = 1.96 * math.sqrt(n) / 2.0
    lo = max(0, int(math.floor(n / 2.0 - half)))
    hi = min(n - 1, int(math.ceil(n / 2.0 + half)))
    m = median(s)
    if m <= 0:
        return float("inf")
    return (s[hi] - s[lo]) / 2.0 / m


def _record(candidate_ms, baseline_ms, method, statistic, host_ms, loop_s, **extra):
    rec = {"candidate_ms": candidate_ms, "baseline_ms": baseline_ms, "method": method, "statistic": statistic,
           "host_ms": host_ms, "cupti_ms": [], "loop_wall_ms": loop_s * 1e3}
    rec.update(extra)
    return rec


def time_default(clock, cand_calls, base_calls, cfg):
    """kpilot's method: warmup, then candidate/baseline pairs interleaved over rotating input sets,
    the side that goes first alternating (ABBA: whatever the host did between pairs, a colder
    CPU issuing the first launch, falls on both sides alike), until both medians' 95% CIs are within target_rel_ci (after min_reps pairs), or max_reps
    pairs, or max_seconds."""
    warmup = int(cfg.get("warmup", 3))
    min_reps = int(cfg.get("min_reps", 10))
    max_reps = int(cfg.get("max_reps", 2000))
    max_seconds = float(cfg.get("max_seconds", 3.0))
    target = float(cfg.get("target_rel_ci", 0.01))
    for i in range(warmup):
        clock.once(cand_calls[i % len(cand_calls)])
        clock.once(base_calls[i % len(base_calls)])
    cand, base, host = [], [], []
    t0 = time.perf_counter()
    stop = "max_reps"
    i = 0
    while i < max_reps:
        if i % 2 == 0:
            cand.append(clock.once(cand_calls[i % len(cand_calls)], host))
            base.append(clock.once(base_calls[i % len(base_calls)]))
        else:
            base.append(clock.once(base_calls[i % len(base_calls)]))
            cand.append(clock.once(cand_calls[i % len(cand_calls)], host))
        i += 1
        if i >= min_reps:
            if median_rel_ci(cand) <= target and median_rel_ci(base) <= target:
                stop = "ci"
                break
            if time.perf_counter() - t0 >= max_seconds:
                stop = "max_seconds"
                break
    return _record(cand, base, clock.method() + "; candidate and baseline interleaved (ABBA), %d input sets" %
                   len(cand_calls), "median", host, time.perf_counter() - t0, stop=stop,
                   candidate_rel_ci=_finite(median_rel_ci(cand)), baseline_rel_ci=_finite(median_rel_ci(base)))


def _finite(v):
    return v if math.isfinite(v) else None


KERNELBENCH_WARMUP = 3
KERNELBENCH_TRIALS = 100


def time_kernelbench(clock, cand_call, base_call, cfg):
    """KernelBench's procedure: each side alone, 3 warmup calls, 100 trials (an L2 flush and a
    device synchronize around each), one input set; the reported statistic is the mean."""
    warmup = int(cfg.get("kernelbench_warmup", KERNELBENCH_WARMUP))
    trials = int(cfg.get("kernelbench_trials", KERNELBENCH_TRIALS))
    t0 = time.perf_counter()
    out = []
    for call in (cand_call, base_call):
        for _ in range(warmup):
            call()
        if clock.cuda:
            torch.cuda.synchronize(clock.device)
        out.append([clock.once(call) for _ in range(trials)])
    return _record(out[0], out[1], clock.method() + "; KernelBench procedure: %d warmup, %d trials per side, "
                   "sides timed one after the other" % (warmup, trials), "mean", [], time.perf_counter() - t0)


FLASHINFER_WARMUP = 10
FLASHINFER_ITERS = 50


def profiled_spans(clock, call, iters, prefix="kpilot_iter_"):
    """Per-iteration spans in ms from torch.profiler (kineto): each call sits in a record_function
    range with the L2 flush outside it; on CUDA the range's GPU-side annotation spans the first
    kernel's start to the last kernel's end on any stream (flashinfer-bench's CUPTI measure). None
    when the profiler does not deliver one span per iteration."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile, record_function
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if clock.cuda else [])
    with profile(activities=activities) as prof:
        for i in range(iters):
            clock.flush()
            with record_function(prefix + str(i)):
                call()
        if clock.cuda:
            torch.cuda.synchronize(clock.device)
    want = DeviceType.CUDA if clock.cuda else DeviceType.CPU
    spans = {}
    for e in prof.events():
        if e.name.startswith(prefix) and e.device_type == want:
            spans[e.name] = max(spans.get(e.name, 0.0), e.time_range.elapsed_us() / 1e3)
    if len(spans) != iters:
        return None
    return [spans[prefix + str(i)] for i in range(iters)]


def time_flashinfer(clock, cand_calls, base_calls, cfg):
    """flashinfer-bench's procedure: per input set (3), 10 warmup calls then 50 timed iterations
    with a cold L2, each side alone; samples of all sets in order, statistic median (the per-set
    medians and their mean, flashinfer's latency, are in `set_medians_ms`/`latency_ms`). On CUDA
    the samples are kineto kernel spans (any stream) when the profiler delivers them, else CUDA
    events on the current stream; `method` says which."""
    warmup = int(cfg.get("flashinfer_warmup", FLASHINFER_WARMUP))
    iters = int(cfg.get("flashinfer_iters", FLASHINFER_ITERS))
    use_profiler = clock.cuda and cfg.get("flashinfer_timer", "kineto") == "kineto"
    t0 = time.perf_counter()
    samples = ([], [])
    set_medians = ([], [])
    sources = set()
    for side, calls in enumerate((cand_calls, base_calls)):
        for call in calls:
            for _ in range(warmup):
                call()
            xs = None
            if use_profiler:
                try:
                    xs = profiled_spans(clock, call, iters)
                except Exception:
                    xs = None
            if xs is None:
                xs = [clock.once(call) for _ in range(iters)]
                sources.add(clock.method())
            else:
                sources.add("kineto kernel spans per iteration (first kernel start to last kernel end, any "
                            "stream), L2 flushed before each")
            samples[side].extend(xs)
            set_medians[side].append(median(xs))
    return _record(samples[0], samples[1], " + ".join(sorted(sources)) + "; flashinfer-bench procedure: %d warmup, "
                   "%d iterations per input set, %d sets" % (warmup, iters, len(cand_calls)),
                   "median", [], time.perf_counter() - t0,
                   set_medians_ms={"candidate": set_medians[0], "baseline": set_medians[1]},
                   latency_ms={"candidate": sum(set_medians[0]) / len(set_medians[0]),
                               "baseline": sum(set_medians[1]) / len(set_medians[1])})
