"""GPU tests of kpilot's Python worker (ctest label gpu): the CUDA paths — event timing with the L2
flush, the three timing modes, a kpilot-ABI .cu compiled with nvcc and bound through ctypes on
torch's stream, poisoned and guarded outputs on the device, side-stream detection, and KernelBench
mode's mean against bench/kernelbench_procedure.py.

Run with the system python3 of the GPU machine (torch 2.x + CUDA); also runs under torch 1.13 where
the features exist (torch.compile is skipped there). Exits 77 (ctest: skipped) without torch or a
CUDA device."""

import json
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
    print("test_worker_gpu: torch is not importable by %s; skipped" % sys.executable)
    sys.exit(77)
if not torch.cuda.is_available():
    print("test_worker_gpu: torch %s sees no CUDA device; skipped" % torch.__version__)
    sys.exit(77)

sys.path.insert(0, str(HERE))
from test_worker import FIX, REPO, model_new, run_request, worker  # noqa: E402

sys.path.insert(0, str(REPO / "python"))
from kpilot_torch import timing  # noqa: E402

GPU_TIMING = {"mode": "default", "warmup": 3, "min_reps": 10, "max_reps": 200, "max_seconds": 2.0,
              "target_rel_ci": 0.02}


def gpu_request(problem, candidate, **kw):
    kw.setdefault("device", "cuda:0")
    kw.setdefault("timeout_s", 300)
    return run_request(problem, candidate, **kw)


class CudaObjects:
    dir = None

    @classmethod
    def get(cls, variant):
        nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
        if cls.dir is None:
            cls.dir = tempfile.mkdtemp(prefix="kpilot_cuda_")
        out = os.path.join(cls.dir, variant + ".so")
        if not os.path.exists(out):
            defines = {"relu": [], "relu_overrun": ["-DOVERRUN"], "relu_side_stream": ["-DSIDE_STREAM"]}[variant]
            subprocess.run([nvcc, "-O2", "-shared", "-Xcompiler", "-fPIC", "-I", str(REPO / "include")] + defines +
                           [str(FIX / "native_kernels.cu"), "-o", out], check=True)
        return {"kind": "native", "object": out}


