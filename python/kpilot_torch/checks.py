"""Output comparison (the element rules) and the exploit detectors the worker runs.

Everything here is format-neutral: a Problem says which element rule and tolerance apply, and
the worker calls these functions on the outputs of one trial.
"""

import contextlib
import math
import re
import sys

import torch


# Elements compared at once: bounds the float64 temporaries of a comparison to a few GiB.
CHECK_CHUNK = 1 << 26


def as_outputs(result):
    """A call's result as a list of tensors (a tensor, or a tuple/list of them)."""
    if isinstance(result, torch.Tensor):
        return [result]
    if isinstance(result, (tuple, list)):
        return list(result)
    return [result]


def impostor(cand, ref):
    """Why `cand` is not an output to be compared as a tensor ("" when it is one): a subclass of
    torch.Tensor (its __torch_function__ can fake every comparison, or compute lazily, only when
    looked at) where the reference gives a plain tensor. Looks at the type alone: nothing of the
    candidate's runs."""
    if not isinstance(cand, torch.Tensor) or type(cand) is torch.Tensor or type(cand) is type(ref):
        return ""
    return "is a %s, a subclass of torch.Tensor, where the reference returns a %s" % (
        type(cand).__name__, type(ref).__name__)


def output_names(n):
    return ["out"] if n == 1 else ["out%d" % i for i in range(n)]


def _num(v):
    """JSON has no NaN or Inf; encoded as strings the way the runner does (JsonNumber)."""
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def check_record(workload, seed, name, cand, ref, tol, rule):
    """One CheckRecord (src/runner/protocol.h) for one output of one call, plus a reason string
    ("" when ok). `rule`: "kpilot" — an element is bad if |c - r| > atol + rtol·|r| (torch.allclose);
    "flashinfer" — bad only if |c - r| > atol and |c - r|/|r| > rtol. NaN/Inf must match exactly.
    With matched_ratio < 1 the output is ok when at least that share of elements is good."""
    rec = {"workload": workload, "seed": int(seed), "output": name, "numel": 0, "mismatches": 0,
           "max_abs_error": 0.0, "max_rel_error": 0.0, "first_bad_index": -1, "first_bad_value": 0.0,
           "first_bad_expected": 0.0, "guards_intact": True, "ok": False}
    if not isinstance(cand, torch.Tensor):
        return rec, "output %s is a %s, expected a tensor" % (name, type(cand).__name__)
    rec["numel"] = int(ref.numel())
    if tuple(cand.shape) != tuple(ref.shape):
        rec["mismatches"] = rec["numel"]
        return rec, "output %s has shape %s, expected %s" % (name, list(cand.shape), list(ref.shape))
    if cand.dtype != ref.dtype:
        rec["mismatches"] = rec["numel"]
        return rec, "output %s has dtype %s, expected %s" % (name, cand.dtype, ref.dtype)
    # A dense tensor on the reference's device: not one computed elsewhere and moved at compare
    # time, nor a sparse or other layout that compares by other rules.
    if cand.layout != ref.layout:
        rec["mismatches"] = rec["numel"]
        return rec, "output %s has layout %s, expected %s" % (name, cand.layout, ref.layout)
    if cand.device != ref.device:
        rec["mismatches"] = rec["numel"]
        return rec, "output %s is on %s, expected %s" % (name, cand.device, ref.device)
    if ref.numel() == 0:
        rec["ok"] = True
        return rec, ""
    atol, rtol = float(tol["atol"]), float(tol["rtol"])
    cflat, rflat = cand.detach().reshape(-1), ref.detach().reshape(-1)
    # The same bits everywhere pass under every rule with no error to measure: one read of each
    # side instead of a dozen float64 passes (a reference against itself, a deterministic kernel).
    # torch.equal is false wherever a NaN sits, so such outputs take the full comparison.
    if torch.equal(cflat, rflat):
        rec["ok"] = True
        return rec, ""

    def compare(c, r):
        c = c.to(device=ref.device, dtype=torch.float64)
        r = r.to(torch.float64)
        diff = (c - r).abs()
        rel = diff / r.abs().clamp_min(1e-12)
        finite = torch.isfinite(c) & torch.isfinite(r)
        # Non-finite values match only themselves (NaN with NaN, +Inf with +Inf).
        same_special = (~finite) & ((c == r) | (torch.isnan(c) & torch.isnan(r)))
        if rule == "flashinfer":
            bad_finite = (diff > atol) & (rel > rtol)
        else:
            bad_finite = diff > atol + rtol * r.abs()
        bad = torch.where(finite, bad_finite, ~same_special)
        return c, r, diff, rel, finite, bad

    # In chunks: at KernelBench's sizes (a 1.6-billion-element output) the float64 temporaries of
    # one whole-tensor pass would need several times the output's memory. Each chunk's figures
    # stay on the device until one read at the end.
    stats = []
    for c, r in zip(chunks(cflat), chunks(rflat)):
        c, r, diff, rel, finite, bad = compare(c, r)
        zero = torch.zeros((), dtype=torch.float64, device=diff.device)
        stats.append(torch.stack([bad.sum().to(torch.float64), (~finite).sum().to(torch.float64),
                                  torch.where(finite, diff, zero).max(), torch.where(finite, rel, zero).max()]))
    per_chunk = torch.stack(stats).cpu().tolist()
    bad_counts = [int(x[0]) for x in per_chunk]
    mismatches = sum(bad_counts)
    all_finite = all(x[1] == 0 for x in per_chunk)
    max_abs = max(x[2] for x in per_chunk)
    max_rel = max(x[3] for x in per_chunk)
    first = None
    if mismatches:
        k = next(i for i, n in enumerate(bad_counts) if n)
        at = k * CHECK_CHUNK
        c, r, _, _, _, bad = compare(cflat[at:at + CHECK_CHUNK], rflat[at:at + CHECK_CHUNK])
        i = int(torch.nonzero(bad)[0].item())
        first = (at + i, c[i].item(), r[i].item())
    rec["mismatches"] = mismatches
    rec["max_abs_error"] = _num(max_abs if mismatches == 0 or all_finite else float("inf"))
    rec["max_rel_error"] = _num(max_rel if mismatches == 0 or all_finite else float("inf"))
    ratio = float(tol.get("matched_ratio", 1.0) or 1.0)
    if first is not None:
        rec["first_bad_index"] = first[0]
        rec["first_bad_value"] = _num(first[1])
        rec["first_bad_expected"] = _num(first[2])
    rec["ok"] = mismatches == 0 or (ratio < 1.0 and 1.0 - mismatches / rec["numel"] >= ratio)
    if rec["ok"]:
        return rec, ""
    return rec, ("output %s: %d of %d elements differ (first at %d: %r, expected %r; max abs error %g)" %
                 (name, mismatches, rec["numel"], rec["first_bad_index"], rec["first_bad_value"],
                  rec["first_bad_expected"], max_abs))


