#!/usr/bin/env python3
"""The Slurm executor's cost and spread on a cluster started on this machine
(tests/slurm/local_cluster.sh, run as root):

1. overhead per evaluation: `kpilot eval` of one host candidate with --executor slurm against the
   local executor (medians of --runs), and with --torch PYTHON the same for a PyTorch-defined
   problem (kpilot's ReLU fixture and a right ModelNew, on the CPU torch device), whose torch
   worker runs as a job step of the allocation;
2. evaluations per minute of `kpilot bench` over a host suite (four small tasks, the params
   generator, --budget B each) on the local executor and through Slurm with 1, 2 and 4 nodes (one
   worker per node, --exclusive so two problems never share a node's cores).

  sudo python3 bench/slurm_figures.py --kpilot build/bin/kpilot --nodes 1,2,4 --budget 4

On one machine the nodes share its cores: the spread figures say what the executor adds and how
problems are spread, not what a real cluster's nodes would gain. Standard library only.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd, env=None, timeout=900):
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    return r, time.monotonic() - t0


def suite(dst):
    """Four host tasks at small sizes, one level."""
    easy = os.path.join(dst, "easy")
    os.makedirs(easy)
    for name, old, new in [("saxpy", "n = 33554432", "n = 262144"), ("sgemm", None, None),
                           ("row_softmax", "rows = 4096, cols = 1024", "rows = 256, cols = 1024"),
                           ("sum_reduction", None, None)]:
        shutil.copytree(os.path.join(ROOT, "examples", "host", name), os.path.join(easy, name))
        if old:
            p = os.path.join(easy, name, "task.toml")
            text = open(p).read()
            if old in text:
                open(p, "w").write(text.replace(old, new))
    return dst


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kpilot", default=os.path.join(ROOT, "build", "bin", "kpilot"))
    ap.add_argument("--nodes", default="1,2,4")
    ap.add_argument("--budget", type=int, default=4)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--torch", help="an interpreter with torch: time a PyTorch-defined problem's evaluation too")
    ap.add_argument("--json")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="kpilot-slurm-figures-")
    cluster_sh = os.path.join(ROOT, "tests", "slurm", "local_cluster.sh")
    figures = {"overhead": None, "bench": []}
    task = os.path.join(ROOT, "examples", "host", "saxpy")
    cand = os.path.join(task, "candidates", "omp_simd.cpp")
    s = suite(os.path.join(work, "suite"))
    for n in [0] + [int(x) for x in a.nodes.split(",")]:
        env = dict(os.environ)
        if n:
            cdir = os.path.join(work, f"cluster{n}")
            r, _ = run(["bash", cluster_sh, "start", cdir, str(n)])
            if r.returncode != 0:
                sys.exit("the local cluster did not start: " + r.stderr)
            env["SLURM_CONF"] = os.path.join(cdir, "slurm.conf")
            conf = os.path.join(work, f"slurm{n}.toml")
            open(conf, "w").write(f'[slurm]\nworkers = {n}\nheartbeat_s = 2\nsbatch_extra = ["--exclusive"]\n')
        try:
            if n in (0, 1):  # the overhead of one evaluation, local and on a 1-node cluster
                walls, alloc = [], []
                for _ in range(a.runs):
                    cmd = [a.kpilot, "eval", task, cand, "--workload", "12M-odd", "--no-store", "--json"]
                    if n:
                        cmd += ["--executor", "slurm", "--slurm-config", conf]
                    r, wall = run(cmd, env)
                    if r.returncode != 0:
                        sys.exit("kpilot eval failed: " + r.stderr[-2000:])
                    walls.append(wall)
                key = "slurm" if n else "local"
                figures.setdefault("eval", {})[key] = statistics.median(walls)
                if a.torch:
                    fx = os.path.join(ROOT, "tests", "python", "fixtures")
                    walls = []
                    for _ in range(a.runs):
                        cmd = [a.kpilot, "eval", os.path.join(fx, "relu_problem.py"), os.path.join(fx, "relu_new_ok.py"),
                               "--python", a.torch, "--no-store", "--json"]
                        if n:
                            cmd += ["--executor", "slurm", "--slurm-config", conf]
                        r, wall = run(cmd, dict(env, KPILOT_TORCH_DEVICE="cpu"))
                        if r.returncode != 0:
                            sys.exit("kpilot eval of the PyTorch problem failed: " + r.stderr[-2000:])
                        walls.append(wall)
                    figures.setdefault("torch_eval", {})[key] = statistics.median(walls)
            store = os.path.join(work, f"store{n}")
            cmd = [a.kpilot, "bench", s, "--generator", "params", "--budget", str(a.budget), "--max-seconds", "0.3",
                   "--store", store, "--json"]
            if n:
                cmd += ["--executor", "slurm", "--slurm-config", conf]
            r, wall = run(cmd, env, timeout=1800)
            if r.returncode != 0:
                sys.exit("kpilot bench failed: " + r.stderr[-2000:])
            rep = json.loads(r.stdout)
            evals = rep["total"]["cost"]["evaluations"]
            figures["bench"].append({"executor": "slurm" if n else "local", "nodes": n, "wall_s": wall,
                                     "evaluations": evals, "per_minute": 60 * evals / wall,
                                     "correct": rep["total"]["correct"], "problems": rep["total"]["problems"]})
        finally:
            if n:
                run(["bash", cluster_sh, "stop", cdir])
    e = figures["eval"]
    print(f"one evaluation (kpilot eval, host saxpy 12M-odd, median of {a.runs}): local {e['local']:.2f} s, "
          f"through Slurm {e['slurm']:.2f} s: +{e['slurm'] - e['local']:.2f} s (allocation, job step, heartbeat)")
    if a.torch:
        t = figures["torch_eval"]
        print(f"one evaluation of a PyTorch-defined problem (the ReLU fixture, CPU torch, median of {a.runs}): "
              f"local {t['local']:.2f} s, through Slurm {t['slurm']:.2f} s: +{t['slurm'] - t['local']:.2f} s")
    print("| executor | nodes | problems correct | evaluations | wall s | evaluations per minute |")
    print("|---|---:|---:|---:|---:|---:|")
    for b in figures["bench"]:
        print(f"| {b['executor']} | {b['nodes'] or '—'} | {b['correct']}/{b['problems']} | {b['evaluations']} | "
              f"{b['wall_s']:.1f} | {b['per_minute']:.1f} |")
    if a.json:
        json.dump(figures, open(a.json, "w"), indent=1)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
