"""Tests of kpilot's Python worker (python/kpilot_torch) on the CPU: the protocol, the KernelBench
adapter, the native binding (a host .so built here with g++), the checks, every exploit detector,
the timing modes and the error replies. Run by ctest with .venv-torch/bin/python (torch 1.13 CPU);
also runs under torch 2.x. Plain unittest: `python tests/python/test_worker.py`."""

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

from kpilot_torch import checks, native, timing  # noqa: E402

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


class ToleranceTest(unittest.TestCase):
    @unittest.skipUnless(hasattr(torch.device("cpu"), "__enter__"),
                         "torch %s has no device context: inputs are drawn on the CPU to read their dtypes"
                         % torch.__version__)
    def test_the_inputs_dtypes_come_from_a_meta_draw(self):
        from kpilot_torch.kernelbench import KernelBenchProblem
        problem = KernelBenchProblem({"problem": str(FIX / "draw_recorder_problem.py")})
        self.assertEqual(problem.tolerance("default")["atol"], 1e-4)  # f32 inputs
        self.assertEqual(problem.module.DRAWN_ON, ["meta"])


class InputSetsTest(unittest.TestCase):
    GIB = 1 << 30

    def test_all_wanted_sets_when_they_fit(self):
        self.assertEqual(timing.input_sets_that_fit(3, self.GIB, self.GIB, 70 * self.GIB, 80 * self.GIB), (3, ""))

    def test_fewer_sets_for_a_heavy_problem_and_why(self):
        n, why = timing.input_sets_that_fit(3, 6 * self.GIB, 6 * self.GIB, 40 * self.GIB, 80 * self.GIB)
        self.assertEqual(n, 2)  # 40 - 2·6 (outputs) - 8 (a tenth) = 20 GiB spare; a set costs 12
        self.assertIn("2 of 3 input sets", why)
        self.assertIn("6.00 GiB", why)
        n, why = timing.input_sets_that_fit(3, 6 * self.GIB, 6 * self.GIB, 10 * self.GIB, 80 * self.GIB)
        self.assertEqual(n, 1)

    def test_one_wanted_or_no_device_memory_to_read(self):
        self.assertEqual(timing.input_sets_that_fit(1, 50 * self.GIB, 0, 1, 80 * self.GIB), (1, ""))
        self.assertEqual(timing.input_sets_that_fit(3, 50 * self.GIB, 0, 0, 0), (3, ""))


class GpuLockTest(unittest.TestCase):
    """The per-GPU timing lock and the pausable deadline (gpu.GpuLock, worker.Deadline);
    a worker waiting on a held lock on the GPU is test_worker_gpu's."""

    def test_waits_for_the_holder_and_reports_the_wait(self):
        import fcntl
        import threading
        from kpilot_torch import gpu
        with tempfile.TemporaryDirectory() as tmp:
            fd = os.open(os.path.join(tmp, "kpilot-gpu-3.lock"), os.O_RDWR | os.O_CREAT)
            fcntl.flock(fd, fcntl.LOCK_EX)
            threading.Timer(0.4, lambda: os.close(fd)).start()
            # The lock is per open file description: another open() in this process contends.
            waited, warning = gpu.GpuLock(tmp, 3).acquire()
            self.assertGreaterEqual(waited, 0.3)
            self.assertEqual(warning, "")
            waited, _ = gpu.GpuLock(tmp, 4).acquire()  # another GPU's lock is free
            self.assertLess(waited, 0.2)

    def test_release_lets_others_in_until_acquired_again(self):
        from kpilot_torch import gpu
        sys.path.insert(0, str(FIX))
        from lock_probe import gpu_lock_held  # another open file description takes the lock, or cannot
        with tempfile.TemporaryDirectory() as tmp:
            lock = gpu.GpuLock(tmp, 0)
            lock.acquire()
            self.assertTrue(gpu_lock_held(lock.path))
            lock.release()
            self.assertFalse(gpu_lock_held(lock.path))
            lock.acquire()
            self.assertTrue(gpu_lock_held(lock.path))

    def test_unopenable_lock_dir_warns(self):
        from kpilot_torch import gpu
        waited, warning = gpu.GpuLock("/nonexistent/kpilot-locks", 0).acquire()
        self.assertEqual(waited, 0.0)
        self.assertIn("/nonexistent/kpilot-locks/kpilot-gpu-0.lock", warning)
        self.assertIn("another kpilot may time", warning)

    def test_deadline_pause_keeps_the_remaining_time(self):
        import signal
        import time
        from kpilot_torch import worker as w
        fired = []
        old = signal.signal(signal.SIGALRM, lambda *a: fired.append("alarm"))
        try:
            d = w.Deadline(0.5, lambda: fired.append("watchdog"))
            d.start()
            time.sleep(0.2)
            d.pause()
            self.assertAlmostEqual(d.remaining, 0.3, delta=0.08)
            time.sleep(0.6)  # paused: neither the alarm nor the watchdog fires
            self.assertEqual(fired, [])
            d.start()
            time.sleep(0.5)
            self.assertEqual(fired, ["alarm"])
            d.stop()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)