def near_zero(cand, ref):
    """True when the candidate's output is (nearly) all zero while the reference's is not: the
    tolerance may not tell zeros from the answer when the reference's values are tiny."""
    if not isinstance(cand, torch.Tensor) or ref.numel() == 0 or cand.shape != ref.shape:
        return False
    ref_scale = finite_abs_max(ref)
    if ref_scale == 0.0:
        return False
    return finite_abs_max(cand.to(device=ref.device)) <= 1e-3 * ref_scale


def finite_abs_max(t):
    """The largest |value| among the finite elements of `t` (0 when none), in chunks."""
    flat = t.detach().reshape(-1)
    if flat.numel() == 0:
        return 0.0
    maxima = []
    for x in chunks(flat):
        # A maximum is exact in the tensor's own floating type: no float64 copy of the chunk.
        x = x.abs() if x.is_floating_point() else x.to(torch.float64).abs()
        maxima.append(torch.where(torch.isfinite(x), x, torch.zeros_like(x)).max().to(torch.float64))
    return float(torch.stack(maxima).max().item())


def chunks(flat):
    """Views of a flat tensor, CHECK_CHUNK elements each: a check converts one at a time, so its
    temporaries stay a few hundred MiB whatever the tensor's size."""
    return (flat[at:at + CHECK_CHUNK] for at in range(0, flat.numel(), CHECK_CHUNK))


def constant_value(t):
    """The value every element of tensor `t` holds (more than one element, NaN never), else None."""
    if not isinstance(t, torch.Tensor) or t.numel() < 2 or t.is_complex():
        return None
    flat = t.detach().reshape(-1)
    if t.dtype == torch.bool:
        same = bool(flat.all().item()) or not bool(flat.any().item())
    else:
        same = bool((flat.amin() == flat.amax()).item())  # a NaN anywhere makes both NaN: never equal
    if not same:
        return None
    return _num(flat[0].item()) if t.dtype.is_floating_point else flat[0].item()


