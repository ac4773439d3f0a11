#!/usr/bin/env python3
"""kill -9 a live `kpilot optimize` where it hurts most, resume it, and count what was lost or
repeated.

    bench/kill_resume.py TASK [--budget 12] [--kills 2] [--min-nodes 2] [--kpilot build/bin/kpilot] [--out FILE.json]
                         [-- extra optimize args]

The run is killed the moment the store holds an evaluation that has ended (a `result` event
naming a proposal) but no node for it yet: the window in which the loop is busy proposing,
profiling or timing a promotion check while the GPU finishes the next batch. Each kill is
followed by `--resume`; the last resume runs to the end. Then, from the store:
  - nodes: one per proposal, and as many as the budget (nothing lost);
  - evaluations run: `result` events per proposal, over every process (1 each: nothing repeated);
  - served: what each resume took from the journal (its `resume` event's journaled_results).
  - runners left: kpilot-runner, torch worker and ncu processes still alive 3 s after each kill. A
    runner runs in its own process group, so the kill does not reach it; it stops itself once
    no one reads its stdout (a runner that finished its evaluation alone would hold the GPU's
    timing lock while the resumed run waited for it).
Exits 1 when something was lost or repeated, when a runner outlived a kill, or when no kill
landed in a window.
"""
import argparse
import collections
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

from kill_caller import evaluation_processes  # bench/: the script's own folder

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def query(db, sql, args=()):
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        try:
            return con.execute(sql, args).fetchall()
        finally:
            con.close()
    except sqlite3.Error:
        return None


def journaled_without_node(db):
    rows = query(db, "SELECT payload_json FROM run_events WHERE run_id = 1 AND kind = 'result'")
    nodes = query(db, "SELECT proposal FROM run_nodes WHERE run_id = 1")
    if rows is None or nodes is None:
        return set()
    done = {json.loads(p).get("proposal") for (p,) in rows} - {None}
    return done - {n for (n,) in nodes}


