"""A stand-in for kpilot's torch worker (tests/pytorch): prints canned replies.

Behaviour from $KPILOT_FAKE_WORKER: ok (default), error, junk_then_ok, no_torch, crash,
crash_running (describes, then dies when asked to run), incorrect. Every request is copied to $KPILOT_FAKE_WORKER_LOG when set (one JSON per line).
"""
import json
import os
import sys

DESCRIBE = {
    "version": 1, "status": "ok", "name": "19_ReLU", "torch": "2.0.0+fake", "cuda": False,
    "inputs": [{"name": "x", "dtype": "f32", "shape": ["batch_size", "dim"], "role": "input"},
               {"name": "weight", "dtype": "f32", "shape": ["weight_d0"], "role": "param"}],
    "scalars": [{"name": "k", "dtype": "i64", "value": 3}],
    "outputs": [{"name": "out", "dtype": "f32", "shape": ["batch_size", "dim"]}],
    "axes": {"batch_size": 16, "dim": 64, "weight_d0": 8},
    "tolerance": {"atol": 1e-4, "rtol": 1e-4},
    "flops": 0, "bytes": 8224,
}


def run_result(request, status):
    names = [w["name"] for w in request["workloads"]]
    result = {
        "kpilot_result_version": 1, "status": status, "phase": "done",
        "message": "all checks passed" if status == "passed" else "out differs at index 3",
        "checks": [{"workload": n, "seed": s, "output": "out", "numel": 1024,
                    "mismatches": 0 if status == "passed" else 5, "max_abs_error": 0.0 if status == "passed" else 1.5,
                    "max_rel_error": 0.0, "first_bad_index": -1 if status == "passed" else 3,
                    "first_bad_value": 0.0, "first_bad_expected": 0.0, "guards_intact": True,
                    "ok": status == "passed"}
                   for n in names for s in request["seeds"]],
        "timings": [], "warnings": [], "wall_s": 0.5,
        "details": {"torch": "2.0.0+fake", "gpu": "fake GPU", "candidate_setup_s": 0.1, "baseline_setup_s": 0.0,
                    "exploits": []},
    }
    if status == "passed" and request.get("time", True):
        result["timings"] = [{"workload": n, "candidate_ms": [1.0, 1.1, 0.9, 1.0, 1.0],
                              "baseline_ms": [2.0, 2.2, 1.8, 2.0, 2.0], "method": "fake events",
                              "statistic": "median"} for n in names]
    return result


def main():
    mode, path = sys.argv[1], sys.argv[2]
    with open(path) as f:
        request = json.load(f)
    log = os.environ.get("KPILOT_FAKE_WORKER_LOG")
    if log:
        with open(log, "a") as f:
            f.write(json.dumps({"mode": mode, "request": request, "cwd": os.getcwd(),
                                "pythonpath": os.environ.get("PYTHONPATH", "")}) + "\n")
    behaviour = os.environ.get("KPILOT_FAKE_WORKER", "ok")
    if behaviour == "no_torch":
        raise ModuleNotFoundError("No module named 'torch'")
    if behaviour == "crash" or (behaviour == "crash_running" and mode != "describe"):
        sys.stderr.write("Fatal Python error: Segmentation fault\n")
        os._exit(139 - 128)
    if behaviour == "error":
        print(json.dumps({"version": 1, "status": "error",
                          "message": request["problem"] + ": get_inputs() is missing — define it"}))
        return
    if behaviour == "junk_then_ok":
        print("candidate chatter {not json")
        print('{"partial": ')
    if mode == "describe":
        print(json.dumps(DESCRIBE))
    else:
        print(json.dumps(run_result(request, "incorrect" if behaviour == "incorrect" else "passed")))


main()
