#!/usr/bin/env python3
"""`kpilot optimize` on cuda examples from their naive start, on the GPU machine, with NVML
utilization sampled while each run goes.

For each task: the best speedup over the naive reference (with its CI), the achieved fraction of
the roofline ceiling (from `kpilot profile` of the exported best, whose source carries its params),
and the pipelining share — the share of the run's wall time the evaluation queue held the GPU
(kpilot's own timestamps, `busy_share`), the runners' checks and timing proper within it (`proper`,
`checks_timing_share`: the strict share), and the share of NVML samples with utilization
> 0.

  bench/optimize_figures.py --kpilot .stage/bin/kpilot --budget 24 --out $OUT \
      examples/cuda/vector_add examples/cuda/transpose examples/cuda/row_softmax examples/cuda/sgemm

Standard library only. NVML through nvidia-smi's sampling loop (-lms), which needs no Python
bindings; the samples cover exactly the optimize process's lifetime.
"""
import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time


def sample_nvml(out_path, period_ms):
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None
    f = open(out_path, "w")
    return subprocess.Popen([smi, "--query-gpu=timestamp,utilization.gpu,power.draw", "--format=csv,noheader,nounits",
                             f"-lms={period_ms}"], stdout=f, stderr=subprocess.DEVNULL), f


def read_samples(path):
    util = []
    for line in open(path):
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 2:
            try:
                util.append(float(parts[1]))
            except ValueError:
                pass
    return util


def run(cmd, timeout):
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return p, time.monotonic() - t0


