"""Output comparison (the element rules) and the exploit detectors the worker runs.

Everything here is format-neutral: a Problem says which element rule and tolerance apply, and
the worker calls these functions on the outputs of one trial.
"""

import contextlib
import math
import re
import sys

import torch


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
    c = cand.detach().reshape(-1).to(device=ref.device, dtype=torch.float64)
    r = ref.detach().reshape(-1).to(torch.float64)
    atol, rtol = float(tol["atol"]), float(tol["rtol"])
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
    mismatches = int(bad.sum().item())
    rec["mismatches"] = mismatches
    fd = torch.where(finite, diff, torch.zeros_like(diff))
    fr = torch.where(finite, rel, torch.zeros_like(rel))
    rec["max_abs_error"] = _num(fd.max().item() if mismatches == 0 or finite.all() else float("inf"))
    rec["max_rel_error"] = _num(fr.max().item() if mismatches == 0 or finite.all() else float("inf"))
    ratio = float(tol.get("matched_ratio", 1.0) or 1.0)
    if mismatches:
        i = int(torch.nonzero(bad)[0].item())
        rec["first_bad_index"] = i
        rec["first_bad_value"] = _num(c[i].item())
        rec["first_bad_expected"] = _num(r[i].item())
    rec["ok"] = mismatches == 0 or (ratio < 1.0 and 1.0 - mismatches / rec["numel"] >= ratio)
    if rec["ok"]:
        return rec, ""
    return rec, ("output %s: %d of %d elements differ (first at %d: %r, expected %r; max abs error %g)" %
                 (name, mismatches, rec["numel"], rec["first_bad_index"], rec["first_bad_value"],
                  rec["first_bad_expected"], float(fd.max().item())))


def near_zero(cand, ref):
    """True when the candidate's output is (nearly) all zero while the reference's is not: the
    tolerance may not tell zeros from the answer when the reference's values are tiny."""
    if not isinstance(cand, torch.Tensor) or ref.numel() == 0 or cand.shape != ref.shape:
        return False
    r = ref.detach().double()
    c = cand.detach().to(device=ref.device, dtype=torch.float64)
    r = r[torch.isfinite(r)]
    ref_scale = r.abs().max().item() if r.numel() else 0.0
    if ref_scale == 0.0:
        return False
    cf = c[torch.isfinite(c)]
    cand_scale = cf.abs().max().item() if cf.numel() else 0.0
    return cand_scale <= 1e-3 * ref_scale


def bitwise_equal(a, b):
    """Two tensors hold the same bits (NaN-safe), or two non-tensors are equal."""
    if not isinstance(a, torch.Tensor):
        return a == b
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.is_floating_point:
        return bool(((a == b) | (torch.isnan(a) & torch.isnan(b))).all().item())
    return bool(torch.equal(a, b))


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