class ProfiledSpansTest(unittest.TestCase):
    def test_one_span_per_iteration(self):
        from kpilot_torch import timing
        x = torch.randn(256, 256)
        spans = timing.profiled_spans(timing.Clock("cpu"), lambda: x @ x, 5)
        self.assertEqual(len(spans), 5)
        self.assertTrue(all(s > 0 for s in spans))


class VisibleDevicesTest(unittest.TestCase):
    """The worker narrows CUDA_VISIBLE_DEVICES to its assigned GPU before CUDA starts."""

    def test_entry_of_the_assigned_device(self):
        from kpilot_torch.gpu import visible_device_entry
        self.assertEqual(visible_device_entry(None, 2), "2")
        self.assertEqual(visible_device_entry("", 0), "0")
        self.assertEqual(visible_device_entry("4,5", 1), "5")
        self.assertEqual(visible_device_entry("GPU-aa,GPU-bb", 0), "GPU-aa")
        self.assertIsNone(visible_device_entry("4,5", 2))


class LibraryKernelsTest(unittest.TestCase):
    # Kernel names in the form torch.profiler reports them for ATen, cuBLAS(Lt), CUTLASS, cuDNN and
    # Inductor kernels, next to kernels a candidate names itself.
    LIBRARY = [
        "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::launch_clamp_scalar("
        "at::TensorIteratorBase&, c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::operator()"
        "() const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, ...)",
        "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
        "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)",
        "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
        "ampere_sgemm_128x64_tn",
        "nvjet_tst_128x64_64x8_1x2_h_bz_coopA_NNT",
        "void cutlass::Kernel2<cutlass_80_simt_sgemm_128x64_8x5_nn_align1>(cutlass_80_simt_sgemm_128x64_8x5_nn_align1::Params)",
        "void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false>(float const*, float*)",
        "sm80_xmma_fprop_implicit_gemm_indexed_f32f32_f32f32_f32_nchwkcrs_nchw_tilesize32x32x8_stage1_warpsize1x2x1",
        "triton_poi_fused_relu_0",
    ]
    OWN = [
        "relu_kernel(float const*, float*, long, int)",
        "void my_sgemm_kernel<128, 64>(float const*, float const*, float*, int, int, int)",
        "tiled_gemm_bf16",
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >"
        "(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)",
        "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda"
        "(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda(float)#1}> >(int, ...)",
        "Memcpy HtoD (Pageable -> Device)",
        "Memset (Device)",
    ]

    def test_library_and_own_kernels(self):
        self.assertEqual(checks.library_kernels(self.LIBRARY + self.OWN), self.LIBRARY)
        self.assertEqual(checks.library_kernels(self.OWN), [])

    def test_repeats_reported_once(self):
        self.assertEqual(checks.library_kernels(["ampere_sgemm_128x64_tn"] * 3 + ["relu_kernel"]), ["ampere_sgemm_128x64_tn"])


