"""A kpilot-ABI shared object called through ctypes on torch tensors (include/kpilot/kernel.h).

The struct layouts below mirror kernel.h exactly; ABI version 1. Tensors are passed contiguous,
with their data pointers as they are: device pointers for CUDA tensors, host pointers on the CPU.
The stream is torch's current CUDA stream (NULL on the CPU), so the object's work is ordered with
torch's and timed by events on that stream.
"""

import ctypes
import os

import torch

KPILOT_ABI_VERSION = 1
KPILOT_MAX_RANK = 8

# kpilot dtype: (ABI code, task.toml name). The codes are part of the ABI.
_DTYPES = [
    ("float64", 0, "f64"),
    ("float32", 1, "f32"),
    ("float16", 2, "f16"),
    ("bfloat16", 3, "bf16"),
    ("float8_e4m3fn", 4, "fp8-e4m3"),
    ("float8_e5m2", 5, "fp8-e5m2"),
    ("int64", 6, "i64"),
    ("int32", 7, "i32"),
    ("int16", 8, "i16"),
    ("int8", 9, "i8"),
    ("uint8", 10, "u8"),
    ("bool", 11, "bool"),
]
# Only the dtypes this torch has (float8 arrived in torch 2.1).
TORCH_TO_CODE = {}
TORCH_TO_NAME = {}
NAME_TO_TORCH = {}
NAME_TO_CODE = {}
for _attr, _code, _name in _DTYPES:
    NAME_TO_CODE[_name] = _code
    _t = getattr(torch, _attr, None)
    if _t is not None:
        TORCH_TO_CODE[_t] = _code
        TORCH_TO_NAME[_t] = _name
        NAME_TO_TORCH[_name] = _t


def dtype_name(dtype):
    """The task.toml spelling of a torch dtype ("f32"); raises ValueError for others."""
    if dtype not in TORCH_TO_NAME:
        raise ValueError("dtype %s has no kpilot equivalent" % dtype)
    return TORCH_TO_NAME[dtype]


