"""The team's KernelBench-style suite (examples/kernelbench/) on the CPU: every problem file imports,
builds its Model from get_init_inputs() and runs forward on get_inputs(); two runs under the same
seed give identical outputs; input, parameter and output shapes are those examples/kernelbench/
README.md lists (the table there and EXPECTED here must agree); every problem has a native candidate
whose kpilot-params block parses (names, lists, constraints, #ifndef defaults inside the lists and
satisfying the constraints); every model_new.py parses and defines ModelNew with Model's __init__
arguments. No GPU and no nvcc needed (bench/check_kernelbench_suite.sh builds the candidates).
Runs with torch 1.13 (.venv-torch) and 2.x. Plain unittest: `python tests/python/test_kernelbench_suite.py`."""

import ast
import importlib.util
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "examples" / "kernelbench"

# stem -> (level, [(input name, shape)] incl. parameters in state_dict order, output shape, bytes)
EXPECTED = {
    "1_ReLU": (1, [("x", (4096, 8192))], (4096, 8192), 268435456),
    "2_GELUTanh": (1, [("x", (4096, 8192))], (4096, 8192), 268435456),
    "3_RowSoftmax": (1, [("x", (8192, 4096))], (8192, 4096), 268435456),
    "4_LayerNorm": (1, [("x", (8192, 4096)), ("ln.weight", (4096,)), ("ln.bias", (4096,))], (8192, 4096),
                    268468224),
    "5_SumReduceDim": (1, [("x", (64, 2048, 512))], (64, 1, 512), 268566528),
    "6_MatmulSquare": (1, [("A", (1280, 1280)), ("B", (1280, 1280))], (1280, 1280), 19660800),
    "7_TransposeCopy": (1, [("x", (8192, 4096))], (4096, 8192), 268435456),
    "1_LinearBiasReLU": (2, [("x", (512, 1024)), ("linear.weight", (2048, 1024)), ("linear.bias", (2048,))],
                         (512, 2048), 14688256),
    "2_MatmulScaleResidual": (2, [("A", (1024, 768)), ("B", (768, 1536)), ("residual", (1024, 1536))],
                              (1024, 1536), 20447232),
    "3_SwishBiasAdd": (2, [("x", (4096, 8192)), ("bias", (8192,))], (4096, 8192), 268468224),
    "4_ResidualAddLayerNorm": (2, [("x", (8192, 2048)), ("residual", (8192, 2048)), ("norm.weight", (2048,)),
                                   ("norm.bias", (2048,))], (8192, 2048), 201342976),
    "1_MLPBlock": (3, [("x", (1024, 384)), ("norm.weight", (384,)), ("norm.bias", (384,)),
                       ("fc1.weight", (1536, 384)), ("fc1.bias", (1536,)), ("fc2.weight", (384, 1536)),
                       ("fc2.bias", (384,))], (1024, 384), 7875072),
    "2_AttentionHead": (3, [("x", (8, 1024, 256)), ("q.weight", (64, 256)), ("k.weight", (64, 256)),
                            ("v.weight", (64, 256))], (8, 1024, 64), 10682368),
}

# The brief's bound is < 2 s per problem on the CPU with torch 1.13; a shared CI machine can be
# several times slower, so the test fails only far above it and prints the measured times.
SECONDS_LIMIT = 20.0


