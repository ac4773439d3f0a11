#!/usr/bin/env python3
"""The cost of an `evaluate` call of `kpilot mcp` over `kpilot eval` of the same candidate.

Both evaluate N variants of one candidate, each made distinct by a tag (a global the compiler
keeps), so neither is served from the other's cache or skipped as a duplicate: `kpilot eval` as a
fresh process each time, `evaluate` as calls to one server kept running (warm: its runner and
store open). Reports each side's median wall time per evaluation, the harness's own total_s
(compile + run) for both, and the difference: what the server adds or saves per call.

  bench/mcp_overhead.py --kpilot build/bin/kpilot TASK CANDIDATE [--n 8] [--json OUT]

The server is spoken to over raw JSON-RPC lines (no SDK needed), as any MCP client does.
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def variant(source: str, tag: int) -> str:
    return source + f"\nextern \"C\" {{ volatile int kpilot_bench_tag_{tag} = {tag}; }}\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("task")
    ap.add_argument("candidate")
    ap.add_argument("--kpilot", default="build/bin/kpilot")
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--workload", action="append", default=[])
    ap.add_argument("--json")
    a = ap.parse_args()
    source = Path(a.candidate).read_text()
    ext = Path(a.candidate).suffix
    wl = [x for w in a.workload for x in ("--workload", w)]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        store = tmp / "store"
        # kpilot eval, a process per evaluation.
        eval_wall, eval_total = [], []
        for i in range(a.n):
            f = tmp / f"eval_{i}{ext}"
            f.write_text(variant(source, i))
            t0 = time.perf_counter()
            out = subprocess.run([a.kpilot, "eval", a.task, str(f), "--store", str(store), "--json", *wl],
                                 capture_output=True, text=True)
            eval_wall.append(time.perf_counter() - t0)
            j = json.loads(out.stdout)
            eval_total.append(j["wall_s"]["total"])
            assert j["verdict"]["kind"] == "passed", j["verdict"]
        # One server, N evaluate calls. best_so_far starts the session's run first (evaluating the
        # starting candidate), so no timed call carries that.
        p = subprocess.Popen([a.kpilot, "mcp", a.task, "--from", a.candidate, "--store", str(store), "--max-evals",
                              str(a.n + 1), "--workspace", str(tmp), *wl],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        ids = iter(range(1, 10**6))

        def call(method, params):
            i = next(ids)
            p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
            p.stdin.flush()
            return json.loads(p.stdout.readline())

        call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench"}})
        call("tools/call", {"name": "best_so_far", "arguments": {}})  # starts the run (the root evaluated)
        mcp_wall, mcp_total, gated = [], [], []
        for i in range(a.n):
            t0 = time.perf_counter()
            r = call("tools/call", {"name": "evaluate",
                                    "arguments": {"source": variant(source, 1000 + i), "name": "variant" + ext}})
            mcp_wall.append(time.perf_counter() - t0)
            sc = r["result"]["structuredContent"]
            assert sc["verdict"] == "passed", sc
            mcp_total.append(sc.get("total_s", float("nan")))
            # A draft measured faster than the best is also timed against it (the paired gate).
            gated.append(sc.get("promotion") in ("promoted", "rejected"))
        p.stdin.close()
        p.wait(timeout=120)
    med = statistics.median
    res = {"n": a.n, "task": a.task, "candidate": a.candidate,
           "eval_wall_s": med(eval_wall), "eval_total_s": med(eval_total),
           "mcp_wall_s": med(mcp_wall), "mcp_total_s": med(mcp_total),
           "overhead_s": med(mcp_wall) - med(eval_wall), "gated_calls": sum(gated)}
    plain = [w for w, g in zip(mcp_wall, gated) if not g]
    res["mcp_wall_no_gate_s"] = med(plain) if plain else None
    print(f"kpilot eval (a process each): median {res['eval_wall_s']:.3f} s wall, harness total {res['eval_total_s']:.3f} s")
    print(f"evaluate (one warm server):   median {res['mcp_wall_s']:.3f} s wall, harness total {res['mcp_total_s']:.3f} s")
    print(f"difference per evaluation: {res['overhead_s']:+.3f} s (negative: the server is cheaper)")
    if plain:
        print(f"{sum(gated)} of {a.n} calls also ran the paired gate; without it: median {res['mcp_wall_no_gate_s']:.3f} s, "
              f"{res['mcp_wall_no_gate_s'] - res['eval_wall_s']:+.3f} s against kpilot eval")
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    sys.exit(main())
