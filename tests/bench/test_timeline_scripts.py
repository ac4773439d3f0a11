"""bench/best_at_time.py and bench/busy_timeline.py on real H200 event streams
(tests/fixtures/bench/): the figures docs/results.md quotes from those runs come out of them, and
unusable input gets an error naming it."""
import os
import subprocess
import sys
import tarfile
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "bench")
BEST_AT_TIME = os.path.join(ROOT, "bench", "best_at_time.py")
BUSY_TIMELINE = os.path.join(ROOT, "bench", "busy_timeline.py")


def run(*args):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True)


class TimelineScriptsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def extract(self, archive):
        with tarfile.open(os.path.join(FIXTURES, archive)) as t:
            try:
                t.extractall(self.dir.name, filter="data")
            except TypeError:  # a Python without extraction filters (before 3.11.4)
                t.extractall(self.dir.name)
        return self.dir.name

    def events(self, folder, pattern):
        names = sorted(n for n in os.listdir(folder) if n.startswith("events_") and pattern in n)
        self.assertTrue(names, f"no events_*{pattern}* in {folder}")
        return [os.path.join(folder, n) for n in names]

    def test_best_at_time_gives_the_depth_table(self):
        folder = os.path.join(self.extract("depthtime_row_softmax.tgz"), "depthtime")
        p = run(BEST_AT_TIME, *self.events(folder, "row_softmax"), "--at", "10", "15", "20")
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = {line.split()[1]: line for line in p.stdout.splitlines()[1:]}
        self.assertEqual(sorted(rows), ["d0", "d2", "d3"])
        # The depth table: adaptive (d0) 32.87x / 34.72x / 34.72x with 33.7 evaluations by 20 s.
        self.assertIn("32.87x", rows["d0"])
        self.assertIn("34.72x (33.7)", rows["d0"])
        self.assertIn("34.51x (23.7)", rows["d2"])
        self.assertIn("34.12x (32.3)", rows["d3"])

    def test_best_at_time_names_a_file_without_a_group(self):
        path = os.path.join(self.dir.name, "events_row_softmax.jsonl")
        with open(path, "w") as f:
            f.write('{"event": "evaluated", "t_s": 1.0, "verdict": "passed", "speedup": 2.0}\n')
        p = run(BEST_AT_TIME, path)
        self.assertEqual(p.returncode, 2)
        self.assertIn("events_row_softmax.jsonl: no group in its name", p.stderr)

    def test_busy_timeline_breaks_the_counter_profiles_down(self):
        folder = os.path.join(self.extract("served_row_softmax.tgz"), "served")
        p = run(BUSY_TIMELINE, *self.events(folder, "row_softmax"))
        self.assertEqual(p.returncode, 0, p.stderr)
        # row_softmax's row: busy 85%, 6 counter jobs that all took the loop's evaluation.
        self.assertIn("(85%)", p.stdout)
        self.assertIn("counter jobs: 6,", p.stdout)
        self.assertIn("their evaluation again 0.0 s (6 took the evaluation the loop had)", p.stdout)
        self.assertIn("the profiles' runners:", p.stdout)
        self.assertIn("(14/14/14/14/14/14 passes)", p.stdout)


if __name__ == "__main__":
    unittest.main()
