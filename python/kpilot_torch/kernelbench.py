"""KernelBench problems (docs/pytorch.md): a problem file as it is — `Model`, `get_inputs`,
`get_init_inputs`, module-level size constants — and its candidates: the reference, torch.compile,
a `ModelNew` file, or a kpilot-ABI object bound by a generated ModelNew-like wrapper.

Models are built the way KernelBench builds them: the init inputs are drawn, the RNG is seeded with
the same value, then the class is constructed; so a ModelNew that creates its parameters in the
reference's order and shapes gets the same values.
"""

import contextlib
import importlib.util
import inspect
import os
import sys

import torch

from . import native
from .native import NativeModel  # noqa: F401  (re-exported: flashinfer.py binds objects with it)
from .problem import CandidateError, Problem, ProblemError, TensorSpec, traceback_tail

INIT_SEED = 42  # KernelBench seeds model construction with 42


def seed_all(seed):
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def load_module(path, name):
    """Imports a Python file under `name`; the file's folder is on sys.path while it loads."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    folder = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    finally:
        if sys.path and sys.path[0] == folder:
            sys.path.pop(0)
    sys.modules[name] = module
    return module


def to_device(args, device):
    return [a.to(device) if isinstance(a, torch.Tensor) else a for a in args]


def made_on(device):
    """A context in which torch's factory functions allocate on `device` (torch >= 2.0 and a GPU):
    inputs and parameters are drawn there directly, not drawn on the host and copied, which at
    KernelBench's sizes (a 6 GiB input) is most of a problem's set-up time. Values come from the
    device's generator, seeded like the host's. A no-op on the CPU and on older torch."""
    device = torch.device(device)
    if device.type != "cuda" or not hasattr(device, "__enter__"):
        return contextlib.nullcontext()
    return device


def on_meta(fn):
    """fn("meta") with torch's factory functions allocating on the meta device (no memory, no
    time); None where torch has no device context (before 2.0) or fn fails there (a problem that
    reads values: item(), a Python loop over a tensor)."""
    if not hasattr(torch.device("cpu"), "__enter__"):
        return None
    try:
        with torch.device("meta"):
            return fn("meta")
    except Exception:
        return None


def precision_tolerance(dtypes):
    """KernelBench's tolerance by precision: 1e-2 if any floating tensor is fp16/bf16, else 1e-4."""
    low = any(d in (torch.float16, torch.bfloat16) for d in dtypes)
    t = 1e-2 if low else 1e-4
    return {"atol": t, "rtol": t, "matched_ratio": 1.0}


