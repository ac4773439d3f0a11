"""Tests of the torch worker's modules one at a time on the CPU (python/kpilot_torch): tolerances,
input sets that fit the GPU's memory, the per-GPU lock and the pausable deadline, profiled spans,
CUDA_VISIBLE_DEVICES, library-kernel names and the check rules. The worker as a process, its
protocol and its verdicts are test_worker.py's. Run by ctest with .venv-torch/bin/python."""

import os
import sys
import tempfile
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIX = REPO / "tests" / "python" / "fixtures"
sys.path.insert(0, str(REPO / "python"))

import torch  # noqa: E402

from kpilot_torch import checks, timing  # noqa: E402


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