def scalar_dtype_name(value):
    """The kpilot dtype of a Python scalar argument: bool → bool, int → i64, float → f64."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "i64"
    if isinstance(value, float):
        return "f64"
    raise ValueError("argument of type %s is neither a tensor nor a scalar" % type(value).__name__)


class KpilotTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("dtype", ctypes.c_int32),
        ("rank", ctypes.c_int32),
        ("shape", ctypes.c_int64 * KPILOT_MAX_RANK),
        ("strides", ctypes.c_int64 * KPILOT_MAX_RANK),
        ("name", ctypes.c_char_p),
    ]


class _ScalarValue(ctypes.Union):
    _fields_ = [("f", ctypes.c_double), ("i", ctypes.c_int64)]


class KpilotScalar(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("dtype", ctypes.c_int32),
        ("value", _ScalarValue),
    ]


class NativeError(Exception):
    """The object cannot be loaded or a call failed (nonzero return)."""


def _tensor_struct(name, t):
    if t.dim() > KPILOT_MAX_RANK:
        raise NativeError("tensor %s has rank %d; the kpilot ABI allows at most %d" % (name, t.dim(), KPILOT_MAX_RANK))
    if t.dtype not in TORCH_TO_CODE:
        raise NativeError("tensor %s has dtype %s, which the kpilot ABI does not have" % (name, t.dtype))
    if not t.is_contiguous():
        raise NativeError("tensor %s is not contiguous" % name)
    s = KpilotTensor()
    s.data = t.data_ptr() if t.numel() > 0 else None
    s.dtype = TORCH_TO_CODE[t.dtype]
    s.rank = t.dim()
    for i in range(t.dim()):
        s.shape[i] = t.shape[i]
        s.strides[i] = t.stride(i)
    s.name = name.encode()
    return s


def _scalar_struct(name, value, dtype=None):
    dtype = dtype or scalar_dtype_name(value)
    s = KpilotScalar()
    s.name = name.encode()
    s.dtype = NAME_TO_CODE[dtype]
    if dtype in ("f64", "f32", "f16", "bf16"):
        s.value.f = float(value)
    else:
        s.value.i = int(value)
    return s


class NativeKernel:
    """One loaded object. `launch` calls kpilot_launch on named tensors and scalars."""

    def __init__(self, path):
        self.path = str(path)
        try:
            self.lib = ctypes.CDLL(self.path)
        except OSError as e:
            raise NativeError("cannot load %s: %s" % (self.path, e))
        try:
            version_fn = self.lib.kpilot_abi_version
        except AttributeError:
            raise NativeError("%s does not export kpilot_abi_version(); include <kpilot/kernel.h>" % self.path)
        version_fn.restype = ctypes.c_int
        version_fn.argtypes = []
        version = version_fn()
        if version != KPILOT_ABI_VERSION:
            raise NativeError("%s was built against kpilot ABI version %d; this kpilot speaks version %d — "
                              "rebuild it with this kpilot's include/kpilot/kernel.h" % (self.path, version,
                                                                                         KPILOT_ABI_VERSION))
        try:
            self._launch = self.lib.kpilot_launch
        except AttributeError:
            raise NativeError("%s does not define kpilot_launch" % self.path)
        self._launch.restype = ctypes.c_int
        self._launch.argtypes = [ctypes.POINTER(KpilotTensor), ctypes.c_int, ctypes.POINTER(KpilotTensor),
                                 ctypes.c_int, ctypes.POINTER(KpilotScalar), ctypes.c_int, ctypes.c_void_p]

    def launch(self, inputs, outputs, scalars=(), device=None):
        """inputs/outputs: [(name, tensor)] (contiguous); scalars: [(name, value)] or
        [(name, value, dtype_name)]. Raises NativeError when kpilot_launch returns nonzero."""
        ins = (KpilotTensor * max(len(inputs), 1))(*[_tensor_struct(n, t) for n, t in inputs])
        outs = (KpilotTensor * max(len(outputs), 1))(*[_tensor_struct(n, t) for n, t in outputs])
        scs = (KpilotScalar * max(len(scalars), 1))(*[_scalar_struct(*s) for s in scalars])
        on_cuda = any(t.is_cuda for _, t in list(inputs) + list(outputs))
        stream = torch.cuda.current_stream().cuda_stream if on_cuda else None
        rc = self._launch(ins, len(inputs), outs, len(outputs), scs, len(scalars), stream)
        if rc != 0:
            raise NativeError("kpilot_launch returned %d" % rc)


def load_candidate_object(path):
    """A NativeKernel for a request's candidate object; problem.CandidateError naming the file and
    the fix otherwise."""
    from .problem import CandidateError
    if not os.path.isfile(path):
        raise CandidateError("candidate object %r: no such file; compile the .cu with the kpilot ABI first" % path)
    try:
        return NativeKernel(path)
    except NativeError as e:
        raise CandidateError(str(e))


def _poison_value(dtype):
    if dtype.is_floating_point:
        return float("nan")
    if dtype == torch.bool:
        return True
    return -0x5A5A if dtype != torch.uint8 else 0xA5


class NativeModel:
    """The ModelNew-like wrapper of a kpilot-ABI object: passes the tensor inputs (named by the
    problem's input_names), then `params_model`'s parameters and buffers if it has any (KernelBench:
    the reference model's, state_dict order, '.' → '_'), allocates the outputs
    (destination passing) and passes non-tensor arguments as scalars.

    With `poison` set (the worker's correctness calls under exploit checks) the outputs are filled
    with NaN and surrounded by guard elements; `guards_intact` tells whether the last call left
    the guards alone. Otherwise outputs come from torch.empty, as a ModelNew's would."""

    GUARD = 256

    def __init__(self, problem, kernel, params_model):
        self.problem = problem
        self.kernel = kernel
        self.params_model = params_model
        self.workload = "default"  # set by the worker before it calls for another workload
        self.poison = False
        self.guards_intact = True
        self.params = []
        if isinstance(params_model, torch.nn.Module):
            self.params = [(k.replace(".", "_"), v) for k, v in params_model.state_dict().items()]

    def guarded_tensors(self):
        return [(n, t) for n, t in self.params]

    def _allocate(self, spec, device):
        if not self.poison:
            return torch.empty(spec.shape, dtype=spec.dtype, device=device), None
        numel = 1
        for d in spec.shape:
            numel *= d
        buf = torch.full((numel + 2 * self.GUARD,), _poison_value(spec.dtype), dtype=spec.dtype, device=device)
        return buf[self.GUARD:self.GUARD + numel].view(spec.shape), buf

    def __call__(self, *args):
        names = self.problem.input_names(self.workload, args)
        device = next((a.device for a in args if isinstance(a, torch.Tensor)), torch.device("cpu"))
        inputs = [(n, a.contiguous()) for n, a in zip(names, args) if isinstance(a, torch.Tensor)]
        inputs += [(n, t.contiguous()) for n, t in self.params]
        scalars = [(n, a) for n, a in zip(names, args) if not isinstance(a, torch.Tensor)]
        specs = self.problem.output_specs(self.workload, list(args))
        outs, bufs = [], []
        for spec in specs:
            out, buf = self._allocate(spec, device)
            outs.append(out)
            bufs.append((buf, spec))
        self.kernel.launch(inputs, [(s.name, o) for s, o in zip(specs, outs)], scalars)
        if self.poison:
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            self.guards_intact = all(self._guard_ok(buf, spec) for buf, spec in bufs)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _guard_ok(self, buf, spec):
        g = self.GUARD
        ends = torch.cat([buf[:g], buf[-g:]])
        want = torch.full_like(ends, _poison_value(spec.dtype))
        if spec.dtype.is_floating_point:
            return bool(torch.isnan(ends).all().item())
        return bool(torch.equal(ends, want))