class CudaRunTest(unittest.TestCase):
    def run_gpu(self, problem, candidate, **kw):
        r, proc = worker("run", gpu_request(problem, candidate, **kw), timeout=900)
        self.assertEqual(proc.returncode, 0, proc.stderr[-2000:])
        return r

    def test_describe_reports_cuda(self):
        r, _ = worker("describe", {"version": 1, "mode": "describe", "format": "kernelbench",
                                   "problem": str(FIX / "gpu_relu_problem.py")})
        self.assertEqual(r["status"], "ok", r)
        self.assertTrue(r["cuda"])
        self.assertEqual(r["axes"], {"batch_size": 4096, "dim": 8192})

    def test_default_mode_events_with_flush(self):
        r = self.run_gpu("gpu_relu_problem.py", model_new("relu_new_ok.py"), time=True, timing=dict(GPU_TIMING))
        self.assertEqual(r["status"], "passed", r["message"])
        self.assertTrue(r["details"]["gpu"])
        t = r["timings"][0]
        self.assertIn("cuda events", t["method"])
        self.assertIn("L2 flushed", t["method"])
        self.assertEqual(len(t["host_ms"]), len(t["candidate_ms"]))
        # 4096 x 8192 f32 in and out = 256 MiB of traffic: tens of microseconds at least.
        self.assertGreater(timing.median(t["candidate_ms"]), 0.02)
        self.assertGreater(timing.median(t["baseline_ms"]), 0.02)
        side = [e for e in r["details"]["exploits"] if e["check"] == "side_stream"]
        self.assertEqual(len(side), 1)
        self.assertFalse(side[0]["found"])

    def test_waits_for_the_gpu_lock_outside_its_timeout(self):
        # Another kpilot holds cuda:0's timing lock for 12 s; the run (timeout 4 s) waits longer than
        # its timeout (12 s less the worker's start and torch's import), then passes.
        import fcntl
        import threading
        with tempfile.TemporaryDirectory() as locks:
            fd = os.open(os.path.join(locks, "kpilot-gpu-0.lock"), os.O_RDWR | os.O_CREAT)
            fcntl.flock(fd, fcntl.LOCK_EX)
            threading.Timer(12.0, lambda: os.close(fd)).start()
            r = self.run_gpu("gpu_relu_problem.py", model_new("relu_new_ok.py"), lock_dir=locks, timeout_s=4)
        self.assertEqual(r["status"], "passed", r["message"])
        self.assertGreater(r["details"]["gpu_lock_wait_s"], 4.0)

    def test_imports_before_the_gpu_lock_and_builds_models_under_it(self):
        # The fixtures' ModelNew module raises if imported with the lock held, both models raise if
        # built without it.
        with tempfile.TemporaryDirectory() as locks:
            env = {"KPILOT_TEST_LOCK_FILE": os.path.join(locks, "kpilot-gpu-0.lock")}
            r, proc = worker("run", gpu_request("lock_probe_problem.py", model_new("lock_probe_new.py"),
                                                lock_dir=locks), env_extra=env, timeout=900)
        self.assertEqual(proc.returncode, 0, proc.stderr[-2000:])
        self.assertEqual(r["status"], "passed", r["message"])

    def test_compiles_the_compile_baseline_with_the_gpu_lock_released(self):
        # One call of all (torch.compile's first, which compiles) runs without the lock.
        with tempfile.TemporaryDirectory() as locks:
            log = os.path.join(locks, "calls.log")
            env = {"KPILOT_TEST_LOCK_FILE": os.path.join(locks, "kpilot-gpu-0.lock"), "KPILOT_TEST_LOCK_LOG": log}
            r, proc = worker("run", gpu_request("lock_probe_problem.py", {"kind": "reference"}, lock_dir=locks,
                                                baseline={"kind": "compile"}, time=True,
                                                timing={"mode": "default", "warmup": 1, "min_reps": 3, "max_reps": 5,
                                                        "max_seconds": 1.0, "target_rel_ci": 0.5}),
                             env_extra=env, timeout=900)
            with open(log) as f:
                calls = f.read().split()
        self.assertEqual(proc.returncode, 0, proc.stderr[-2000:])
        self.assertEqual(r["status"], "passed", r["message"])
        self.assertEqual(calls.count("free"), 1, calls)
        self.assertGreater(calls.count("held"), 5, calls)
        d = r["details"]
        self.assertGreater(d["compile_s"], 0)
        # The split counts each second once: the compile is neither set-up nor timing.
        parts = ("import_torch_s", "candidate_setup_s", "reference_setup_s", "baseline_setup_s", "compile_s",
                 "gpu_lock_wait_s", "check_s", "timing_s")
        self.assertLessEqual(sum(d[k] for k in parts), r["wall_s"], d)

    def test_flush_buffer_is_twice_l2(self):
        clock = timing.Clock("cuda:0")
        self.assertGreaterEqual(clock.flush_buffer.numel() * 4, 2 * timing.l2_bytes(torch.device("cuda:0")))

    def test_native_cu_passes_and_is_timed(self):
        r = self.run_gpu("gpu_relu_problem.py", CudaObjects.get("relu"), time=True, timing=dict(GPU_TIMING))
        self.assertEqual(r["status"], "passed", r["message"])
        self.assertTrue(all(c["guards_intact"] for c in r["checks"]))
        self.assertGreater(timing.median(r["timings"][0]["candidate_ms"]), 0.02)

    def test_native_cu_overrun_caught_by_guards(self):
        r = self.run_gpu("gpu_relu_problem.py", CudaObjects.get("relu_overrun"))
        self.assertEqual(r["status"], "incorrect", r["message"])
        self.assertFalse(r["checks"][0]["guards_intact"])

    def test_side_stream_model_new(self):
        r = self.run_gpu("gpu_relu_problem.py", model_new("relu_new_side_stream.py"))
        self.assertEqual(r["status"], "suspicious", r["message"])
        self.assertIn("escapes the current stream", r["message"])

    def test_library_kernels_where_the_task_forbids_them(self):
        # x.clamp_min is an ATen kernel: reported and incorrect with libraries = false, passed
        # without; a native object's own kernel passes either way.
        r = self.run_gpu("gpu_relu_problem.py", model_new("relu_new_ok.py"), libraries=False)
        self.assertEqual(r["status"], "incorrect", r["message"])
        self.assertIn("libraries = false", r["message"])
        self.assertIn("at::native", r["message"])
        self.assertTrue(r["details"]["library_use"])
        r = self.run_gpu("gpu_relu_problem.py", model_new("relu_new_ok.py"))
        self.assertEqual(r["status"], "passed", r["message"])
        r = self.run_gpu("gpu_relu_problem.py", CudaObjects.get("relu"), libraries=False)
        self.assertEqual(r["status"], "passed", r["message"])
        lib = [e for e in r["details"]["exploits"] if e["check"] == "library_kernels"]
        self.assertTrue(lib and not lib[0]["found"] and lib[0]["kernels"] >= 1, lib)

    def test_side_stream_native(self):
        r = self.run_gpu("gpu_relu_problem.py", CudaObjects.get("relu_side_stream"))
        self.assertEqual(r["status"], "suspicious", r["message"])

    def test_uninitialized_output_does_not_pass(self):
        # The reference's outputs stay alive while the candidate runs, so torch.empty cannot hand
        # the candidate this trial's answer.
        for exploit_checks in (True, False):
            r = self.run_gpu("gpu_relu_problem.py", model_new("relu_new_uninitialized.py"),
                             exploit_checks=exploit_checks)
            self.assertNotEqual(r["status"], "passed", r["message"])

    def test_flashinfer_mode(self):
        r = self.run_gpu("gpu_relu_problem.py", model_new("relu_new_ok.py"), time=True, exploit_checks=False,
                         timing=dict(GPU_TIMING, mode="flashinfer"))
        self.assertEqual(r["status"], "passed", r["message"])
        self.assertEqual(len(r["timings"][0]["candidate_ms"]), 150)
        print("flashinfer mode method: " + r["timings"][0]["method"])
        self.assertGreater(timing.median(r["timings"][0]["candidate_ms"]), 0.02)

    def test_profiled_spans_cover_side_streams(self):
        # kineto spans see kernels on any stream, as flashinfer-bench's CUPTI timer does.
        clock = timing.Clock("cuda:0")
        x = torch.randn(4096, 8192, device="cuda")
        side = torch.cuda.Stream()

        def call():
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                y = x
                for _ in range(10):
                    y = y * 1.0
            return y

        spans = timing.profiled_spans(clock, call, 5)
        if spans is None:
            self.skipTest("this torch's profiler delivers no GPU-side record_function spans")
        self.assertEqual(len(spans), 5)
        self.assertGreater(min(spans), 0.1)  # ten 128 MiB passes

    def test_kernelbench_mode_mean_agrees_with_independent_procedure(self):
        r = self.run_gpu("gpu_relu_problem.py", model_new("relu_new_ok.py"), time=True, exploit_checks=False,
                         seeds=[1], timing=dict(GPU_TIMING, mode="kernelbench"))
        self.assertEqual(r["status"], "passed", r["message"])
        t = r["timings"][0]
        self.assertEqual(t["statistic"], "mean")
        self.assertEqual(len(t["candidate_ms"]), 100)
        self.assertIn("256 MiB", t["method"])
        ours = sum(t["candidate_ms"]) / len(t["candidate_ms"])
        p = subprocess.run([sys.executable, str(REPO / "bench" / "kernelbench_procedure.py"),
                            str(FIX / "gpu_relu_problem.py"), "--model-new", str(FIX / "relu_new_ok.py"),
                            "--seed", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        theirs = json.loads(p.stdout.splitlines()[-1])["mean_ms"]
        print("kernelbench mode: worker mean %.4f ms, independent procedure %.4f ms" % (ours, theirs))
        self.assertLess(abs(ours - theirs) / theirs, 0.15)

    def test_compile_candidate(self):
        if not hasattr(torch, "compile"):
            self.skipTest("torch.compile needs torch >= 2.0")
        r = self.run_gpu("gpu_relu_problem.py", {"kind": "compile"})
        self.assertEqual(r["status"], "passed", r["message"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
