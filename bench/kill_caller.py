#!/usr/bin/env python3
"""kill -9 a `kpilot` command while its runner holds the GPU, and time how long the runner (and
ncu, and the torch worker) outlive it and keep the GPU's timing lock.

    bench/kill_caller.py [--kpilot build/bin/kpilot] [--after 1.0] [--until NAME] [--out FILE.json]
                         -- ARGS... [--- ARGS...]

Each ARGS is one kpilot command line (without the program), e.g.
`eval examples/cuda/sgemm examples/cuda/sgemm/reference.cu --no-store`; cases are separated by
`---`. For each: start it in its own session, wait until an evaluation process is up (and, on a
GPU, holds its lock: an flock on $KPILOT_LOCK_DIR/kpilot-gpu-0.lock, /tmp by default; with
--until ncu, until ncu is up too), wait --after seconds more, kill kpilot's process group
with SIGKILL, then poll every 20 ms until no
evaluation process of this case is left and the lock can be taken. Reported per case: whether
the lock was held at the kill, seconds until it was free, seconds until the last process ended,
and what was still up after 10 s. kpilot-runner and the worker run in process groups of their
own, so the kill does not reach them: they stop once no one reads their stdout.
Exits 1 when a process outlived the kill by more than 3 s or a case never got going.
"""
import argparse
import fcntl
import json
import os
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WATCHED = (b"kpilot-runner", b"kpilot_torch.worker", b"ncu")


def evaluation_processes(exclude):
    """{pid: first word} of the kpilot-runner, torch worker and ncu processes not in `exclude`."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) in exclude:
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and any(w in cmd for w in WATCHED):
            out[int(pid)] = os.path.basename(cmd.split(b"\0")[0].decode(errors="replace"))
    return out


def lock_is_held(path):
    """True when another process holds the flock; None when there is no lock file."""
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def run_case(kpilot, args, after, lock, timeout, until):
    before = set(evaluation_processes(set()))
    p = subprocess.Popen([kpilot] + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         start_new_session=True)
    t0 = time.monotonic()
    up = {}
    while time.monotonic() - t0 < timeout and p.poll() is None:
        up = evaluation_processes(before | {p.pid})
        wanted = not until or until in up.values()
        if up and wanted and lock_is_held(lock) is not False:  # held, or no lock file (host backend)
            break
        time.sleep(0.02)
    case = {"command": "kpilot " + " ".join(args)}
    if p.poll() is not None or not up:
        p.kill()
        p.wait()
        case["error"] = f"no evaluation process came up (kpilot exit {p.returncode}): " + p.stderr.read().decode()[-800:]
        return case
    time.sleep(after)
    case["processes_at_kill"] = sorted(evaluation_processes(before | {p.pid}).values())
    case["lock_held_at_kill"] = lock_is_held(lock)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    killed = time.monotonic()
    lock_free_s = gone_s = None
    while time.monotonic() - killed < 10 and (lock_free_s is None or gone_s is None):
        now = time.monotonic() - killed
        if lock_free_s is None and not lock_is_held(lock):
            lock_free_s = round(now, 3)
        if gone_s is None and not evaluation_processes(before):
            gone_s = round(now, 3)
        time.sleep(0.02)
    case["lock_free_after_s"] = lock_free_s
    case["processes_gone_after_s"] = gone_s
    case["left_after_10s"] = sorted(evaluation_processes(before).values())
    for pid in evaluation_processes(before):  # leave the machine as we found it
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return case


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kpilot", default=os.path.join(ROOT, "build/bin/kpilot"))
    ap.add_argument("--after", type=float, default=1.0, help="seconds between the runner taking the GPU and the kill")
    ap.add_argument("--timeout", type=float, default=120, help="seconds to wait for a case's runner to start")
    ap.add_argument("--until", default=None, help="also wait for a process of this name, e.g. ncu")
    ap.add_argument("--out", default=None)
    ap.add_argument("cases", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    words = a.cases[1:] if a.cases[:1] == ["--"] else a.cases
    cases, cur = [], []
    for w in words + ["---"]:
        if w == "---":
            if cur:
                cases.append(cur)
            cur = []
        else:
            cur.append(w)
    if not cases:
        sys.exit("give at least one kpilot command line after --, e.g. -- eval TASK CANDIDATE --no-store")
    lock = os.path.join(os.environ.get("KPILOT_LOCK_DIR") or "/tmp", "kpilot-gpu-0.lock")
    report = [run_case(a.kpilot, c, a.after, lock, a.timeout, a.until) for c in cases]
    for r in report:
        print(json.dumps(r), flush=True)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(report, f, indent=2)
    bad = [r for r in report if "error" in r or r["processes_gone_after_s"] is None or r["processes_gone_after_s"] > 3]
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
