"""GPU tests of the flashinfer-bench adapter (ctest label gpu) on the team's definitions in
examples/flashinfer: the native kpilot .cu candidates (nvcc, bound through ctypes on torch's
stream), the python and cuda Solutions (the cuda ones built by torch.utils.cpp_extension), and the
reference as the candidate, each with flashinfer's timing procedure.

Run with the system python3 of the GPU machine (torch 2.x + CUDA). Exits 77 (ctest: skipped)
without torch or a CUDA device."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
try:
    import torch
except ImportError:
    print("test_flashinfer_gpu: torch is not importable by %s; skipped" % sys.executable)
    sys.exit(77)
if not torch.cuda.is_available():
    print("test_flashinfer_gpu: torch %s sees no CUDA device; skipped" % torch.__version__)
    sys.exit(77)

sys.path.insert(0, str(HERE))
from test_flashinfer import EXAMPLES, REPO, RMSNORM, SILU, SOFTMAX, records, request, solution_path, worker  # noqa: E402

GPU_TIMING = {"mode": "flashinfer", "warmup": 10, "min_reps": 50, "max_reps": 50, "max_seconds": 5.0,
              "target_rel_ci": 0.02}
DEFINITIONS = (RMSNORM, SILU, SOFTMAX)


def gpu_request(which, candidate, **kw):
    kw.setdefault("device", "cuda:0")
    kw.setdefault("timeout_s", 600)
    kw.setdefault("time", True)
    kw.setdefault("timing", dict(GPU_TIMING))
    return request(which, candidate, **kw)


class NativeObjects:
    dir = None

    @classmethod
    def get(cls, name):
        nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
        if cls.dir is None:
            cls.dir = tempfile.mkdtemp(prefix="kpilot_fi_cuda_")
        out = os.path.join(cls.dir, name + ".so")
        if not os.path.exists(out):
            subprocess.run([nvcc, "-O3", "-arch=native", "-shared", "-Xcompiler", "-fPIC", "-I", str(REPO / "include"),
                            str(EXAMPLES / "native" / (name + ".cu")), "-o", out], check=True)
        return {"kind": "native", "object": out}


def tearDownModule():
    if NativeObjects.dir:
        shutil.rmtree(NativeObjects.dir, ignore_errors=True)


class FlashInferGpuTest(unittest.TestCase):
    def assertPassedEverywhere(self, reply, which):
        self.assertEqual(reply["status"], "passed", reply["message"])
        names = [r["name"] for r in records(which)]
        self.assertEqual(sorted({c["workload"] for c in reply["checks"]}), sorted(names))
        self.assertEqual([t["workload"] for t in reply["timings"]], names)
        self.assertTrue(reply["details"]["gpu"])

    def test_reference_as_candidate(self):
        for which in DEFINITIONS:
            with self.subTest(definition=which[1]):
                self.assertPassedEverywhere(worker(gpu_request(which, {"kind": "reference"}), 900), which)

    def test_native_candidates(self):
        for which in DEFINITIONS:
            with self.subTest(definition=which[1]):
                self.assertPassedEverywhere(worker(gpu_request(which, NativeObjects.get(which[1])), 900), which)

    def test_python_solutions(self):
        for which in DEFINITIONS:
            with self.subTest(definition=which[1]):
                path = solution_path(which, "torch")
                self.assertPassedEverywhere(worker(gpu_request(which, {"kind": "solution", "path": str(path)}), 900), which)

    def test_cuda_solutions(self):
        for which in DEFINITIONS:
            with self.subTest(definition=which[1]):
                paths = [p for p in solution_path(which, "x").parent.glob("*.json") if "cuda" in p.name]
                self.assertEqual(len(paths), 1)
                reply = worker(gpu_request(which, {"kind": "solution", "path": str(paths[0])}), 900)
                self.assertPassedEverywhere(reply, which)
                self.assertGreater(reply["details"]["candidate_setup_s"], 0)


if __name__ == "__main__":
    unittest.main()
