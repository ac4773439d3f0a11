"""flashinfer-bench definitions (docs/pytorch.md): a Definition JSON as it is — axes, typed inputs
and outputs in order, a PyTorch reference with a global `run` — its workload records, and its
candidates: the reference, torch.compile of it, a kpilot-ABI object, or a flashinfer-bench Solution
JSON (python / triton imported in-process, cuda / cpp built with torch.utils.cpp_extension).

Inputs are made as flashinfer-bench makes them: `random` → randn for floats (fp8 from a clamped
randn), randint in [-1024, 1024) for wide integers ([-128, 128) for int8, {0, 1} for bool), drawn
from a generator seeded with the trial's seed; `scalar` → the record's value; `safetensors` → the
tensor stored under `tensor_key` (paths arrive absolute). Correctness uses flashinfer-bench's
element rule (an element fails only if abs error > atol and rel error > rtol; 1e-2 both).
"""

import atexit
import importlib
import json
import os
import shutil
import sys
import tempfile
import types

import torch

from . import native
from .problem import CandidateError, Problem, ProblemError, TensorSpec, traceback_tail

DEFAULT_TOLERANCE = {"atol": 1e-2, "rtol": 1e-2, "matched_ratio": 1.0}

# flashinfer-bench dtype name → torch attribute (float8 types only exist in torch >= 2.1).
_TORCH_DTYPES = {
    "float32": "float32", "float16": "float16", "bfloat16": "bfloat16",
    "float8_e4m3fn": "float8_e4m3fn", "float8_e5m2": "float8_e5m2",
    "int64": "int64", "int32": "int32", "int16": "int16", "int8": "int8", "bool": "bool",
}
_INT_RANGES = {"int8": (-128, 128), "int16": (-1024, 1024), "int32": (-1024, 1024), "int64": (-1024, 1024)}
_CPP_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".c")
_LINK_FLAGS = {"cublas": ["-lcublas"], "cublaslt": ["-lcublasLt"], "cudnn": ["-lcudnn"]}


def _scratch_dir(prefix):
    """A temporary folder removed when the worker exits."""
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, path, True)
    return path


def _as_tuple(result, names, where):
    """A run's result as a tensor (one output) or a tuple in output order; dicts are keyed by name."""
    if isinstance(result, dict):
        missing = [n for n in names if n not in result]
        if missing:
            raise RuntimeError("%s returned a dict without output(s) %s" % (where, ", ".join(missing)))
        result = tuple(result[n] for n in names)
    if isinstance(result, list):
        result = tuple(result)
    if isinstance(result, tuple) and len(result) == 1:
        return result[0]
    return result


