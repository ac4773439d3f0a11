#!/usr/bin/env python3
"""KernelBench's timing procedure, reimplemented on its own from the documented procedure
(/work/shared/REFERENCES.md, "KernelBench"): build the model after seeding, move the inputs to
the GPU, 3 warmup calls, then 100 trials, each with a 256 MiB L2 flush, CUDA events on the current
stream around the call and a device synchronize after it; the figure is the mean.

It shares no timing code with kpilot's worker, so `kpilot eval --timing kernelbench` (the worker's
timing.time_kernelbench) can be compared with it on the same candidate:

  python3 bench/kernelbench_procedure.py PROBLEM.py [--model-new FILE.py | --native OBJ.so]
      [--seed 1] [--trials 100] [--warmup 3]

Prints one JSON line: {"problem", "candidate", "mean_ms", "std_ms", "min_ms", "max_ms", "trials",
"warmup", "flush_mib", "torch", "gpu"}.
"""

import argparse
import importlib.util
import json
import os
import statistics
import sys

import torch

FLUSH_BYTES = 256 << 20
MODEL_SEED = 42


def import_file(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    spec.loader.exec_module(module)
    sys.modules[name] = module
    return module


def construct(cls, problem):
    init_args = problem.get_init_inputs()
    torch.manual_seed(MODEL_SEED)
    torch.cuda.manual_seed(MODEL_SEED)
    return cls(*init_args).cuda()


def candidate_model(args, problem):
    if args.model_new:
        return construct(import_file(args.model_new, "candidate_model_new").ModelNew, problem), args.model_new
    reference = construct(problem.Model, problem)
    if args.native:
        # The ABI binding is kpilot's (there is no other); the timing below is not.
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
        from kpilot_torch.kernelbench import KernelBenchProblem
        from kpilot_torch import native
        adapter = KernelBenchProblem({"problem": os.path.abspath(args.problem)})
        return native.NativeModel(adapter, native.load_candidate_object(args.native), reference), args.native
    return reference, "reference"


def measure(model, inputs, warmup, trials):
    flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    stream = torch.cuda.current_stream()
    times = []
    with torch.no_grad():
        for _ in range(warmup):
            model(*inputs)
        torch.cuda.synchronize()
        for _ in range(trials):
            flush.fill_(0)
            begin = torch.cuda.Event(enable_timing=True)
            finish = torch.cuda.Event(enable_timing=True)
            begin.record(stream)
            model(*inputs)
            finish.record(stream)
            torch.cuda.synchronize()
            times.append(begin.elapsed_time(finish))
    return times


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("problem")
    p.add_argument("--model-new")
    p.add_argument("--native")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--trials", type=int, default=100)
    p.add_argument("--warmup", type=int, default=3)
    args = p.parse_args()
    if not torch.cuda.is_available():
        print(json.dumps({"error": "KernelBench's procedure times on a CUDA device; torch %s sees none" %
                          torch.__version__}))
        return 1
    problem = import_file(args.problem, "problem_under_test")
    model, label = candidate_model(args, problem)
    torch.manual_seed(args.seed)
    inputs = [a.cuda() if isinstance(a, torch.Tensor) else a for a in problem.get_inputs()]
    times = measure(model, inputs, args.warmup, args.trials)
    print(json.dumps({"problem": os.path.abspath(args.problem), "candidate": label,
                      "mean_ms": statistics.mean(times), "std_ms": statistics.pstdev(times),
                      "min_ms": min(times), "max_ms": max(times), "trials": len(times), "warmup": args.warmup,
                      "flush_mib": FLUSH_BYTES >> 20, "torch": torch.__version__,
                      "gpu": torch.cuda.get_device_name()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
