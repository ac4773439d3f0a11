"""The adapter contract between the worker and a task format (docs/pytorch.md).

A Problem knows how to make inputs, run the reference, check outputs, and build the candidates
its format allows. The worker (procedure.py) owns procedures (trials, exploit checks, timing) and
talks to formats only through this class, so KernelBench (kernelbench.py) and flashinfer-bench
(flashinfer.py) share every check and timer.
"""

import traceback


def traceback_tail(limit=10):
    """The last `limit` lines of the exception being handled, for a message."""
    return "\n".join(traceback.format_exc().strip().splitlines()[-limit:])


class ProblemError(Exception):
    """The task or the request is at fault (reported as status "error", not as a verdict)."""


class CandidateError(Exception):
    """The candidate failed to build or load (reported as a runtime_error verdict with `phase`)."""

    def __init__(self, message, phase="load"):
        super().__init__(message)
        self.phase = phase


class TensorSpec:
    """An output's name, torch dtype and concrete shape for one workload."""

    def __init__(self, name, dtype, shape):
        self.name = name
        self.dtype = dtype
        self.shape = tuple(shape)


class Problem:
    """One problem of one format. Subclasses implement every method."""

    name = "problem"

    def workloads(self):
        """Names of the workloads the request asked for, in order."""
        raise NotImplementedError

    def make_inputs(self, workload, seed, device):
        """Fresh positional arguments for one call (tensors and Python scalars), drawn from `seed`."""
        raise NotImplementedError

    def reference(self, device):
        """A callable f(*inputs) returning a tensor or a tuple of tensors: the ground truth."""
        raise NotImplementedError

    def output_specs(self, workload, inputs):
        """[TensorSpec] of what a call returns, in order (used for destination passing)."""
        raise NotImplementedError

    def tolerance(self, workload):
        """{"atol": float, "rtol": float, "matched_ratio": float} — the format's rule."""
        raise NotImplementedError

    def element_rule(self):
        """"kpilot" (|d| <= atol + rtol*|ref|) or "flashinfer" (fails only if abs > atol and rel > rtol)."""
        return "kpilot"

    def build_candidate(self, spec, device):
        """A callable f(*inputs) -> outputs for a request's candidate/baseline spec
        ({"kind": reference|compile|model_new|native|solution, ...}). Raises CandidateError."""
        raise NotImplementedError

    # ---- Optional hooks (defaults are safe for any format) ----------------------------------

    def load_candidate(self, spec):
        """The part of build_candidate that needs no GPU (importing the candidate's module,
        compiling its extension), kept for build_candidate to use. The worker calls it before it
        takes the GPU lock and build_candidate after, so compiles overlap and models are built on
        the GPU only by the run that holds it. Raises CandidateError."""

    def describe(self):
        """The describe reply's body (docs/pytorch.md); only KernelBench implements it."""
        raise ProblemError("describe is implemented for KernelBench problems only")

    def input_names(self, workload, inputs):
        """Names of the positional arguments `inputs` (for messages such as "modified input x")."""
        return ["in%d" % i for i in range(len(inputs))]

    def reference_entry_points(self):
        """[(owner, attribute)] that compute the reference (a Model class's `forward`, a module's
        `run`). The worker's fallback check replaces them with functions that raise while the
        candidate runs, so a candidate that falls back to the reference is caught."""
        return []

    def timing_input_sets(self, mode):
        """How many input sets the timing procedure rotates through (by seed)."""
        return {"kernelbench": 1, "flashinfer": 3}.get(mode, 3)


def make_problem(request):
    """The Problem of a request's format (kernelbench, flashinfer)."""
    fmt = request.get("format", "kernelbench")
    if fmt == "kernelbench":
        from .kernelbench import KernelBenchProblem
        return KernelBenchProblem(request)
    if fmt == "flashinfer":
        from .flashinfer import FlashInferProblem
        return FlashInferProblem(request)
    raise ProblemError("request: format %r is not one the worker knows (kernelbench, flashinfer)" % fmt)