class FlashInferProblem(Problem):
    def __init__(self, request):
        self.request = request
        self.path = request.get("problem") or ""
        self._solutions = {}  # Solution file -> its SolutionCall (load_candidate)
        try:
            with open(self.path) as f:
                self.definition = json.load(f)
        except OSError as e:
            raise ProblemError("%s: cannot read the definition (%s); give the Definition JSON's absolute path" %
                               (self.path, e.strerror))
        except ValueError as e:
            raise ProblemError("%s: not valid JSON (%s)" % (self.path, e))
        d = self.definition
        for key in ("name", "axes", "inputs", "outputs", "reference"):
            if key not in d:
                raise ProblemError("%s: %s: required field is missing" % (self.path, key))
        self.name = d["name"]
        self.axes = d["axes"]
        self.const_axes = {n: int(a["value"]) for n, a in self.axes.items() if a.get("type") == "const"}
        self.inputs = list(d["inputs"].items())    # [(name, {"shape", "dtype"})], definition order
        self.outputs = list(d["outputs"].items())
        self.output_names = [n for n, _ in self.outputs]
        for name, spec in self.inputs + self.outputs:
            self._torch_dtype(name, spec)
        self.records = {}
        for i, rec in enumerate(request.get("workloads") or []):
            name = rec.get("name") or str(rec.get("uuid", ""))[:8]
            if not name:
                raise ProblemError("request: workloads[%d] has neither name nor uuid" % i)
            self.records[name] = rec
        if not self.records:
            raise ProblemError("request: no workloads for %s; pass the definition's workload records" % self.name)
        self.module = self._load_reference()
        self._run = self.module.run
        self._safetensors = {}  # (path, key) → CPU tensor

    # ---- the definition ---------------------------------------------------------------------

    def _torch_dtype(self, name, spec):
        attr = _TORCH_DTYPES.get(spec.get("dtype"))
        if attr is None:
            raise ProblemError("%s: %s.dtype: %r is not supported by kpilot (use one of %s)" %
                               (self.path, name, spec.get("dtype"), ", ".join(_TORCH_DTYPES)))
        dtype = getattr(torch, attr, None)
        if dtype is None:
            raise ProblemError("%s: %s.dtype: torch %s has no %s; use torch >= 2.1 for float8" %
                               (self.path, name, torch.__version__, attr))
        return dtype

    def _load_reference(self):
        module = types.ModuleType("kpilot_flashinfer_reference_%s" % self.name)
        module.__file__ = self.path
        try:
            code = compile(self.definition["reference"], "%s::reference" % self.path, "exec")
            exec(code, module.__dict__)
        except Exception:
            raise ProblemError("%s: reference: loading the source failed:\n%s" % (self.path, traceback_tail()))
        if not callable(getattr(module, "run", None)):
            raise ProblemError("%s: reference: defines no function run(...)" % self.path)
        sys.modules[module.__name__] = module
        return module

    def _shape(self, spec, axes):
        if spec.get("shape") is None:
            return None
        try:
            return tuple(int(axes[a]) for a in spec["shape"])
        except KeyError as e:
            raise ProblemError("%s: axis %s is bound neither by the definition nor by the workload" % (self.path, e))

    def _axes_of(self, workload):
        axes = dict(self.const_axes)
        rec = self.records.get(workload)
        if rec is not None:
            axes.update(rec.get("axes") or {})
        return axes

    # ---- the Problem contract ---------------------------------------------------------------

    def workloads(self):
        return list(self.records)

    def input_names(self, workload, inputs):
        return [n for n, _ in self.inputs][:len(inputs)]

    def reference_entry_points(self):
        return [(self.module, "run")]

    def make_inputs(self, workload, seed, device):
        if workload not in self.records:
            raise ProblemError("workload %r is not among the request's (%s)" % (workload, ", ".join(self.records)))
        device = torch.device(device)
        specs = self.records[workload].get("inputs") or {}
        axes = self._axes_of(workload)
        gen = torch.Generator(device=device)
        gen.manual_seed(int(seed))
        args = []
        for name, spec in self.inputs:
            given = specs.get(name) or {"type": "random"}
            dtype = self._torch_dtype(name, spec)
            shape = self._shape(spec, axes)
            kind = given.get("type", "random")
            if kind == "scalar":
                args.append(self._scalar(spec["dtype"], given.get("value")))
            elif kind == "safetensors":
                args.append(self._stored(workload, name, given, dtype, shape).to(device=device, copy=True))
            elif kind == "random":
                value = self._random(spec["dtype"], dtype, shape or (), gen, device)
                if shape is not None and name == "probs" and self.definition.get("op_type") == "sampling":
                    value = torch.softmax(value, dim=-1)  # flashinfer-bench's sampling inputs are probabilities
                args.append(value.item() if shape is None else value)
            else:
                raise ProblemError("workload %s: inputs.%s.type %r is not random, scalar or safetensors" %
                                   (workload, name, kind))
        return args

    @staticmethod
    def _scalar(dtype_name, value):
        if dtype_name == "bool":
            return bool(value)
        if dtype_name.startswith("int"):
            return int(value)
        return float(value)

    @staticmethod
    def _random(dtype_name, dtype, shape, gen, device):
        if dtype_name in ("float32", "float16", "bfloat16"):
            return torch.randn(shape, generator=gen, device=device, dtype=dtype)
        if dtype_name.startswith("float8"):
            return torch.randn(shape, generator=gen, device=device).clamp_(-2.0, 2.0).to(dtype)
        if dtype_name == "bool":
            return torch.randint(0, 2, shape, generator=gen, device=device, dtype=torch.bool)
        low, high = _INT_RANGES[dtype_name]
        return torch.randint(low, high, shape, generator=gen, device=device, dtype=dtype)

    def _stored(self, workload, name, given, dtype, shape):
        path, key = given.get("path", ""), given.get("tensor_key", "")
        if (path, key) not in self._safetensors:
            try:
                from safetensors.torch import load_file
            except ImportError:
                raise ProblemError("workload %s: inputs.%s is a safetensors file but the safetensors package is not "
                                   "installed in %s; pip install safetensors" % (workload, name, sys.executable))
            try:
                tensors = load_file(path)
            except Exception as e:
                raise ProblemError("workload %s: inputs.%s.path %s: cannot be read (%s)" % (workload, name, path, e))
            if key not in tensors:
                raise ProblemError("workload %s: inputs.%s.tensor_key %r is not in %s (it holds %s)" %
                                   (workload, name, key, path, ", ".join(sorted(tensors))))
            self._safetensors[(path, key)] = tensors[key].contiguous()
        t = self._safetensors[(path, key)]
        if shape is not None and tuple(t.shape) != shape:
            raise ProblemError("workload %s: inputs.%s: %s[%s] has shape %s, the definition wants %s" %
                               (workload, name, path, key, list(t.shape), list(shape)))
        if t.dtype != dtype:
            raise ProblemError("workload %s: inputs.%s: %s[%s] is %s, the definition wants %s" %
                               (workload, name, path, key, t.dtype, dtype))
        return t

    def output_specs(self, workload, inputs):
        """Shapes from the workload's axes, with var axes read back from the actual input tensors
        (so the specs follow the inputs a caller passes, as flashinfer-bench's get_axes_values)."""
        axes = self._axes_of(workload)
        for (name, spec), value in zip(self.inputs, inputs):
            if spec.get("shape") is not None and isinstance(value, torch.Tensor):
                for axis, size in zip(spec["shape"], value.shape):
                    axes[axis] = int(size)
        return [TensorSpec(name, self._torch_dtype(name, spec), self._shape(spec, axes) or ())
                for name, spec in self.outputs]

    def tolerance(self, workload):
        t = dict(DEFAULT_TOLERANCE)
        given = self.request.get("tolerance")
        if given:
            t.update({k: v for k, v in given.items() if v is not None})
        return t

    def element_rule(self):
        return "flashinfer"

    def reference(self, device):
        run, names, where = self._run, self.output_names, "%s: reference run" % self.path

        def reference_run(*args):
            return _as_tuple(run(*args), names, where)
        return reference_run

    # ---- candidates -------------------------------------------------------------------------

    def build_candidate(self, spec, device):
        spec = spec or {}
        kind = spec.get("kind", "reference")
        if kind == "reference":
            return self.reference(device)
        if kind == "compile":
            if not hasattr(torch, "compile"):
                raise CandidateError("torch.compile is unavailable in torch %s (it needs torch >= 2.0)" %
                                     torch.__version__)
            compiled = torch.compile(self._run)
            return lambda *args: _as_tuple(compiled(*args), self.output_names, "torch.compile(run)")
        if kind == "native":
            # Tensors in definition order, shape-null inputs as scalars, outputs preallocated
            # (poisoned and guarded during the worker's correctness calls).
            kernel = native.load_candidate_object(spec.get("object") or "")
            return native.NativeModel(self, kernel, None)
        if kind == "solution":
            return self._solution(spec.get("path") or "")
        raise CandidateError("candidate kind %r is not one a flashinfer definition takes "
                             "(reference, compile, native, solution)" % kind)

    def load_candidate(self, spec):
        if (spec or {}).get("kind") == "solution":
            self._solution(spec.get("path") or "")

    def _solution(self, path):
        """The Solution's entry point, built once (its extension compiles then)."""
        if path not in self._solutions:
            self._solutions[path] = self._build_solution(path)
        return self._solutions[path]

    def _build_solution(self, path):
        try:
            with open(path) as f:
                sol = json.load(f)
        except OSError as e:
            raise CandidateError("solution %r: cannot be read (%s); give the Solution JSON's absolute path" %
                                 (path, e.strerror))
        except ValueError as e:
            raise CandidateError("%s: not valid JSON (%s)" % (path, e))
        build = sol.get("spec") or {}
        if sol.get("definition") != self.name:
            raise CandidateError("%s: definition is %r, but the task is %r" % (path, sol.get("definition"), self.name))
        entry = build.get("entry_point", "")
        if entry.count("::") != 1:
            raise CandidateError("%s: spec.entry_point %r is not \"file::function\"" % (path, entry))
        entry_file, symbol = entry.split("::")
        sources = sol.get("sources") or []
        if entry_file not in [s.get("path") for s in sources]:
            raise CandidateError("%s: spec.entry_point names %s, which is not among the sources" % (path, entry_file))
        folder = _scratch_dir("kpilot-solution-")
        package = "kpilot_solution_%d" % (abs(hash((path, folder))) % 10**8)
        root = os.path.join(folder, package)
        for s in sources:
            rel = s.get("path", "")
            if os.path.isabs(rel) or ".." in rel.split("/"):
                raise CandidateError("%s: source path %r must be relative, without '..'" % (path, rel))
            target = os.path.join(root, rel)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "w") as f:
                f.write(s.get("content", ""))
        language = build.get("language")
        if language in ("python", "triton"):
            fn = self._import_entry(path, folder, package, entry_file, symbol)
        elif language in ("cuda", "cpp"):
            fn = self._build_extension(path, build, root, package, symbol)
        else:
            raise CandidateError("%s: spec.language %r is not supported by kpilot (python, triton, cuda, cpp)" %
                                 (path, language))
        return SolutionCall(self, fn, bool(build.get("destination_passing_style", True)), sol.get("name", path))

    def _import_entry(self, path, folder, package, entry_file, symbol):
        if not entry_file.endswith(".py"):
            raise CandidateError("%s: the entry file %s of a python/triton solution must be a .py file" %
                                 (path, entry_file))
        module_name = package + "." + entry_file[:-3].replace("/", ".")
        sys.path.insert(0, folder)
        try:
            module = importlib.import_module(module_name)
        except Exception:
            raise CandidateError("%s: importing %s failed:\n%s" % (path, entry_file, traceback_tail()))
        fn = getattr(module, symbol, None)
        if not callable(fn):
            raise CandidateError("%s: %s defines no function %s" % (path, entry_file, symbol))
        return fn

    def _build_extension(self, path, build, root, package, symbol):
        binding = build.get("binding") or "torch"
        if binding != "torch":
            raise CandidateError("%s: spec.binding %r is not supported by kpilot; use \"torch\" (a "
                                 "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) exporting %s)" % (path, binding, symbol),
                                 phase="compile")
        files = []
        for dirpath, _, names in os.walk(root):
            files += [os.path.join(dirpath, n) for n in sorted(names) if n.endswith(_CPP_SUFFIXES)]
        ldflags = []
        for dep in build.get("dependencies") or []:
            ldflags += _LINK_FLAGS.get(dep.lower(), [])
        try:
            from torch.utils.cpp_extension import load
            ext = load(name=package, sources=files, extra_include_paths=[root], extra_ldflags=ldflags,
                       build_directory=_scratch_dir("kpilot-solution-build-"), with_cuda=any(
                           f.endswith(".cu") for f in files), verbose=False)
        except Exception:
            raise CandidateError("%s: building the extension failed:\n%s" % (path, traceback_tail(30)), phase="compile")
        fn = getattr(ext, symbol, None)
        if fn is None:
            raise CandidateError("%s: the built extension exports no %s" % (path, symbol), phase="compile")
        return fn


class SolutionCall:
    """A Solution's entry point called the way flashinfer-bench calls it: inputs in definition
    order, then (destination passing) the preallocated outputs; the outputs are returned.

    With `poison` set (the worker's correctness calls under exploit checks) destination outputs
    start as NaN (or a sentinel for integers), so an output element the solution never writes
    cannot pass by holding a previous result."""

    def __init__(self, problem, fn, destination_passing, name):
        self.problem = problem
        self.fn = fn
        self.destination_passing = destination_passing
        self.name = name
        self.poison = False
        self.workload = None  # set by the worker before it calls for another workload

    def __call__(self, *args):
        if not self.destination_passing:
            return _as_tuple(self.fn(*args), self.problem.output_names, "solution %s" % self.name)
        device = next((a.device for a in args if isinstance(a, torch.Tensor)), torch.device("cpu"))
        outs = []
        for spec in self.problem.output_specs(self.workload, list(args)):
            if self.poison:
                outs.append(torch.full(spec.shape, native._poison_value(spec.dtype), dtype=spec.dtype, device=device))
            else:
                outs.append(torch.empty(spec.shape, dtype=spec.dtype, device=device))
        self.fn(*args, *outs)
        return outs[0] if len(outs) == 1 else tuple(outs)