def load_problem(path):
    spec = importlib.util.spec_from_file_location("kb_" + path.stem, str(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_once(module, seed):
    torch.manual_seed(seed)
    model = module.Model(*module.get_init_inputs())
    inputs = module.get_inputs()
    with torch.no_grad():
        out = model(*inputs)
    return model, inputs, out


def parse_params(source):
    """The kpilot-params block as ({name: [values]}, [constraints]), or None when there is none."""
    m = re.match(r"\s*/\*\s*kpilot-params\s*\n(.*?)\*/", source, re.S)
    if not m:
        return None
    params, constraints = {}, []
    for line in m.group(1).splitlines():
        line = line.strip()
        if not line:
            continue
        name, sep, value = line.partition("=")
        if not sep:
            raise ValueError("not NAME = [...]: %r" % line)
        name, value = name.strip(), json.loads(value.strip())
        if name == "constraints":
            constraints = value
        else:
            params[name] = value
    return params, constraints


def satisfies(constraints, config):
    for c in constraints:
        expr = c.replace("&&", " and ").replace("||", " or ").replace("^", "**")
        if not eval(expr, {"__builtins__": {}, "min": min, "max": max}, dict(config)):
            return False
    return True


def init_args(tree, cls):
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    return [a.arg for a in item.args.args]
    return None


class KernelBenchSuiteTest(unittest.TestCase):
    def problems(self):
        return sorted(SUITE.glob("level*/*.py"))

    def test_the_suite_is_what_the_readme_lists(self):
        found = {p.stem: int(p.parent.name[len("level"):]) for p in self.problems()}
        self.assertEqual(found, {stem: e[0] for stem, e in EXPECTED.items()})
        self.assertGreaterEqual(sum(1 for l in found.values() if l == 1), 6)
        self.assertGreaterEqual(sum(1 for l in found.values() if l == 2), 3)
        self.assertGreaterEqual(sum(1 for l in found.values() if l == 3), 2)
        readme = (SUITE / "README.md").read_text()
        for stem, (level, inputs, out_shape, nbytes) in EXPECTED.items():
            # The problems table: rows whose first cell is the level and second the stem.
            rows = [[c.strip() for c in l.strip().strip("|").split("|")] for l in readme.splitlines()
                    if l.startswith("|")]
            rows = [r for r in rows if len(r) >= 5 and r[0].isdigit() and r[1] == "`%s`" % stem]
            self.assertEqual(len(rows), 1, "README.md: one problems-table row for %s" % stem)
            cells = rows[0]
            self.assertEqual(cells[0], str(level), stem)
            self.assertIn(str(out_shape).replace(" ", ""), cells[3].replace(" ", ""), stem)
            for name, shape in inputs:
                self.assertIn(str(shape).replace(" ", ""), cells[2].replace(" ", ""), stem)
            self.assertIn("%.1f MB" % (nbytes / 1e6), cells[4], stem)

    def test_every_problem_runs_deterministically_with_the_listed_shapes(self):
        for path in self.problems():
            stem = path.stem
            with self.subTest(problem=stem):
                level, inputs, out_shape, nbytes = EXPECTED[stem]
                start = time.time()
                module = load_problem(path)
                for name in ("Model", "get_inputs", "get_init_inputs"):
                    self.assertTrue(hasattr(module, name), "%s lacks %s" % (path, name))
                model, args, out = run_once(module, 1234)
                elapsed = time.time() - start
                print("%-24s level %d  %6.2f s on the CPU" % (stem, level, elapsed))
                self.assertLess(elapsed, SECONDS_LIMIT)
                self.assertIsInstance(model, torch.nn.Module)
                tensors = [a for a in args if torch.is_tensor(a)]
                state = list(model.state_dict().items())
                got = [tuple(t.shape) for t in tensors] + [tuple(v.shape) for _, v in state]
                self.assertEqual(got, [s for _, s in inputs])
                self.assertEqual([k for k, _ in state], [n for n, _ in inputs[len(tensors):]])
                self.assertTrue(torch.is_tensor(out))
                self.assertEqual(tuple(out.shape), out_shape)
                self.assertEqual(out.dtype, torch.float32)
                self.assertTrue(all(t.dtype == torch.float32 for t in tensors))
                self.assertTrue(bool(torch.isfinite(out).all()))
                total = sum(t.numel() * t.element_size() for t in tensors)
                total += sum(v.numel() * v.element_size() for _, v in state)
                total += out.numel() * out.element_size()
                self.assertEqual(total, nbytes)
                # Non-tensor inputs are plain scalars (they reach native candidates as scalars).
                for a in args:
                    if not torch.is_tensor(a):
                        self.assertIsInstance(a, (int, float, bool))
                del model, args
                _, _, again = run_once(module, 1234)
                self.assertTrue(torch.equal(out, again), "%s: forward differs under the same seed" % stem)
                del again, out

    def test_every_problem_has_a_native_candidate_with_a_valid_param_space(self):
        for path in self.problems():
            stem = path.stem
            with self.subTest(problem=stem):
                folder = SUITE / "candidates" / stem
                self.assertTrue((folder / "native.cu").is_file(), "%s/native.cu" % folder)
                for cu in sorted(folder.glob("*.cu")) + sorted(folder.glob("better/*.cu")):
                    source = cu.read_text()
                    self.assertIn("kpilot_launch", source)
                    self.assertIn("#include <kpilot/kernel.h>", source)
                    parsed = parse_params(source)
                    if cu.name == "native.cu":
                        self.assertIsNotNone(parsed, "%s: no leading kpilot-params block" % cu)
                    if parsed is None:
                        continue
                    params, constraints = parsed
                    self.assertTrue(params)
                    defaults = {}
                    for name, values in params.items():
                        self.assertRegex(name, r"^[A-Z][A-Z0-9_]*$")
                        self.assertTrue(values and all(isinstance(v, int) for v in values), name)
                        d = re.search(r"#ifndef\s+%s\s*\n\s*#define\s+%s\s+(\S+)" % (name, name), source)
                        self.assertIsNotNone(d, "%s: #ifndef %s default" % (cu, name))
                        defaults[name] = int(d.group(1))
                        self.assertIn(defaults[name], values, "%s: default %s" % (cu, name))
                    self.assertTrue(satisfies(constraints, defaults), "%s: defaults break a constraint" % cu)
                    space = [dict(zip(params, v)) for v in itertools.product(*params.values())]
                    valid = [c for c in space if satisfies(constraints, c)]
                    self.assertGreater(len(valid), 1, "%s: a space to search" % cu)

    def test_model_new_candidates_parse_and_match_model(self):
        found = sorted((SUITE / "candidates").glob("*/model_new.py"))
        self.assertGreaterEqual(len(found), 4)
        for path in found:
            with self.subTest(candidate=path.parent.name):
                problem = list(SUITE.glob("level*/%s.py" % path.parent.name))
                self.assertEqual(len(problem), 1)
                tree = ast.parse(path.read_text())
                self.assertEqual(init_args(tree, "ModelNew"), init_args(ast.parse(problem[0].read_text()), "Model"))
                self.assertIn("load_inline", path.read_text())

    def test_scripted_agent_hands_out_the_better_kernels_in_order(self):
        script = REPO / "bench" / "scripted_kb_agent.sh"
        better = sorted((SUITE / "candidates" / "3_RowSoftmax" / "better").glob("*.cu"))
        self.assertTrue(better)

        def agent(parent, problem=None, with_suite_arg=True):
            ws = tempfile.mkdtemp()
            try:
                os.makedirs(os.path.join(ws, "task"))
                os.makedirs(os.path.join(ws, "parent"))
                if problem:
                    shutil.copy(str(problem), os.path.join(ws, "task"))
                shutil.copy(str(parent), os.path.join(ws, "parent", "candidate.cu"))
                env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "KPILOT_WORKSPACE": ws,
                       "KPILOT_CANDIDATE": "candidate.cu"}
                argv = ["sh", str(script)] + ([str(SUITE)] if with_suite_arg else [])
                p = subprocess.run(argv, cwd=ws, env=env, input="the instructions\n", stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
                out = os.path.join(ws, "candidate.cu")
                written = Path(out).read_text() if os.path.exists(out) else None
                return p.returncode, written, p.stdout, p.stderr
            finally:
                shutil.rmtree(ws)

        native = SUITE / "candidates" / "3_RowSoftmax" / "native.cu"
        problem = SUITE / "level1" / "3_RowSoftmax.py"
        rc, written, out, _ = agent(native, problem)
        self.assertEqual(rc, 0)
        self.assertEqual(written, better[0].read_text())
        self.assertIn("Summary:", out)
        # The problem from the parent's '// level<N>/<stem>:' line when task/ has no .py.
        rc, written, _, _ = agent(native, None, with_suite_arg=False)
        self.assertEqual((rc, written), (0, better[0].read_text()))
        # After the last one: nothing left.
        rc, _, _, err = agent(better[-1], problem)
        self.assertEqual(rc, 1)
        self.assertIn("no improvement", err)
        # A problem without better/ kernels.
        rc, _, _, err = agent(SUITE / "candidates" / "1_ReLU" / "native.cu", SUITE / "level1" / "1_ReLU.py")
        self.assertEqual(rc, 1)
        self.assertIn("no hand-written improvement", err)

    @unittest.skipIf(shutil.which("g++") is None, "no g++ for the CPU emulation of the CUDA candidates")
    def test_native_candidates_pass_the_worker_on_the_cpu_emulator(self):
        # tools/emu: the .cu rewritten for the CPU (a thread per CUDA thread), run by kpilot's worker
        # against Model at small shapes with tails. A few by default; KPILOT_KB_EMULATE=all for every
        # candidate of the suite (about 3 minutes on a 2-core machine).
        c = SUITE / "candidates"
        files = [] if os.environ.get("KPILOT_KB_EMULATE") == "all" else [
            c / "1_ReLU" / "native.cu", c / "3_RowSoftmax" / "native.cu",
            c / "2_MatmulScaleResidual" / "native.cu", c / "2_AttentionHead" / "better" / "fused_flash.cu"]
        p = subprocess.run([sys.executable, str(SUITE / "tools" / "emu" / "emulate.py")] + [str(f) for f in files],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=800)
        print(p.stdout)
        self.assertEqual(p.returncode, 0, p.stdout[-3000:] + p.stderr[-3000:])
        self.assertNotIn("FAIL", p.stdout)
        self.assertIn("ok", p.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