def run_timed(cmd, timeout):
    """Like run(), with each stderr line's arrival time (seconds from the start) beside it, so the
    progress events show where a run's wall time went. Returns (process result, wall, timed lines)."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = []
    reader = threading.Thread(target=lambda: out.append(p.stdout.read()))
    reader.start()
    lines = []
    timer = threading.Timer(timeout, p.kill)
    timer.start()
    try:
        for line in p.stderr:
            lines.append((time.monotonic() - t0, line.rstrip("\n")))
        p.wait()
    finally:
        timer.cancel()
        reader.join()
    wall = time.monotonic() - t0
    result = subprocess.CompletedProcess(cmd, p.returncode, out[0] if out else "", "\n".join(l for _, l in lines))
    return result, wall, lines


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tasks", nargs="+")
    ap.add_argument("--kpilot", default=".stage/bin/kpilot")
    ap.add_argument("--budget", type=int, default=24)
    ap.add_argument("--policy", default="mcts")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/kpilot-out"))
    ap.add_argument("--period-ms", type=int, default=50)
    ap.add_argument("--timeout", type=int, default=400, help="seconds per optimize run")
    ap.add_argument("--in-flight", type=int, default=0, help="kpilot optimize --in-flight N (0: its default)")
    ap.add_argument("--tag", default="", help="suffix for the output files (several settings in one $OUT)")
    ap.add_argument("--extra", default="", help="more `kpilot optimize` arguments, split like a shell, e.g. "
                    "\"--workload 8192x4096\" (the profile of the best gets its --workload too)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    store = tempfile.mkdtemp(prefix="kpilot-figures-")
    rows = []
    extra = shlex.split(a.extra)
    workload_args = [w for i, w in enumerate(extra) if w == "--workload" or (i and extra[i - 1] == "--workload")]
    for task in a.tasks:
        name = os.path.basename(task.rstrip("/"))
        print(f"== {name}", file=sys.stderr, flush=True)
        samples = os.path.join(a.out, f"nvml_{name}{a.tag}.csv")
        sampler = sample_nvml(samples, a.period_ms)
        try:
            argv = [a.kpilot, "optimize", task, "--budget", str(a.budget), "--policy", a.policy, "--json", "--store", store]
            if a.in_flight:
                argv += ["--in-flight", str(a.in_flight)]
            argv += extra
            p, wall, timed = run_timed(argv, a.timeout)
        finally:
            if sampler:
                sampler[0].terminate()
                sampler[0].wait()
                sampler[1].close()
        # The run's progress events (one JSON line each: proposals, evaluations, promotions), so a
        # figure shows which drafts got there; "t_s" is when the line arrived, seconds from the start.
        with open(os.path.join(a.out, f"events_{name}{a.tag}.jsonl"), "w") as f:
            for t, line in timed:
                if line.startswith("{"):
                    try:
                        e = json.loads(line)
                        e["t_s"] = round(t, 3)
                        line = json.dumps(e)
                    except json.JSONDecodeError:
                        pass
                    f.write(line + "\n")
            f.write(json.dumps({"event": "process_exit", "exit": p.returncode, "t_s": round(wall, 3)}) + "\n")
        row = {"task": name, "in_flight": a.in_flight or "default", "extra": a.extra, "wall_s": round(wall, 2), "exit": p.returncode}
        try:
            j = json.loads(p.stdout)
        except json.JSONDecodeError:
            row["error"] = (p.stderr or p.stdout)[-1500:]
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)
            continue
        final = j.get("final", {})
        row.update({"evaluations": j.get("evaluations"), "stop": j.get("stop_reason"), "best_params": j.get("best_params"),
                    "speedup": final.get("speedup_geomean"), "speedup_ci": final.get("speedup_geomean_ci"),
                    "baseline": final.get("baseline"), "busy_share": j.get("busy_share"),
                    "checks_timing_share": j.get("checks_timing_share")})
        if sampler:
            util = read_samples(samples)
            row["nvml_samples"] = len(util)
            row["nvml_busy_share"] = sum(1 for u in util if u > 0) / len(util) if util else None
            row["nvml_mean_util"] = sum(util) / len(util) if util else None
        # The exported best carries its params as #defines: profile it for the roofline fraction.
        out_dir = j.get("exported_to", "")
        src = [f for f in os.listdir(out_dir) if f.endswith(".cu")] if os.path.isdir(out_dir) else []
        if src:
            q, pwall = run([a.kpilot, "profile", task, os.path.join(out_dir, src[0]), "--json", "--store", store] + workload_args, a.timeout)
            try:
                pj = json.loads(q.stdout)
                k = max(pj["kernels"], key=lambda k: k["roofline"].get("floor_ms", 0)) if pj["kernels"] else {}
                r = k.get("roofline", {})
                row.update({"class": r.get("class"), "ceiling": r.get("ceiling"),
                            "achieved_fraction": r.get("achieved_fraction"), "profile_wall_s": round(pwall, 2),
                            "top_finding": (k.get("findings") or [{}])[0].get("id")})
            except (json.JSONDecodeError, KeyError, ValueError) as e:
                row["profile_error"] = f"{e}: {(q.stderr or q.stdout)[-800:]}"
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    with open(os.path.join(a.out, f"optimize_figures{a.tag}.json"), "w") as f:
        json.dump(rows, f, indent=1)
    print(f"{'task':<14} {'evals':>5} {'speedup':>9} {'CI':>17} {'class':<14} {'ceiling':<8} {'fraction':>8} "
          f"{'busy':>5} {'proper':>6} {'nvml':>5} {'wall s':>7}")
    for r in rows:
        ci = r.get("speedup_ci") or [0, 0]
        ci_text = f"[{ci[0]:.2f}, {ci[1]:.2f}]" if len(ci) == 2 else ""
        fmt = lambda v, spec: format(v, spec) if isinstance(v, (int, float)) else "-"
        print(f"{r['task']:<14} {fmt(r.get('evaluations'), '>5')} {fmt(r.get('speedup'), '>8.2f')}x {ci_text:>17} "
              f"{str(r.get('class', '-')):<14} {str(r.get('ceiling', '-')):<8} {fmt(r.get('achieved_fraction'), '>8.1%')} "
              f"{fmt(r.get('busy_share'), '>5.0%')} {fmt(r.get('checks_timing_share'), '>6.0%')} "
              f"{fmt(r.get('nvml_busy_share'), '>5.0%')} {r['wall_s']:>7.1f}")
        if "error" in r:
            print("   error:", r["error"][-300:])


if __name__ == "__main__":
    main()