class KernelBenchProblem(Problem):
    def __init__(self, request):
        self.request = request
        self.path = request.get("problem") or ""
        if not self.path:
            raise ProblemError("request: \"problem\" is missing; give the KernelBench problem file's absolute path")
        if not os.path.isfile(self.path):
            raise ProblemError("%s: no such file; give the KernelBench problem file's absolute path" % self.path)
        self.name = os.path.splitext(os.path.basename(self.path))[0]
        try:
            self.module = load_module(self.path, "kpilot_problem")
        except Exception:
            raise ProblemError("%s: importing the problem failed:\n%s" % (self.path, traceback_tail()))
        for attr in ("Model", "get_inputs", "get_init_inputs"):
            if not hasattr(self.module, attr):
                raise ProblemError("%s: defines no `%s`; a KernelBench problem defines class Model(nn.Module), "
                                   "get_inputs() and get_init_inputs()" % (self.path, attr))
        self.Model = self.module.Model
        try:  # read now: the fallback check replaces Model.forward while the candidate runs
            self._forward_params = list(inspect.signature(self.Model.forward).parameters.values())[1:]
        except (TypeError, ValueError):
            self._forward_params = []
        self._reference = {}
        self._specs = {}
        self._candidate_classes = {}  # ModelNew file -> its class (load_candidate)

    # ---- models -----------------------------------------------------------------------------

    def _init_inputs(self):
        seed_all(INIT_SEED)
        return list(self.module.get_init_inputs())

    def _build(self, cls, device):
        init = self._init_inputs()
        seed_all(INIT_SEED)
        with made_on(device):
            model = cls(*init)
        if isinstance(model, torch.nn.Module):
            model = model.to(device)
        return model

    def reference(self, device):
        key = str(device)
        if key not in self._reference:
            try:
                self._reference[key] = self._build(self.Model, device)
            except Exception:
                raise ProblemError("%s: building Model failed:\n%s" % (self.path, traceback_tail()))
        return self._reference[key]

    def reference_entry_points(self):
        points = [(self.Model, "forward")]
        for value in vars(self.module).values():
            if (inspect.isclass(value) and value is not self.Model and issubclass(value, torch.nn.Module)
                    and value.__module__ == self.module.__name__ and "forward" in vars(value)):
                points.append((value, "forward"))
        return points

    # ---- inputs and outputs -----------------------------------------------------------------

    def workloads(self):
        names = [w.get("name", "default") for w in (self.request.get("workloads") or [{"name": "default"}])]
        for n in names:
            if n != "default":
                raise ProblemError("%s: a KernelBench problem has one workload, \"default\"; the request asks for %r" %
                                   (self.path, n))
        return names

    def make_inputs(self, workload, seed, device):
        seed_all(int(seed))
        try:
            with made_on(device):
                args = list(self.module.get_inputs())
        except Exception:
            raise ProblemError("%s: get_inputs() failed:\n%s" % (self.path, traceback_tail()))
        return to_device(args, device)

    def input_names(self, workload, inputs):
        params = self._forward_params
        names = []
        for i, _ in enumerate(inputs):
            if i < len(params) and params[i].kind in (params[i].POSITIONAL_ONLY, params[i].POSITIONAL_OR_KEYWORD):
                names.append(params[i].name)
            else:
                names.append("in%d" % i)
        return names

    def output_specs(self, workload, inputs):
        key = tuple((tuple(a.shape), a.dtype) if isinstance(a, torch.Tensor) else ("scalar", a) for a in inputs)
        if key not in self._specs:
            device = next((a.device for a in inputs if isinstance(a, torch.Tensor)), torch.device("cpu"))
            with torch.no_grad():
                result = self.reference(device)(*inputs)
            outs = result if isinstance(result, (tuple, list)) else [result]
            names = ["out"] if len(outs) == 1 else ["out%d" % i for i in range(len(outs))]
            self._specs[key] = [TensorSpec(n, o.dtype, o.shape) for n, o in zip(names, outs)]
        return self._specs[key]

    def tolerance(self, workload):
        given = self.request.get("tolerance")
        if given:
            t = {"atol": 1e-4, "rtol": 1e-4, "matched_ratio": 1.0}
            t.update({k: v for k, v in given.items() if v is not None})
            return t
        return self._precision_tolerance()

    def _precision_tolerance(self):
        """By the floating dtypes of the inputs and the model's parameters (and the outputs, once
        describe has run the model): no forward pass just for this."""
        if not hasattr(self, "_tol"):
            if hasattr(self, "_shapes"):
                tensors = self._shapes["inputs"] + self._shapes["outputs"]
            else:
                tensors = [a for a in self._input_dtype_draw() if isinstance(a, torch.Tensor)]
                for model in self._reference.values():
                    if isinstance(model, torch.nn.Module):
                        tensors += list(model.state_dict().values())
            self._tol = precision_tolerance([t.dtype for t in tensors if t.dtype.is_floating_point])
        return self._tol

    def _input_dtype_draw(self):
        """One set of inputs, for their dtypes only: on the meta device where torch allows it (no
        memory and no time; drawn on the CPU, a KernelBench input of several GiB took seconds of
        the checks), else on the CPU."""
        args = on_meta(lambda device: self.make_inputs("default", 0, device))
        return args if args is not None else self.make_inputs("default", 0, "cpu")

    # ---- describe ---------------------------------------------------------------------------

    def _describe_shapes(self):
        """Inputs (role input/param), scalars and outputs as concrete tensors, from a meta-device
        run where torch allows it, else a CPU run."""
        if hasattr(self, "_shapes"):
            return self._shapes
        shapes = on_meta(self._shapes_on)
        if shapes is not None:
            shapes["where"] = "meta"
        else:
            try:
                shapes = self._shapes_on("cpu")
            except ProblemError:
                raise
            except Exception:
                raise ProblemError("%s: running Model on the CPU to learn the output shapes failed:\n%s" %
                                   (self.path, traceback_tail()))
            shapes["where"] = "cpu"
        self._shapes = shapes
        return shapes

    def _shapes_on(self, device):
        args = self.make_inputs("default", 1, device)
        model = self._build(self.Model, device)
        with torch.no_grad():
            result = model(*args)
        outs = list(result) if isinstance(result, (tuple, list)) else [result]
        for o in outs:
            if not isinstance(o, torch.Tensor):
                raise ProblemError("%s: Model.forward returns a %s; kpilot needs a tensor or a tuple of tensors" %
                                   (self.path, type(o).__name__))
        names = self.input_names("default", args)
        inputs = [(n, a) for n, a in zip(names, args) if isinstance(a, torch.Tensor)]
        scalars = [(n, a) for n, a in zip(names, args) if not isinstance(a, torch.Tensor)]
        params = []
        if isinstance(model, torch.nn.Module):
            params = [(k.replace(".", "_"), v) for k, v in model.state_dict().items()]
        out_names = ["out"] if len(outs) == 1 else ["out%d" % i for i in range(len(outs))]
        return {"input_pairs": inputs, "scalars": scalars, "params": params,
                "output_pairs": list(zip(out_names, outs)),
                "inputs": [t for _, t in inputs + params], "outputs": outs}

    def describe(self):
        s = self._describe_shapes()
        constants = {}
        for k, v in vars(self.module).items():
            if isinstance(v, int) and not isinstance(v, bool) and not k.startswith("_"):
                constants.setdefault(v, []).append(k)
        axes = {}

        def shape_of(name, t):
            dims = []
            for i, d in enumerate(t.shape):
                owners = constants.get(int(d), [])
                axis = owners[0] if len(owners) == 1 else "%s_d%d" % (name, i)
                axes[axis] = int(d)
                dims.append(axis)
            return dims

        def entry(name, t, role=None):
            try:
                dt = native.dtype_name(t.dtype)
            except ValueError as e:
                raise ProblemError("%s: tensor %s: %s" % (self.path, name, e))
            e = {"name": name, "dtype": dt, "shape": shape_of(name, t)}
            if role:
                e["role"] = role
            return e

        inputs = [entry(n, t, "input") for n, t in s["input_pairs"]] + [entry(n, t, "param") for n, t in s["params"]]
        outputs = [entry(n, t) for n, t in s["output_pairs"]]
        scalars = []
        for n, v in s["scalars"]:
            try:
                scalars.append({"name": n, "dtype": native.scalar_dtype_name(v), "value": v})
            except ValueError as e:
                raise ProblemError("%s: input %s: %s" % (self.path, n, e))
        nbytes = sum(t.numel() * t.element_size() for t in s["inputs"] + s["outputs"])
        self.__dict__.pop("_tol", None)  # now with the outputs' dtypes too
        tol = self._precision_tolerance()
        return {"name": self.name, "inputs": inputs, "scalars": scalars, "outputs": outputs, "axes": axes,
                "tolerance": {"atol": tol["atol"], "rtol": tol["rtol"]}, "flops": 0, "bytes": int(nbytes),
                "shapes_from": s["where"]}

    # ---- candidates -------------------------------------------------------------------------

    def load_candidate(self, spec):
        if (spec or {}).get("kind") == "model_new":
            self._model_new_class(spec.get("path") or "")

    def _model_new_class(self, path):
        """The candidate file's ModelNew, imported once (its load_inline compiles run then)."""
        if path not in self._candidate_classes:
            if not os.path.isfile(path):
                raise CandidateError("candidate %r: no such file; give the ModelNew file's absolute path" % path)
            try:
                module = load_module(path, "kpilot_candidate_%d" % (abs(hash(path)) % 100000))
            except Exception:
                raise CandidateError("%s: importing the candidate failed:\n%s" % (path, traceback_tail()))
            cls = getattr(module, "ModelNew", None)
            if cls is None:
                raise CandidateError("%s: defines no class ModelNew" % path)
            self._candidate_classes[path] = cls
        return self._candidate_classes[path]

    def build_candidate(self, spec, device):
        kind = (spec or {}).get("kind", "reference")
        if kind == "reference":
            try:
                return self._build(self.Model, device)
            except Exception:
                raise ProblemError("%s: building Model failed:\n%s" % (self.path, traceback_tail()))
        if kind == "compile":
            if not hasattr(torch, "compile"):
                raise CandidateError("torch.compile is unavailable in torch %s (it needs torch ≥ 2.0)" %
                                     torch.__version__)
            model = self._build(self.Model, device)
            return torch.compile(model)
        if kind == "model_new":
            path = spec.get("path") or ""
            cls = self._model_new_class(path)
            try:
                return self._build(cls, device)
            except Exception:
                raise CandidateError("%s: building ModelNew failed:\n%s" % (path, traceback_tail()))
        if kind == "native":
            kernel = native.load_candidate_object(spec.get("object") or "")
            try:
                params_model = self._build(self.Model, device)
            except Exception:
                raise ProblemError("%s: building Model failed:\n%s" % (self.path, traceback_tail()))
            return NativeModel(self, kernel, params_model)
        raise CandidateError("candidate kind %r is not one a KernelBench problem takes "
                             "(reference, compile, model_new, native)" % kind)
