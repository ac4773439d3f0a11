"""Tests of the flashinfer-bench adapter (python/kpilot_torch/flashinfer.py) on the CPU, on the
team's definitions in examples/flashinfer: inputs made from workload records (random, scalar,
safetensors), the reference as the candidate, the python solutions, a host kpilot-ABI .so built
here with g++, and the failures a candidate or a request can have. Run by ctest with
.venv-torch/bin/python (torch 1.13 CPU); plain unittest: `python tests/python/test_flashinfer.py`."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "flashinfer"
sys.path.insert(0, str(REPO / "python"))

import torch  # noqa: E402

from kpilot_torch.flashinfer import FlashInferProblem  # noqa: E402
from kpilot_torch.problem import CandidateError, ProblemError  # noqa: E402

RMSNORM = ("rmsnorm", "rmsnorm_h512")
SILU = ("activation", "silu_and_mul_d1024")
SOFTMAX = ("softmax", "softmax_temperature_v4096")
QUICK_TIMING = {"mode": "flashinfer", "warmup": 1, "min_reps": 2, "max_reps": 3, "max_seconds": 0.3,
                "target_rel_ci": 0.5}


def definition_path(which):
    op, name = which
    return EXAMPLES / "definitions" / op / (name + ".json")


def records(which):
    """The workload records as kpilot's loader passes them: the workload of each workload trace,
    safetensors paths made absolute against the dataset root, "name" = the uuid's first 8 characters."""
    op, name = which
    out = []
    with open(EXAMPLES / "workloads" / op / (name + ".jsonl")) as f:
        for line in f:
            if not line.strip():
                continue
            rec = json.loads(line)["workload"]
            for spec in rec["inputs"].values():
                if spec["type"] == "safetensors":
                    spec["path"] = str(EXAMPLES / spec["path"])
            rec["name"] = rec["uuid"][:8]
            out.append(rec)
    return out


def solution_path(which, suffix):
    op, name = which
    return EXAMPLES / "solutions" / op / name / ("%s_%s.json" % (name, suffix))


def request(which, candidate, **kw):
    req = {"version": 1, "mode": "run", "format": "flashinfer", "problem": str(definition_path(which)),
           "workloads": records(which), "candidate": candidate, "seeds": [1, 2], "time": False,
           "timing": dict(QUICK_TIMING), "device": "cpu", "timeout_s": 120}
    req.update(kw)
    return req