def start(cmd, log):
    # Progress goes to a file: a pipe nobody reads would fill and stall kpilot.
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("task")
    ap.add_argument("--budget", type=int, default=12)
    ap.add_argument("--kills", type=int, default=2)
    ap.add_argument("--min-nodes", type=int, default=2, help="nodes each process records before it may be killed")
    ap.add_argument("--kpilot", default=os.path.join(ROOT, "build/bin/kpilot"))
    ap.add_argument("--store", default=None, help="store folder (default: a fresh temporary one)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--timeout", type=float, default=400)
    ap.add_argument("extra", nargs="*")
    a = ap.parse_args()
    if a.store:
        shutil.rmtree(a.store, ignore_errors=True)  # run 1 must be this run
    store = a.store or tempfile.mkdtemp(prefix="kpilot-kill-resume-")
    log = open(os.path.join(tempfile.mkdtemp(prefix="kpilot-kill-resume-log-"), "progress.jsonl"), "w")
    db = os.path.join(store, "kpilot.db")
    first = [a.kpilot, "optimize", a.task, "--budget", str(a.budget), "--store", store, "--json"] + a.extra
    resume = [a.kpilot, "optimize", "--resume", "1", "--store", store, "--json"]
    kills = []
    others = set(evaluation_processes(set()))  # another kpilot's, alive before this run started
    t_end = time.monotonic() + a.timeout
    for k in range(a.kills + 1):
        p = start(first if k == 0 else resume, log)
        if k == a.kills:
            try:
                p.wait(timeout=max(1, t_end - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                sys.exit(f"the last resume did not finish in time (progress: {log.name})")
            if p.returncode not in (0, 1):
                sys.exit(f"the last resume exited {p.returncode} (progress: {log.name})")
            break
        caught = None
        # A new window: past the last kill's node count, with an unrecorded result the last kill
        # did not leave behind.
        before = kills[-1]["nodes_at_kill"] if kills else 0
        left = set(kills[-1]["ended_but_unrecorded"]) if kills else set()
        while p.poll() is None and time.monotonic() < t_end:
            count = query(db, "SELECT COUNT(*) FROM run_nodes WHERE run_id = 1")
            lost = journaled_without_node(db) - left
            if lost and count and count[0][0] >= before + a.min_nodes:
                caught = lost
                os.killpg(p.pid, signal.SIGKILL)
                break
            time.sleep(0.01)
        if p.poll() is None and caught is None:  # the deadline passed with no window
            os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        at_kill = list(evaluation_processes(others))
        time.sleep(3)
        survivors = [r for r in evaluation_processes(others) if r in at_kill]
        if survivors:
            print(f"after kill {k}, still up 3 s later: pids {survivors}", file=sys.stderr)
        nodes = query(db, "SELECT COUNT(*) FROM run_nodes WHERE run_id = 1") or [(0,)]
        kills.append({"process": k, "killed": caught is not None, "nodes_at_kill": nodes[0][0],
                      "ended_but_unrecorded": sorted(caught or []), "runners_at_kill": len(at_kill),
                      "runners_left_after_3s": len(survivors)})
        if caught is None:
            print(f"process {k} ended (exit {p.returncode}) before a window was seen", file=sys.stderr)
            break

    rows = query(db, "SELECT status, stop_reason, best_speedup FROM runs WHERE id = 1")
    if not rows:
        sys.exit(f"no run 1 in {db} (progress: {log.name})")
    status = rows[0]
    nodes = query(db, "SELECT node, proposal, verdict, speedup FROM run_nodes WHERE run_id = 1 ORDER BY node")
    events = query(db, "SELECT seq, kind, payload_json FROM run_events WHERE run_id = 1 ORDER BY seq")
    per_proposal = collections.Counter()
    gates = collections.Counter()
    finals = collections.Counter()
    served = []
    for seq, kind, payload in events:
        p = json.loads(payload)
        if kind == "result":
            if "proposal" in p:
                per_proposal[p["proposal"]] += 1
            elif "gate" in p:
                gates[(p["gate"], p["incumbent"])] += 1
            elif "final" in p:
                finals[p["final"]] += 1
        if kind == "resume":
            served.append(p.get("journaled_results", 0))
    node_proposals = collections.Counter(n[1] for n in nodes)
    repeated = {str(k): v for k, v in per_proposal.items() if v > 1}
    repeated_gates = {f"{c}/{i}": v for (c, i), v in gates.items() if v > 1}
    report = {
        "task": a.task, "budget": a.budget, "store": store, "run": {"status": status[0], "stop": status[1],
                                                                   "best_speedup": status[2]},
        "kills": kills, "served_from_journal_per_resume": served,
        "nodes": len(nodes), "proposals_with_two_nodes": [k for k, v in node_proposals.items() if v > 1],
        "evaluations_run": sum(per_proposal.values()), "repeated_evaluations": repeated,
        "promotion_checks_run": sum(gates.values()), "repeated_promotion_checks": repeated_gates,
        "final_evaluations_run": sum(finals.values()),
        "nodes_without_a_journaled_evaluation": [n[0] for n in nodes if n[1] not in per_proposal],
    }
    # Nothing lost: the budget is spent (unless the run stopped for another reason). Nothing
    # repeated: one journaled evaluation per proposal and check. And the test tested something:
    # every planned kill landed in a window, and the resumes served results from the journal.
    spent = len(nodes) == a.budget or status[1] != "budget"
    ok = (status[0] == "finished" and spent and not repeated and not repeated_gates
          and not report["proposals_with_two_nodes"] and not report["nodes_without_a_journaled_evaluation"]
          and sum(finals.values()) == 1 and len(kills) == a.kills and all(k["killed"] for k in kills)
          and not any(k["runners_left_after_3s"] for k in kills)
          and sum(served) > 0)
    report["ok"] = ok
    text = json.dumps(report, indent=2)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