class CheckRulesTest(unittest.TestCase):
    TOL = {"atol": 1e-2, "rtol": 1e-2, "matched_ratio": 1.0}

    def test_kpilot_rule_is_allclose(self):
        ref = torch.tensor([1.0, 100.0, 0.0])
        cand = torch.tensor([1.015, 100.5, 0.0])
        rec, why = checks.check_record("w", 1, "out", cand, ref, self.TOL, "kpilot")
        self.assertEqual(rec["mismatches"], int((~torch.isclose(cand, ref, rtol=1e-2, atol=1e-2)).sum()))
        self.assertEqual(rec["mismatches"], 0)
        cand = torch.tensor([1.03, 100.5, 0.0])
        rec, why = checks.check_record("w", 1, "out", cand, ref, self.TOL, "kpilot")
        self.assertEqual((rec["mismatches"], rec["first_bad_index"]), (1, 0))
        self.assertFalse(rec["ok"])
        self.assertIn("1 of 3", why)

    def test_flashinfer_rule_needs_both_errors(self):
        ref = torch.tensor([1000.0, 0.001])
        cand = torch.tensor([1009.0, 0.009])  # abs 9 > atol but rel < rtol; rel 8 > rtol but abs < atol
        rec, _ = checks.check_record("w", 1, "out", cand, ref, self.TOL, "flashinfer")
        self.assertTrue(rec["ok"])
        # Both errors above their bounds fails flashinfer's rule but not allclose's atol + rtol·|r|.
        ref, cand = torch.tensor([1.0]), torch.tensor([1.015])
        rec, _ = checks.check_record("w", 1, "out", cand, ref, self.TOL, "flashinfer")
        self.assertFalse(rec["ok"])
        rec, _ = checks.check_record("w", 1, "out", cand, ref, self.TOL, "kpilot")
        self.assertTrue(rec["ok"])

    def test_matched_ratio(self):
        ref = torch.zeros(10)
        cand = torch.zeros(10)
        cand[3] = 1.0
        tol = dict(self.TOL, matched_ratio=0.9)
        rec, _ = checks.check_record("w", 1, "out", cand, ref, tol, "flashinfer")
        self.assertTrue(rec["ok"])
        self.assertEqual(rec["mismatches"], 1)

    def test_nan_and_shape(self):
        ref = torch.tensor([1.0, float("nan")])
        rec, _ = checks.check_record("w", 1, "out", torch.tensor([1.0, float("nan")]), ref, self.TOL, "kpilot")
        self.assertTrue(rec["ok"])
        rec, _ = checks.check_record("w", 1, "out", torch.tensor([float("nan"), 1.0]), ref, self.TOL, "kpilot")
        self.assertEqual(rec["mismatches"], 2)
        self.assertEqual(rec["first_bad_value"], "nan")
        rec, why = checks.check_record("w", 1, "out", torch.zeros(3), ref, self.TOL, "kpilot")
        self.assertFalse(rec["ok"])
        self.assertIn("shape", why)
        rec, why = checks.check_record("w", 1, "out", torch.zeros(2, dtype=torch.float64), torch.zeros(2),
                                       self.TOL, "kpilot")
        self.assertIn("dtype", why)

    def test_chunks_give_the_whole_tensor_answer(self):
        ref = torch.arange(20, dtype=torch.float32)
        cand = ref.clone()
        cand[[5, 13, 17]] += torch.tensor([0.5, 3.0, float("inf")])
        whole, why_whole = checks.check_record("w", 1, "out", cand, ref, self.TOL, "kpilot")
        saved = checks.CHECK_CHUNK
        checks.CHECK_CHUNK = 3
        try:
            chunked, why_chunked = checks.check_record("w", 1, "out", cand, ref, self.TOL, "kpilot")
            self.assertEqual(checks.finite_abs_max(cand), 19.0)
        finally:
            checks.CHECK_CHUNK = saved
        self.assertEqual(chunked, whole)
        self.assertEqual(why_chunked, why_whole)
        self.assertEqual((whole["mismatches"], whole["first_bad_index"], whole["max_abs_error"]), (3, 5, "inf"))

    def test_constant_value_and_fingerprint(self):
        self.assertEqual(checks.constant_value(torch.full((5,), 3.0)), 3.0)
        self.assertIsNone(checks.constant_value(torch.tensor([1.0, 2.0])))
        self.assertIsNone(checks.constant_value(torch.full((5,), float("nan"))))
        self.assertIsNone(checks.constant_value(torch.tensor([7.0])))
        self.assertEqual(checks.constant_value(torch.zeros(4, dtype=torch.int64)), 0)
        a = torch.rand(10000)
        self.assertEqual(checks.fingerprint(a), checks.fingerprint(a.clone()))
        b = a.clone()
        b[1] += 1
        self.assertNotEqual(checks.fingerprint(a), checks.fingerprint(b))
        self.assertIsNone(checks.fingerprint(3))

    def test_near_zero(self):
        self.assertTrue(checks.near_zero(torch.zeros(4), torch.full((4,), 1e-6)))
        self.assertFalse(checks.near_zero(torch.full((4,), 1e-6), torch.full((4,), 1e-6)))
        self.assertFalse(checks.near_zero(torch.zeros(4), torch.zeros(4)))


if __name__ == "__main__":
    unittest.main(verbosity=2)