def worker(req, timeout=300):
    """Runs the worker on `req` in a subprocess; returns its reply."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "request.json")
        with open(path, "w") as f:
            json.dump(req, f)
        env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
        proc = subprocess.run([sys.executable, "-m", "kpilot_torch.worker", "run", path], cwd=tmp, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout, text=True)
    lines = [l for l in proc.stdout.splitlines() if l.strip()]
    if not lines:
        raise AssertionError("worker printed nothing; rc %d, stderr:\n%s" % (proc.returncode, proc.stderr[-3000:]))
    return json.loads(lines[-1])


# Host kpilot-ABI objects for softmax_temperature_v4096: the right one, one that ignores the
# temperature, and one that leaves the last row unwritten.
SOFTMAX_HOST = r"""
#include <kpilot/kernel.h>
#include <math.h>
KPILOT_EXPORT int kpilot_launch(const kpilot_tensor* in, int nin, const kpilot_tensor* out, int nout,
                                const kpilot_scalar* sc, int nsc, void* stream) {
  if (nin != 1 || nout != 1 || nsc != 1 || in[0].dtype != KPILOT_F32 || in[0].rank != 2) return 1;
  const float* x = (const float*)in[0].data;
  float* y = (float*)out[0].data;
  double t = VARIANT == 1 ? 1.0 : sc[0].value.f;
  int64_t rows = in[0].shape[0] - (VARIANT == 2 ? 1 : 0), cols = in[0].shape[1];
  for (int64_t r = 0; r < rows; ++r) {
    double m = -INFINITY, s = 0;
    for (int64_t c = 0; c < cols; ++c) m = fmax(m, x[r * cols + c] / t);
    for (int64_t c = 0; c < cols; ++c) s += exp(x[r * cols + c] / t - m);
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = (float)(exp(x[r * cols + c] / t - m) / s);
  }
  return 0;
}
"""


class HostObjects:
    dir = None
    paths = {}

    @classmethod
    def get(cls, variant):
        if variant not in cls.paths:
            if cls.dir is None:
                cls.dir = tempfile.mkdtemp(prefix="kpilot-fi-test-")
            src = os.path.join(cls.dir, "softmax.cpp")
            with open(src, "w") as f:
                f.write(SOFTMAX_HOST)
            so = os.path.join(cls.dir, "softmax_%d.so" % variant)
            subprocess.run(["g++", "-O2", "-shared", "-fPIC", "-DVARIANT=%d" % variant, "-I", str(REPO / "include"),
                            "-o", so, src], check=True)
            cls.paths[variant] = so
        return cls.paths[variant]

    @classmethod
    def cleanup(cls):
        if cls.dir:
            shutil.rmtree(cls.dir, ignore_errors=True)


def tearDownModule():
    HostObjects.cleanup()


class ProblemTest(unittest.TestCase):
    """FlashInferProblem in-process: inputs, outputs, tolerance, the reference."""

    def test_inputs_follow_the_records(self):
        p = FlashInferProblem(request(SOFTMAX, {"kind": "reference"}))
        self.assertEqual(p.workloads(), ["2c8e5a1d", "e6a13f9b", "48d0b2e6", "9b4c7e2f"])
        logits, temperature = p.make_inputs("e6a13f9b", 1, "cpu")
        self.assertEqual(tuple(logits.shape), (16, 4096))
        self.assertEqual(logits.dtype, torch.float32)
        self.assertEqual(temperature, 0.7)
        self.assertEqual(p.input_names("e6a13f9b", [logits, temperature]), ["logits", "temperature"])
        again, _ = p.make_inputs("e6a13f9b", 1, "cpu")
        other, _ = p.make_inputs("e6a13f9b", 2, "cpu")
        self.assertTrue(torch.equal(logits, again), "same seed, same inputs")
        self.assertFalse(torch.equal(logits, other), "another seed, other inputs")

    def test_safetensors_inputs_are_the_stored_tensors_copied_per_call(self):
        p = FlashInferProblem(request(RMSNORM, {"kind": "reference"}))
        x, w = p.make_inputs("5c1e2a90", 1, "cpu")
        from safetensors.torch import load_file
        stored = load_file(str(EXAMPLES / "blob/workloads/rmsnorm/rmsnorm_h512/5c1e2a90.safetensors"))
        self.assertEqual(x.dtype, torch.bfloat16)
        self.assertTrue(torch.equal(x, stored["hidden_states"]))
        self.assertTrue(torch.equal(w, stored["weight"]))
        x.zero_()
        x2, _ = p.make_inputs("5c1e2a90", 1, "cpu")
        self.assertTrue(torch.equal(x2, stored["hidden_states"]), "a candidate writing its input changes no later call")

    def test_output_specs_and_the_flashinfer_rule(self):
        p = FlashInferProblem(request(SILU, {"kind": "reference"}))
        args = p.make_inputs("c92b5e17", 1, "cpu")
        (spec,) = p.output_specs("c92b5e17", args)
        self.assertEqual((spec.name, spec.dtype, spec.shape), ("out", torch.float16, (64, 1024)))
        self.assertEqual(p.element_rule(), "flashinfer")
        self.assertEqual(p.tolerance("c92b5e17"), {"atol": 1e-2, "rtol": 1e-2, "matched_ratio": 1.0})
        out = p.reference("cpu")(*args)
        self.assertEqual(tuple(out.shape), (64, 1024))
        x = args[0].float()
        expected = (torch.nn.functional.silu(x[:, :1024]) * x[:, 1024:]).half()
        self.assertTrue(torch.equal(out, expected))

    def test_request_and_definition_errors(self):
        with self.assertRaisesRegex(ProblemError, "cannot read the definition"):
            FlashInferProblem({"problem": "/nonexistent/d.json", "workloads": records(SILU)})
        with self.assertRaisesRegex(ProblemError, "no workloads"):
            FlashInferProblem({"problem": str(definition_path(SILU)), "workloads": []})
        req = request(RMSNORM, {"kind": "reference"})
        req["workloads"][3]["inputs"]["weight"]["tensor_key"] = "hidden_states"  # a [4, 512] tensor
        p = FlashInferProblem(req)
        with self.assertRaisesRegex(ProblemError, r"inputs.weight: .* has shape \[4, 512\], the definition wants \[512\]"):
            p.make_inputs("5c1e2a90", 1, "cpu")

    def test_candidate_errors(self):
        p = FlashInferProblem(request(SILU, {"kind": "reference"}))
        with self.assertRaisesRegex(CandidateError, "definition is 'rmsnorm_h512', but the task is 'silu_and_mul_d1024'"):
            p.build_candidate({"kind": "solution", "path": str(solution_path(RMSNORM, "torch"))}, "cpu")
        with tempfile.TemporaryDirectory() as tmp:
            sol = json.loads(solution_path(SILU, "cuda_half2").read_text())
            sol["spec"]["binding"] = "tvm-ffi"
            path = os.path.join(tmp, "tvm.json")
            with open(path, "w") as f:
                json.dump(sol, f)
            with self.assertRaises(CandidateError) as e:
                p.build_candidate({"kind": "solution", "path": path}, "cpu")
            self.assertEqual(e.exception.phase, "compile")
            self.assertIn("binding 'tvm-ffi' is not supported", str(e.exception))
        with self.assertRaisesRegex(CandidateError, "no such file"):
            p.build_candidate({"kind": "native", "object": "/nonexistent.so"}, "cpu")


class DatasetTest(unittest.TestCase):
    def test_flashinfer_bench_loads_the_examples_as_a_trace_set(self):
        try:
            from flashinfer_bench.data import TraceSet
        except ImportError:
            self.skipTest("flashinfer-bench is not installed in %s" % sys.executable)
        ts = TraceSet.from_path(str(EXAMPLES))
        for which in (RMSNORM, SILU, SOFTMAX):
            name = which[1]
            self.assertIn(name, ts.definitions)
            self.assertGreaterEqual(len(ts.workloads[name]), 3)
            languages = {s.spec.language.value for s in ts.solutions[name]}
            self.assertTrue({"python", "cuda"} <= languages, languages)
            self.assertTrue((EXAMPLES / "native" / (name + ".cu")).is_file())


class WorkerTest(unittest.TestCase):
    """The worker's run on format "flashinfer", end to end on the CPU."""

    def assertPassed(self, reply, workloads):
        self.assertEqual(reply["status"], "passed", reply["message"])
        self.assertEqual(reply["details"]["element_rule"], "flashinfer")
        self.assertEqual(sorted({c["workload"] for c in reply["checks"]}), sorted(workloads))
        self.assertTrue(all(c["ok"] for c in reply["checks"]))

    def test_reference_as_candidate_on_every_definition(self):
        for which in (RMSNORM, SILU, SOFTMAX):
            with self.subTest(definition=which[1]):
                reply = worker(request(which, {"kind": "reference"}))
                self.assertPassed(reply, [r["name"] for r in records(which)])
                for c in reply["checks"]:
                    self.assertEqual(c["max_abs_error"], 0)

    def test_python_solutions_pass_and_are_timed(self):
        for which in (RMSNORM, SILU, SOFTMAX):
            with self.subTest(definition=which[1]):
                path = solution_path(which, "torch")
                reply = worker(request(which, {"kind": "solution", "path": str(path)}, time=True,
                                       workloads=records(which)[:2]))
                self.assertPassed(reply, [r["name"] for r in records(which)[:2]])
                self.assertEqual([t["workload"] for t in reply["timings"]], [r["name"] for r in records(which)[:2]])

    def test_solution_that_leaves_its_destination_unwritten_is_incorrect(self):
        sol = json.loads(solution_path(SOFTMAX, "torch").read_text())
        sol["sources"][0]["content"] = "def run(logits, temperature, probs):\n    probs[:-1].copy_(logits[:-1].softmax(-1))\n"
        sol["name"] = "lazy"
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "lazy.json")
            with open(path, "w") as f:
                json.dump(sol, f)
            reply = worker(request(SOFTMAX, {"kind": "solution", "path": path}, workloads=records(SOFTMAX)[1:2]))
        self.assertEqual(reply["status"], "incorrect", reply["message"])

    def test_host_native_object(self):
        reply = worker(request(SOFTMAX, {"kind": "native", "object": HostObjects.get(0)}, time=True))
        self.assertPassed(reply, [r["name"] for r in records(SOFTMAX)])
        self.assertEqual(len(reply["timings"]), 4)

    def test_host_native_object_ignoring_the_scalar_is_incorrect(self):
        # The stored logits (scaled by 10) at temperature 0.25 give peaked rows: errors far beyond 1e-2.
        reply = worker(request(SOFTMAX, {"kind": "native", "object": HostObjects.get(1)}, workloads=records(SOFTMAX)[3:4]))
        self.assertEqual(reply["status"], "incorrect", reply["message"])
        self.assertIn("9b4c7e2f", reply["message"])

    def test_host_native_object_leaving_a_row_unwritten_is_incorrect(self):
        reply = worker(request(SOFTMAX, {"kind": "native", "object": HostObjects.get(2)}, workloads=records(SOFTMAX)[1:2]))
        self.assertEqual(reply["status"], "incorrect", reply["message"])


if __name__ == "__main__":
    unittest.main()
