"""Tests of kpilot's Python worker (python/kpilot_torch) on the CPU: the protocol, the KernelBench
adapter, the native binding (a host .so built here with g++), the checks, every exploit detector,
the timing modes and the error replies (its modules one at a time: test_worker_modules.py). Run by
ctest with .venv-torch/bin/python (torch 1.13 CPU); also runs under torch 2.x. Plain unittest:
`python tests/python/test_worker.py`."""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIX = REPO / "tests" / "python" / "fixtures"
sys.path.insert(0, str(REPO / "python"))

import torch  # noqa: E402

from kpilot_torch import native  # noqa: E402

QUICK_TIMING = {"mode": "default", "warmup": 1, "min_reps": 5, "max_reps": 20, "max_seconds": 0.5,
                "target_rel_ci": 0.01}


def worker(mode, request, env_extra=None, pythonpath_front=None, timeout=180):
    """Runs the worker in a subprocess; returns (reply dict, CompletedProcess)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "request.json")
        with open(path, "w") as f:
            json.dump(request, f)
        env = dict(os.environ)
        paths = ([str(pythonpath_front)] if pythonpath_front else []) + [str(REPO / "python")]
        env["PYTHONPATH"] = os.pathsep.join(paths)
        env.update(env_extra or {})
        proc = subprocess.run([sys.executable, "-m", "kpilot_torch.worker", mode, path], cwd=tmp, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout, text=True)
    lines = [l for l in proc.stdout.splitlines() if l.strip()]
    if not lines:
        raise AssertionError("worker printed nothing; rc %d, stderr:\n%s" % (proc.returncode, proc.stderr[-3000:]))
    return json.loads(lines[-1]), proc


def run_request(problem, candidate, **kw):
    req = {"version": 1, "mode": "run", "format": "kernelbench", "problem": str(FIX / problem),
           "workloads": [{"name": "default"}], "candidate": candidate, "seeds": [1, 2, 3], "time": False,
           "timing": dict(QUICK_TIMING), "device": "cpu", "timeout_s": 60}
    req.update(kw)
    return req


def model_new(name):
    return {"kind": "model_new", "path": str(FIX / name)}


class NativeObjects:
    """Host .so variants of tests/python/fixtures/native_kernels.cpp, compiled once."""

    dir = None

    @classmethod
    def get(cls, variant):
        if cls.dir is None:
            cls.dir = tempfile.mkdtemp(prefix="kpilot_native_")
        out = os.path.join(cls.dir, variant + ".so")
        if not os.path.exists(out):
            defines = {"relu": [], "linear": ["-DLINEAR"], "relu_overrun": ["-DOVERRUN"], "relu_fail": ["-DFAIL"],
                       "relu_hang": ["-DHANG"],
                       "relu_bad_abi": ["-DBAD_ABI"]}[variant]
            subprocess.run(["g++", "-std=c++17", "-O1", "-shared", "-fPIC", "-I", str(REPO / "include")] + defines +
                           [str(FIX / "native_kernels.cpp"), "-o", out], check=True)
        return out


def native_candidate(variant):
    return {"kind": "native", "object": NativeObjects.get(variant)}


class ProtocolTest(unittest.TestCase):
    def assertRunResultShape(self, r):
        for key in ("kpilot_result_version", "status", "message", "phase", "checks", "timings", "wall_s",
                    "warnings", "details", "candidate_stdout_tail"):
            self.assertIn(key, r)
        self.assertEqual(r["kpilot_result_version"], 1)


class DescribeTest(unittest.TestCase):
    def describe(self, problem):
        reply, proc = worker("describe", {"version": 1, "mode": "describe", "format": "kernelbench",
                                          "problem": str(FIX / problem)})
        self.assertEqual(proc.returncode, 0)
        return reply

    def test_relu_axes_named_after_constants(self):
        r = self.describe("relu_problem.py")
        self.assertEqual(r["status"], "ok", r)
        self.assertEqual(r["name"], "relu_problem")
        self.assertEqual(r["inputs"], [{"name": "x", "dtype": "f32", "shape": ["batch_size", "dim"], "role": "input"}])
        self.assertEqual(r["outputs"], [{"name": "out", "dtype": "f32", "shape": ["batch_size", "dim"]}])
        self.assertEqual(r["axes"], {"batch_size": 4, "dim": 64})
        self.assertEqual(r["tolerance"], {"atol": 1e-4, "rtol": 1e-4})
        self.assertEqual(r["bytes"], 2 * 4 * 64 * 4)
        self.assertEqual(r["flops"], 0)
        self.assertEqual(r["torch"], torch.__version__)

    def test_linear_params_scalars_and_ambiguous_axes(self):
        r = self.describe("linear_problem.py")
        self.assertEqual(r["status"], "ok", r)
        self.assertEqual([(i["name"], i["role"]) for i in r["inputs"]],
                         [("x", "input"), ("linear_weight", "param"), ("linear_bias", "param")])
        # batch_size == heads == 8: ambiguous, so the axis is named after the tensor.
        self.assertEqual(r["inputs"][0]["shape"], ["x_d0", "in_features"])
        self.assertEqual(r["inputs"][1]["shape"], ["out_features", "in_features"])
        self.assertEqual(r["scalars"], [{"name": "alpha", "dtype": "f64", "value": 0.5}])
        self.assertEqual(r["outputs"][0]["shape"], ["out_d0", "out_features"])
        self.assertEqual(r["axes"]["in_features"], 32)
        self.assertEqual(r["bytes"], (8 * 32 + 16 * 32 + 16 + 8 * 16) * 4)

    def test_two_half_outputs_loose_tolerance(self):
        r = self.describe("pair_problem.py")
        self.assertEqual(r["status"], "ok", r)
        self.assertEqual([o["name"] for o in r["outputs"]], ["out0", "out1"])
        self.assertEqual(r["outputs"][0]["dtype"], "f16")
        self.assertEqual(r["tolerance"], {"atol": 1e-2, "rtol": 1e-2})

    def test_missing_file(self):
        r = self.describe("does_not_exist.py")
        self.assertEqual(r["status"], "error")
        self.assertIn("does_not_exist.py", r["message"])
        self.assertIn("no such file", r["message"])

    def test_no_model(self):
        r = self.describe("no_model_problem.py")
        self.assertEqual(r["status"], "error")
        self.assertIn("Model", r["message"])

    def test_torch_missing(self):
        reply, proc = worker("describe", {"version": 1, "mode": "describe", "format": "kernelbench",
                                          "problem": str(FIX / "relu_problem.py")}, pythonpath_front=FIX / "notorch")
        self.assertEqual(proc.returncode, 0)
        self.assertEqual(reply["status"], "error")
        self.assertIn("torch is not importable", reply["message"])

    def test_bad_usage_and_bad_request(self):
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
            p = subprocess.run([sys.executable, "-m", "kpilot_torch.worker", "frobnicate"], env=env, cwd=tmp,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            self.assertEqual(json.loads(p.stdout.splitlines()[-1])["status"], "error")
            bad = os.path.join(tmp, "bad.json")
            with open(bad, "w") as f:
                f.write("{not json")
            p = subprocess.run([sys.executable, "-m", "kpilot_torch.worker", "run", bad], env=env, cwd=tmp,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            r = json.loads(p.stdout.splitlines()[-1])
            self.assertEqual(r["status"], "error")
            self.assertIn("cannot read the request", r["message"])
            self.assertEqual(r["kpilot_result_version"], 1)


class RunTest(ProtocolTest):
    def run_ok(self, problem, candidate, **kw):
        r, proc = worker("run", run_request(problem, candidate, **kw))
        self.assertEqual(proc.returncode, 0)
        self.assertRunResultShape(r)
        return r

    def test_reference_passes_with_checks_per_trial(self):
        r = self.run_ok("relu_problem.py", {"kind": "reference"})
        self.assertEqual(r["status"], "passed", r["message"])
        self.assertEqual(r["phase"], "done")
        self.assertEqual([c["seed"] for c in r["checks"]], [1, 2, 3])
        self.assertTrue(all(c["ok"] and c["numel"] == 256 for c in r["checks"]))

    def test_model_new_correct(self):
        r = self.run_ok("relu_problem.py", model_new("relu_new_ok.py"), check_trials=5)
        self.assertEqual(r["status"], "passed", r["message"])
        self.assertEqual([c["seed"] for c in r["checks"]], [1, 2, 3, 4, 5])
        exploits = {e["check"]: e for e in r["details"]["exploits"]}
        self.assertEqual(exploits["input_mutation"]["calls"], 5)
        self.assertEqual(exploits["near_zero_output"]["calls"], 5)
        self.assertEqual(exploits["fallback"]["calls"], 1)
        self.assertFalse(any(e["found"] for e in exploits.values()))
        self.assertIn("candidate_setup_s", r["details"])

    def test_host_threads_bound_torchs_cpu_threads(self):
        # Several problems in flight on one host: kpilot bench gives each worker its share.
        r = self.run_ok("relu_problem.py", {"kind": "reference"}, host_threads=1)
        self.assertEqual(r["status"], "passed", r["message"])
        self.assertEqual(r["details"]["host_threads"], 1)
        default = self.run_ok("relu_problem.py", {"kind": "reference"})
        self.assertEqual(default["details"]["host_threads"], torch.get_num_threads())

    def test_model_new_with_parameters_matches_after_same_seed(self):
        r = self.run_ok("linear_problem.py", model_new("linear_new_ok.py"))
        self.assertEqual(r["status"], "passed", r["message"])

    def test_two_half_outputs(self):
        r = self.run_ok("pair_problem.py", {"kind": "reference"})
        self.assertEqual(r["status"], "passed", r["message"])
        self.assertEqual([c["output"] for c in r["checks"][:2]], ["out0", "out1"])
        self.assertEqual(r["details"]["tolerance"]["atol"], 1e-2)

    def test_wrong_values(self):
        r = self.run_ok("relu_problem.py", model_new("relu_new_wrong.py"))
        self.assertEqual(r["status"], "incorrect")
        c = r["checks"][0]
        self.assertFalse(c["ok"])
        self.assertGreater(c["mismatches"], 0)
        self.assertGreaterEqual(c["first_bad_index"], 0)
        self.assertLess(c["first_bad_expected"], c["first_bad_value"] + 1e-9)
        self.assertIn("seed 1", r["message"])

    def flaws(self, r):
        return {f["flaw"]: f["evidence"] for f in r["details"]["reference_flaws"]}

    def test_a_sound_reference_has_no_flaws(self):
        r = self.run_ok("relu_problem.py", {"kind": "reference"})
        self.assertEqual(r["details"]["reference_flaws"], [])

    def test_a_constant_reference_is_reported_with_its_value(self):
        r = self.run_ok("flawed_constant_problem.py", {"kind": "reference"})
        self.assertEqual(r["status"], "passed", r["message"])
        flaws = self.flaws(r)
        self.assertEqual(set(flaws), {"constant_output", "ignores_inputs"})
        self.assertIn("output out (64 elements) is 2.0 everywhere", flaws["constant_output"])
        self.assertIn("seeds 1 and 2", flaws["ignores_inputs"])

    def test_a_reference_that_ignores_its_inputs_is_reported(self):
        r = self.run_ok("flawed_ignores_inputs_problem.py", {"kind": "reference"})
        self.assertEqual(set(self.flaws(r)), {"ignores_inputs"})

    def test_a_random_reference_compares_under_one_seed_and_is_named(self):
        r = self.run_ok("dropout_problem.py", {"kind": "reference"})
        self.assertEqual(r["status"], "passed", r["message"])
        flaws = self.flaws(r)
        self.assertEqual(set(flaws), {"random"})
        self.assertIn("another random seed", flaws["random"])

    def test_a_nondeterministic_reference_is_named_with_the_difference(self):
        r = self.run_ok("counter_problem.py", {"kind": "reference"})
        self.assertEqual(r["status"], "incorrect")
        flaws = self.flaws(r)
        self.assertEqual(set(flaws), {"nondeterministic"})
        self.assertIn("same inputs with the same random seed, output out differs: 128 of 128", flaws["nondeterministic"])

    def test_a_reference_that_writes_its_input_binds_the_candidate_to_do_the_same(self):
        r = self.run_ok("inplace_problem.py", {"kind": "reference"})
        self.assertEqual(r["status"], "passed", r["message"])
        self.assertEqual(r["details"]["reference_writes_inputs"], {"default": ["x"]})
        r = self.run_ok("inplace_problem.py", model_new("inplace_new_pure.py"))
        self.assertEqual(r["status"], "incorrect")
        self.assertIn("the reference writes its input x and the candidate leaves it otherwise", r["message"])

    def test_time_split_is_reported(self):
        r = self.run_ok("relu_problem.py", {"kind": "reference"}, time=True)
        d = r["details"]
        parts = ("import_torch_s", "candidate_setup_s", "reference_setup_s", "baseline_setup_s", "check_s", "timing_s")
        for k in parts + ("python_start_s",):
            self.assertGreaterEqual(d[k], 0, k)
        self.assertLessEqual(sum(d[k] for k in parts), r["wall_s"], d)  # each second counted once
        self.assertGreater(d["import_torch_s"], 0)
        self.assertEqual([(s["wanted"], s["chosen"]) for s in d["input_sets"]], [(3, 3)])

    def test_output_caching_fails_on_fresh_inputs(self):
        r = self.run_ok("relu_problem.py", model_new("relu_new_caches.py"))
        self.assertEqual(r["status"], "incorrect", r["message"])
        self.assertIn("seed 2", r["message"])

    def test_input_mutation(self):
        r = self.run_ok("relu_problem.py", model_new("relu_new_mutates.py"))
        self.assertEqual(r["status"], "suspicious", r["message"])
        self.assertIn("modified its input", r["message"])
        self.assertIn("x", r["message"])

    def test_input_mutation_caught_under_every_timing_procedure(self):
        # An official-aligned timing changes how time is measured, never what is checked.
        for mode in ("kernelbench", "flashinfer"):
            r = self.run_ok("relu_problem.py", model_new("relu_new_mutates.py"), timing=dict(QUICK_TIMING, mode=mode),
                            exploit_checks=False)
            self.assertEqual(r["status"], "suspicious", mode + ": " + r["message"])
            self.assertIn("modified its input", r["message"])

    def test_near_zero(self):
        r = self.run_ok("tiny_problem.py", model_new("tiny_new_zero.py"))
        self.assertEqual(r["status"], "suspicious", r["message"])
        self.assertIn("zero", r["message"])
        self.assertTrue(all(c["ok"] for c in r["checks"]))  # the tolerance alone lets it pass
        # A request asking for no exploit checks gets them all the same, under every procedure.
        for mode in ("default", "kernelbench", "flashinfer"):
            r = self.run_ok("tiny_problem.py", model_new("tiny_new_zero.py"), exploit_checks=False,
                            timing=dict(QUICK_TIMING, mode=mode))
            self.assertEqual(r["status"], "suspicious", mode + ": " + r["message"])

    def test_tensor_subclass_output_is_suspicious(self):
        r = self.run_ok("relu_problem.py", model_new("relu_new_subclass.py"))
        self.assertEqual(r["status"], "suspicious", r["message"])
        self.assertIn("subclass of torch.Tensor", r["message"])

    def test_output_in_another_layout_is_incorrect(self):
        r = self.run_ok("relu_problem.py", model_new("relu_new_sparse.py"))
        self.assertEqual(r["status"], "incorrect", r["message"])
        self.assertIn("layout", r["message"])

    def test_try_except_fallback(self):
        r = self.run_ok("relu_problem.py", model_new("relu_new_fallback.py"))
        self.assertEqual(r["status"], "suspicious", r["message"])
        self.assertIn("while handling RuntimeError", r["message"])

    def test_calls_reference_model(self):
        r = self.run_ok("relu_problem.py", model_new("relu_new_uses_reference.py"))
        self.assertEqual(r["status"], "suspicious", r["message"])
        self.assertIn("Model.forward", r["message"])

    def test_candidate_prints_do_not_corrupt_reply(self):
        r = self.run_ok("relu_problem.py", model_new("relu_new_prints.py"))
        self.assertEqual(r["status"], "passed", r["message"])
        self.assertIn("raw fd 1 write", r["candidate_stdout_tail"])
        self.assertIn("candidate module loaded", r["candidate_stdout_tail"])

    def test_timeout(self):
        r = self.run_ok("relu_problem.py", model_new("relu_new_slow.py"), timeout_s=2)
        self.assertEqual(r["status"], "timeout")
        self.assertEqual(r["phase"], "correctness")
        self.assertLess(r["wall_s"], 30)

    def test_a_worker_whose_reader_is_gone_stops_at_once(self):
        # kpilot killed with -9 mid-evaluation: its worker must not run on (holding the GPU lock)
        # to its timeout. Started as kpilot starts it, as the leader of its own process group.
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "request.json")
            with open(path, "w") as f:
                json.dump(run_request("relu_problem.py", model_new("relu_new_slow.py"), timeout_s=120), f)
            marker = os.path.join(tmp, "called")
            env = dict(os.environ, PYTHONPATH=str(REPO / "python"), KPILOT_TEST_CALL_MARKER=marker)
            proc = subprocess.Popen([sys.executable, "-m", "kpilot_torch.worker", "run", path], cwd=tmp, env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
            try:
                deadline = time.monotonic() + 60
                while not os.path.exists(marker) and proc.poll() is None and time.monotonic() < deadline:
                    time.sleep(0.05)  # a poll for the candidate's 60-s call, not an ordering
                self.assertTrue(os.path.exists(marker), "the candidate's call never started")
                self.assertIsNone(proc.poll(), "the worker ended before its reader went away")
                proc.stdout.close()
                started = time.monotonic()
                proc.wait(timeout=20)
                self.assertLess(time.monotonic() - started, 5)
                self.assertEqual(proc.returncode, -signal.SIGKILL)  # it ended its whole group
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
                proc.stderr.close()

    def test_candidate_raises(self):
        r = self.run_ok("relu_problem.py", model_new("relu_new_raises.py"))
        self.assertEqual(r["status"], "runtime_error")
        self.assertIn("shape not supported", r["message"])
        self.assertNotIn("out_of_memory", r["details"])

    def test_a_call_out_of_gpu_memory_says_so(self):
        # A bench runs such a problem again alone on its GPU: the reply must say why it failed.
        r = self.run_ok("relu_problem.py", model_new("relu_new_out_of_memory.py"))
        self.assertEqual(r["status"], "runtime_error")
        self.assertIn("CUDA out of memory", r["message"])
        self.assertIs(r["details"]["out_of_memory"], True)

    def test_timer_patching(self):
        r = self.run_ok("relu_problem.py", model_new("relu_new_patches_timer.py"))
        self.assertEqual(r["status"], "suspicious", r["message"])
        self.assertIn("torch.cuda.Event.elapsed_time", r["message"])

    def test_candidate_exits(self):
        r = self.run_ok("relu_problem.py", model_new("relu_new_exits.py"))
        self.assertEqual(r["status"], "runtime_error", r["message"])
        self.assertIn("sys.exit(3)", r["message"])

    def test_candidate_without_model_new(self):
        r = self.run_ok("relu_problem.py", model_new("relu_new_noclass.py"))
        self.assertEqual(r["status"], "runtime_error")
        self.assertEqual(r["phase"], "load")
        self.assertIn("ModelNew", r["message"])

    def test_compile_candidate(self):
        r = self.run_ok("relu_problem.py", {"kind": "compile"})
        if hasattr(torch, "compile"):
            self.assertIn(r["status"], ("passed", "runtime_error"))  # inductor needs a C compiler
        else:
            self.assertEqual(r["status"], "runtime_error")
            self.assertIn("torch.compile is unavailable", r["message"])

    def test_missing_problem_and_no_model(self):
        r = self.run_ok("nowhere.py", {"kind": "reference"})
        self.assertEqual(r["status"], "error")
        self.assertIn("nowhere.py", r["message"])
        r = self.run_ok("no_model_problem.py", {"kind": "reference"})
        self.assertEqual(r["status"], "error")
        self.assertIn("Model", r["message"])

    def test_cuda_requested_without_cuda(self):
        if torch.cuda.is_available():
            self.skipTest("this machine has CUDA")
        r = self.run_ok("relu_problem.py", {"kind": "reference"}, device="cuda:0")
        self.assertEqual(r["status"], "error")
        self.assertIn("CUDA", r["message"])

    def test_torch_missing(self):
        r, proc = worker("run", run_request("relu_problem.py", {"kind": "reference"}),
                         pythonpath_front=FIX / "notorch")
        self.assertEqual(proc.returncode, 0)
        self.assertEqual(r["status"], "error")
        self.assertIn("torch is not importable", r["message"])
        self.assertRunResultShape(r)

    def test_unknown_format(self):
        r = self.run_ok("relu_problem.py", {"kind": "reference"}, format="tvm")
        self.assertEqual(r["status"], "error")
        self.assertIn("tvm", r["message"])


class NativeTest(ProtocolTest):
    def run_native(self, problem, variant, **kw):
        r, proc = worker("run", run_request(problem, native_candidate(variant), **kw))
        self.assertEqual(proc.returncode, 0)
        self.assertRunResultShape(r)
        return r

    def test_relu_native_passes(self):
        r = self.run_native("relu_problem.py", "relu")
        self.assertEqual(r["status"], "passed", r["message"])
        self.assertTrue(all(c["guards_intact"] for c in r["checks"]))

    def test_linear_native_gets_params_and_scalar(self):
        r = self.run_native("linear_problem.py", "linear")
        self.assertEqual(r["status"], "passed", r["message"])

    def test_write_outside_output(self):
        r = self.run_native("relu_problem.py", "relu_overrun")
        self.assertEqual(r["status"], "incorrect", r["message"])
        self.assertFalse(r["checks"][0]["guards_intact"])
        self.assertIn("outside", r["message"])

    def test_nonzero_return(self):
        r = self.run_native("relu_problem.py", "relu_fail")
        self.assertEqual(r["status"], "runtime_error")
        self.assertIn("returned 1", r["message"])

    def test_timeout_inside_native_code(self):
        # SIGALRM cannot interrupt a C loop; the watchdog replies timeout_s + 5 s later.
        r = self.run_native("relu_problem.py", "relu_hang", timeout_s=1)
        self.assertEqual(r["status"], "timeout")
        self.assertIn("native code", r["message"])
        self.assertEqual(r["phase"], "correctness")

    def test_abi_version_mismatch(self):
        r = self.run_native("relu_problem.py", "relu_bad_abi")
        self.assertEqual(r["status"], "runtime_error")
        self.assertEqual(r["phase"], "load")
        self.assertIn("ABI version 99", r["message"])

    def test_missing_object(self):
        r, _ = worker("run", run_request("relu_problem.py", {"kind": "native", "object": "/nonexistent/x.so"}))
        self.assertEqual(r["status"], "runtime_error")
        self.assertIn("/nonexistent/x.so", r["message"])

    def test_binding_in_process(self):
        k = native.NativeKernel(NativeObjects.get("relu"))
        x = torch.randn(3, 5)
        y = torch.full((3, 5), float("nan"))
        k.launch([("x", x)], [("out", y)])
        self.assertTrue(torch.equal(y, torch.relu(x)))
        with self.assertRaises(native.NativeError):
            k.launch([("y", x)], [("out", y)])  # the kernel checks the name: returns 3
        self.assertEqual(native.TORCH_TO_CODE[torch.float32], 1)
        self.assertEqual(native.TORCH_TO_CODE[torch.bool], 11)
        self.assertEqual(native.dtype_name(torch.bfloat16), "bf16")
        self.assertEqual(native.scalar_dtype_name(True), "bool")
        self.assertEqual(native.scalar_dtype_name(3), "i64")


class TimingTest(ProtocolTest):
    def timed(self, mode, **timing):
        t = dict(QUICK_TIMING, mode=mode)
        t.update(timing)
        r, _ = worker("run", run_request("relu_problem.py", model_new("relu_new_ok.py"), time=True, timing=t))
        self.assertEqual(r["status"], "passed", r["message"])
        self.assertEqual(len(r["timings"]), 1)
        return r["timings"][0]

    def test_default_interleaved_with_caps(self):
        t = self.timed("default")
        self.assertEqual(t["workload"], "default")
        self.assertEqual(t["statistic"], "median")
        self.assertEqual(len(t["candidate_ms"]), len(t["baseline_ms"]))
        self.assertGreaterEqual(len(t["candidate_ms"]), 5)
        self.assertLessEqual(len(t["candidate_ms"]), 20)
        self.assertIn("perf_counter", t["method"])
        self.assertTrue(all(x > 0 for x in t["candidate_ms"] + t["baseline_ms"]))

    def test_kernelbench_mean_of_100(self):
        t = self.timed("kernelbench")
        self.assertEqual(t["statistic"], "mean")
        self.assertEqual(len(t["candidate_ms"]), 100)
        self.assertEqual(len(t["baseline_ms"]), 100)
        self.assertIn("KernelBench", t["method"])

    def test_flashinfer_three_sets_of_50(self):
        t = self.timed("flashinfer")
        self.assertEqual(t["statistic"], "median")
        self.assertEqual(len(t["candidate_ms"]), 150)
        self.assertEqual(len(t["set_medians_ms"]["candidate"]), 3)

    def test_kernelbench_mode_runs_five_trials(self):
        r, _ = worker("run", run_request("relu_problem.py", model_new("relu_new_ok.py"), seeds=[7],
                                         timing=dict(QUICK_TIMING, mode="kernelbench")))
        self.assertEqual([c["seed"] for c in r["checks"]], [7, 8, 9, 10, 11])


if __name__ == "__main__":
    unittest.main(verbosity=2)
