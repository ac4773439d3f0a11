"""bench/compare_strategies.py on made-up results files: verdicts, and errors for unusable input."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "bench", "compare_strategies.py")
BUDGETS = [[0.01, 6], [0.1, 60]]


def kpilot_runs(policy, values):
    return [{"policy": policy, "seed": i + 1, "at": v} for i, v in enumerate(values)]


def kt_runs(strategy, values):
    return [{"strategy": strategy, "seed": i + 1, "at": v} for i, v in enumerate(values)]


class CompareStrategiesTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def write(self, name, runs, budgets=BUDGETS):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            json.dump({"budgets": budgets, "runs": runs}, f)
        return path

    def run_script(self, *args):
        return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)

    def test_ahead_behind_and_level(self):
        # mcts: 0.70 at 1%, 0.99 at 10%; random: ~0.80 and ~0.90 (clearly different);
        # firefly: the same values as mcts (level).
        mcts = [[0.70 + 0.001 * i, 0.99 - 0.001 * i] for i in range(30)]
        rand = [[0.80 + 0.001 * i, 0.90 - 0.001 * i] for i in range(30)]
        a = self.write("kp.json", kpilot_runs("mcts", mcts) + kpilot_runs("random", rand))
        b = self.write("kt.json", kt_runs("firefly_algorithm", mcts) + [{"strategy": "x", "seed": 1, "error": "e"}])
        p = self.run_script(a, b, "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        result = json.loads(p.stdout)
        rows = {r["strategy"]: [c["verdict"] for c in r["cells"]] for r in result["rows"]}
        self.assertEqual(rows["kpilot random"], ["behind", "ahead"])
        self.assertEqual(rows["Kernel Tuner firefly_algorithm"], ["level", "level"])
        self.assertNotIn("Kernel Tuner x", rows)  # a run that errored is not a strategy's result
        self.assertEqual(result["ahead_of_all"], [False, False])
        self.assertEqual(result["behind"], [{"strategy": "kpilot random", "fraction": 0.01}])
        md = self.run_script(a, b)
        self.assertIn("0.1 (60 evaluations): not ahead of every strategy: level with Kernel Tuner firefly_algorithm",
                      md.stdout)

    def test_ahead_of_all(self):
        good = [[0.9 + 0.001 * i, 1.0] for i in range(20)]
        bad = [[0.5 + 0.001 * i, 0.8] for i in range(20)]
        a = self.write("kp.json", kpilot_runs("mcts", good) + kpilot_runs("greedy", bad))
        p = self.run_script(a)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("0.01 (6 evaluations): ahead of every strategy.", p.stdout)
        self.assertIn("0.1 (60 evaluations): ahead of every strategy.", p.stdout)

    def test_unusable_input_names_the_file(self):
        a = self.write("kp.json", kpilot_runs("mcts", [[0.5, 0.6]]))
        other = self.write("other.json", kt_runs("pso", [[0.5, 0.6, 0.7]]), budgets=[[0.01, 6], [0.05, 30], [0.1, 60]])
        p = self.run_script(a, other)
        self.assertEqual(p.returncode, 2)
        self.assertIn("other.json: its budgets", p.stderr)
        short = self.write("short.json", kt_runs("pso", [[0.5]]))
        p = self.run_script(a, short)
        self.assertEqual(p.returncode, 2)
        self.assertIn("short.json: run Kernel Tuner pso seed 1", p.stderr)
        p = self.run_script(a, "--reference", "kpilot beam")
        self.assertEqual(p.returncode, 2)
        self.assertIn("no runs of 'kpilot beam'; the files hold kpilot mcts", p.stderr)
        missing = os.path.join(self.dir.name, "missing.json")
        p = self.run_script(missing)
        self.assertEqual(p.returncode, 2)
        self.assertIn("missing.json: cannot read it as JSON", p.stderr)


if __name__ == "__main__":
    unittest.main()