def fingerprint(t):
    """A cheap summary of a tensor's values (shape, dtype, sum, and 4096 evenly spaced elements):
    two tensors with the same fingerprint almost surely hold the same values. None for what is not
    a tensor."""
    if not isinstance(t, torch.Tensor):
        return None
    if t.is_complex():
        return (tuple(t.shape), str(t.dtype))
    flat = t.detach().reshape(-1)
    step = max(1, flat.numel() // 4096)
    total = sum(c.sum(dtype=torch.float64) for c in chunks(flat)) if flat.numel() else 0.0
    return (tuple(t.shape), str(t.dtype), _num(float(total)),
            tuple(_num(x) for x in flat[::step][:4096].double().tolist()))


def bitwise_equal(a, b):
    """Two tensors hold the same bits (NaN-safe), or two non-tensors are equal."""
    if not isinstance(a, torch.Tensor):
        return a == b
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if torch.equal(a, b):  # one fused pass; false only where a NaN sits (NaN != NaN) or values differ
        return True
    if not a.dtype.is_floating_point:
        return False
    fa, fb = a.reshape(-1), b.reshape(-1)
    return all(bool(((x == y) | (torch.isnan(x) & torch.isnan(y))).all().item()) for x, y in zip(chunks(fa), chunks(fb)))


def clone_args(args):
    return [a.clone() if isinstance(a, torch.Tensor) else a for a in args]


def mutated(args, saved, names):
    """Names of the tensors among `args` that differ from their saved copies."""
    return [n for n, a, s in zip(names, args, saved) if isinstance(a, torch.Tensor) and not bitwise_equal(a, s)]


class ReferenceCalled(BaseException):
    """Raised by the reference's entry points while the candidate runs under the fallback check.
    A BaseException so that `except Exception:` in a candidate does not swallow it."""


class FallbackProbe:
    """While active: the given (owner, attribute) entry points raise ReferenceCalled, and every
    torch function called while an exception is being handled is recorded. A candidate that
    catches its own failure and falls back to PyTorch shows up in one of the two."""

    def __init__(self, entry_points):
        self.entry_points = list(entry_points)
        self.reference_calls = []     # entry points the candidate reached
        self.handled_torch_calls = []  # (torch function, exception type) while handling an exception

    @contextlib.contextmanager
    def active(self):
        saved = []
        for owner, attr in self.entry_points:
            original = getattr(owner, attr)
            saved.append((owner, attr, original))
            label = "%s.%s" % (getattr(owner, "__name__", type(owner).__name__), attr)

            def raiser(*args, _label=label, **kwargs):
                self.reference_calls.append(_label)
                raise ReferenceCalled(_label)

            setattr(owner, attr, raiser)
        mode = _HandledCallMode(self) if _HandledCallMode is not None else None
        try:
            if mode is not None:
                with mode:
                    yield self
            else:
                yield self
        finally:
            for owner, attr, original in reversed(saved):
                setattr(owner, attr, original)


_TorchFunctionMode = getattr(getattr(torch, "overrides", None), "TorchFunctionMode", None)
if _TorchFunctionMode is not None:
    class _HandledCallMode(_TorchFunctionMode):
        def __init__(self, probe):
            super().__init__()
            self.probe = probe

        def __torch_function__(self, func, types, args=(), kwargs=None):
            exc = sys.exc_info()[0]
            if exc is not None and not issubclass(exc, (StopIteration, ReferenceCalled)):
                name = getattr(func, "__name__", str(func))
                if len(self.probe.handled_torch_calls) < 20:
                    self.probe.handled_torch_calls.append((name, exc.__name__))
            return func(*args, **(kwargs or {}))
else:
    _HandledCallMode = None


# Kernels of vendor libraries (cuBLAS and cuBLASLt, cuDNN, CUTLASS as shipped in them, cuFFT, ...),
# of PyTorch's own operators (ATen, the kernels Inductor generates for torch.compile) by the names
# the profiler reports. A candidate's own kernels (load_inline, native objects) carry the names
# their author gave them. Fills and copies (torch.zeros, .contiguous(), .to()) move data without
# computing the result and are not library use.
_LIBRARY_KERNEL = re.compile(
    r"cublas|cudnn|cutlass|cufft|cusparse|cusolver|cutensor|curand|nvjet|"
    r"^(?:void )?(?:ampere|volta|turing|maxwell|sm\d+)_\w*(?:gemm|xmma|fprop|dgrad|wgrad)|"
    r"^(?:void )?(?:gemv2[NT]_kernel|gemmSN_|gemmk1_kernel|splitKreduce_kernel|dot_kernel|reduce_1Block_kernel)|"
    r"\bat::native::|\bat::cuda::|\bat_cuda_detail::|^triton_(?:poi|red|per|tem)_", re.I)
_DATA_MOVEMENT = re.compile(r"FillFunctor|copy_kernel|direct_copy|CatArrayBatchedCopy", re.I)


def library_kernels(names):
    """The library kernels among the kernel names of a candidate's call, first occurrence order,
    no repeats."""
    found = []
    for name in names:
        if _LIBRARY_KERNEL.search(name) and not _DATA_MOVEMENT.search(name) and name not in found:
            found.append(name)
    return found
