#!/usr/bin/env python3
"""Profile verification: does `kpilot profile` name the class and the top finding a kernel
expert expects, how long does it take against one `ncu --set full` run, and does its top finding
agree with the one every tool reaches on the full data?

    bench/profile_verify.py [--kpilot .stage/bin/kpilot] [--set tuning|heldout2|all] [--only NAME,...]
                            [--out DIR] [--timeout 300] [--no-static] [--no-full] [--no-ncu-profiler]
                            [--sass] [--traces] [--keep-files]
    bench/profile_verify.py --check-manifest [--kpilot build/bin/kpilot] [--static]

Runs from the repository root on the GPU machine (python3 standard library only). The kernels and
their expectations are in bench/profile_set/manifest.toml (see bench/profile_set/README.md). For
each entry (a task and one candidate):

  static     kpilot profile TASK CAND --static --json --no-store          (saved as NAME.static.json)
  two-stage  kpilot profile TASK CAND --json --raw --no-store             (default profiler; wall clock
                                                                           around the whole process)
  ncu        the same with --profiler ncu
  full       kpilot profile TASK CAND --json --raw --no-store --profiler ncu --ncu-set full --all-tools
             --save-raw NAME.ncu.csv   (the ncu process's own wall time in its JSON, "ncu_wall_s" or
             "profiler_wall_s" with "profiler": "ncu", is the one fresh ncu --set full run)
  imported   kpilot profile --import-ncu NAME.ncu.csv --json --all-tools  (no task context; no GPU)

The kernel that matters, when a candidate has several: the one with the longest mean
gpu__time_duration.sum (from --raw); without durations, the first kernel with findings; else the
first. Its roofline class is "the class" and its first finding (kpilot ranks by severity) "the top
finding".

Output in --out DIR: profile_verify.json (every record and the summaries), profile_verify.txt (the
table and summaries, also printed) and profile_set.tar.gz (every per-kernel file: the JSON of each
run, ncu CSVs, static profiles, stderr logs, versions, optional SASS and traces). Progress goes to
stderr. A failing run is recorded with its exit status and stderr tail; the next one goes on.

--check-manifest validates the manifest without a GPU: files exist, tasks are cuda with one
workload, classes and tool ids are known (ids and classes parsed from `kpilot profile --list-tools`),
every candidate under bench/profile_set has an entry; --static also runs the static profile of each
entry (needs nvcc), which loads and validates each task.toml.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SET_DIR = os.path.join(ROOT, "bench", "profile_set")
MANIFEST = os.path.join(SET_DIR, "manifest.toml")
# The sets an entry may name. "heldout2" is the current held-out set; the entries of the first
# held-out set ("heldout") count as "tuning", because their results were used to tune tools.
SETS = ("tuning", "heldout2")
HELDOUT = "heldout2"
# The folders under bench/profile_set that hold tasks: a held-out entry's task lies in its set's
# folder; a tuning entry's in tuning/ or in the folder of a retired held-out set (heldout/).
SET_FOLDERS = ("tuning", "heldout", "heldout2")
ENTRY_KEYS = {"name", "set", "task", "candidate", "expected_class", "class_also_ok", "expected_top", "also_ok",
              "why", "timeout_s"}


# ---- manifest ----------------------------------------------------------------------------------

def parse_toml_subset(text):
    """The manifest's TOML subset, for Pythons without tomllib: [[entry]] tables whose values are
    strings, numbers or one-line arrays of strings; comments; nothing else."""
    entries, current = [], None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line == "[[entry]]":
            current = {}
            entries.append(current)
            continue
        m = re.match(r'^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.+?)\s*(#[^"\]]*)?$', line)
        if not m or current is None:
            raise ValueError(f"manifest.toml:{lineno}: cannot parse {raw!r}")
        key, value = m.group(1), m.group(2)
        if value.startswith('"'):
            current[key] = json.loads(value)
        elif value.startswith("["):
            current[key] = json.loads(value) if value != "[]" else []
        else:
            current[key] = float(value) if "." in value else int(value)
    return {"entry": entries}


def load_manifest(path=MANIFEST):
    with open(path, "rb") as f:
        data = f.read()
    try:
        import tomllib  # Python 3.11+
        doc = tomllib.loads(data.decode())
    except ImportError:
        doc = parse_toml_subset(data.decode())
    entries = doc.get("entry", [])
    for e in entries:
        e.setdefault("class_also_ok", [])
        e.setdefault("also_ok", [])
    return entries


def task_facts(task_dir):
    """What the checks need from a task.toml, read as text: backend, reference, workload count."""
    with open(os.path.join(task_dir, "task.toml")) as f:
        text = f.read()
    def key(name):
        m = re.search(r'^' + name + r'\s*=\s*"([^"]*)"', text, re.M)
        return m.group(1) if m else None
    return {"backend": key("backend"), "reference": key("reference"),
            "workloads": len(re.findall(r"^\[\[workloads\]\]", text, re.M)),
            "bytes": bool(re.search(r'^bytes\s*=', text, re.M))}


# ---- running kpilot ----------------------------------------------------------------------------

def tail(text, n=1500):
    return text[-n:] if text else ""


def child_env():
    """The environment for kpilot: a staged build (scripts/stage.sh) brings its own shared libraries."""
    env = dict(os.environ)
    staged_lib = os.path.join(ROOT, ".stage", "lib")
    if os.path.isdir(staged_lib):
        env["LD_LIBRARY_PATH"] = staged_lib + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return env


def run(argv, timeout, log_path=None):
    """Runs argv; returns (rc, stdout, stderr, wall seconds). rc is None on a timeout."""
    start = time.monotonic()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=child_env())
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc = None
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = (e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")) + \
            f"\n[profile_verify] timed out after {timeout} s"
    except OSError as e:
        rc, out, err = 127, "", f"[profile_verify] cannot run {argv[0]}: {e}"
    wall = time.monotonic() - start
    if log_path:
        with open(log_path, "w") as f:
            f.write("$ " + " ".join(argv) + f"\n# rc={rc} wall={wall:.2f}s\n--- stderr\n{err}\n--- stdout\n{out}")
    return rc, out, err, wall


def parse_json(stdout):
    try:
        return json.loads(stdout)
    except ValueError:
        start = stdout.find("{")
        if start < 0:
            return None
        try:
            return json.loads(stdout[start:])
        except ValueError:
            return None


def find_key(doc, key):
    """doc[key], or the first value of that key found in nested objects."""
    if isinstance(doc, dict):
        if key in doc:
            return doc[key]
        for v in doc.values():
            found = find_key(v, key)
            if found is not None:
                return found
    return None


def kernel_that_matters(kernels):
    timed = [k for k in kernels if isinstance(k.get("metrics"), dict) and "gpu__time_duration.sum" in k["metrics"]]
    if timed:
        return max(timed, key=lambda k: k["metrics"]["gpu__time_duration.sum"])
    with_findings = [k for k in kernels if k.get("findings")]
    if with_findings:
        return with_findings[0]
    return kernels[0] if kernels else None


def summarize_profile(doc):
    """The class, top finding and findings of the kernel that matters in `kpilot profile --json`."""
    kernels = doc.get("kernels", []) if isinstance(doc, dict) else []
    k = kernel_that_matters(kernels)
    if k is None:
        return {"kernel": None, "class": None, "top": None, "top_severity": None, "findings": []}
    findings = k.get("findings", [])
    roofline = k.get("roofline", {})
    metrics = k.get("metrics") if isinstance(k.get("metrics"), dict) else {}
    return {
        "kernel": k.get("kernel"),
        "kernels": len(kernels),
        "class": roofline.get("class"),
        "analytic": roofline.get("analytic"),
        "measured": roofline.get("measured"),
        "top": findings[0]["id"] if findings else None,
        "top_severity": findings[0].get("severity") if findings else None,
        "findings": [[f.get("id"), round(f.get("severity", 0), 3)] for f in findings],
        "kernel_time_ns": metrics.get("gpu__time_duration.sum"),
    }


def profile_step(label, argv, timeout, files, stem):
    """One kpilot run: its wall time, exit status and summary; the JSON and log saved in files/."""
    rc, out, err, wall = run(argv, timeout, os.path.join(files, f"{stem}.{label}.log"))
    rec = {"argv": argv, "rc": rc, "wall_s": round(wall, 3)}
    doc = parse_json(out) if rc == 0 else None
    if doc is None:
        rec["error"] = tail(err or out) or f"exit {rc}"
        return rec, None
    with open(os.path.join(files, f"{stem}.{label}.json"), "w") as f:
        json.dump(doc, f, indent=1)
    rec.update(summarize_profile(doc))
    header = {k: v for k, v in doc.items() if k != "kernels"}
    for key in ("ncu_wall_s", "profiler_wall_s", "profile_wall_s", "profiler", "profiler_note", "ncu", "time_ms"):
        v = find_key(header, key)
        if v is not None:
            rec[key] = v
    # The seconds of the ncu process alone: "ncu_wall_s", or the profiler's wall when it was ncu.
    if "ncu_wall_s" not in rec and rec.get("profiler") == "ncu" and rec.get("profiler_wall_s") is not None:
        rec["ncu_wall_s"] = rec["profiler_wall_s"]
    return rec, doc


def progress(msg):
    print(f"[profile_verify] {msg}", file=sys.stderr, flush=True)


def verify_entry(e, a, files, index, total):
    name = e["name"]
    task = os.path.join("bench", "profile_set", e["task"])
    cand = os.path.join(task, e["candidate"])
    timeout = e.get("timeout_s", a.timeout)
    rec = {"name": name, "set": e["set"], "task": task, "candidate": cand,
           "expected": {"class": e["expected_class"], "class_also_ok": e["class_also_ok"],
                        "top": e["expected_top"], "also_ok": e["also_ok"], "why": e.get("why", "")}}
    base = [a.kpilot, "profile", task, cand, "--json", "--no-store"]

    if not a.no_static:
        progress(f"[{index}/{total}] {name}: static profile")
        rec["static"], _ = profile_step("static", base + ["--static"], timeout, files, name)

    progress(f"[{index}/{total}] {name}: two-stage profile (default profiler)")
    rec["two_stage"], _ = profile_step("two_stage", base + ["--raw"], timeout, files, name)
    progress(f"  {rec['two_stage'].get('wall_s')} s, class {rec['two_stage'].get('class')}, "
             f"top {rec['two_stage'].get('top')}" + (" (FAILED)" if "error" in rec["two_stage"] else ""))

    if not a.no_ncu_profiler:
        progress(f"[{index}/{total}] {name}: two-stage profile (--profiler ncu)")
        rec["two_stage_ncu"], _ = profile_step("two_stage_ncu", base + ["--raw", "--profiler", "ncu"], timeout, files,
                                               name)
        progress(f"  {rec['two_stage_ncu'].get('wall_s')} s, top {rec['two_stage_ncu'].get('top')}"
                 + (" (FAILED)" if "error" in rec["two_stage_ncu"] else ""))

    if not a.no_full:
        progress(f"[{index}/{total}] {name}: full run (--ncu-set full --all-tools)")
        csv_path = os.path.join(files, f"{name}.ncu.csv")
        rec["full"], _ = profile_step("full", base + ["--raw", "--profiler", "ncu", "--ncu-set", "full", "--all-tools",
                                                      "--save-raw", csv_path], timeout, files, name)
        progress(f"  {rec['full'].get('wall_s')} s (ncu {rec['full'].get('ncu_wall_s')} s), "
                 f"top {rec['full'].get('top')}" + (" (FAILED)" if "error" in rec["full"] else ""))
        if os.path.exists(csv_path):
            rec["imported"], _ = profile_step("imported", [a.kpilot, "profile", "--import-ncu", csv_path, "--json",
                                                           "--all-tools"], timeout, files, name)

    if a.traces:
        progress(f"[{index}/{total}] {name}: kpilot eval --json (launch traces)")
        rc, out, err, wall = run([a.kpilot, "eval", task, cand, "--json", "--no-store"], timeout,
                                 os.path.join(files, f"{name}.eval.log"))
        if rc is not None and out.strip():
            with open(os.path.join(files, f"{name}.eval.json"), "w") as f:
                f.write(out)
        rec["eval"] = {"rc": rc, "wall_s": round(wall, 3)}
    judge(rec)
    return rec


def judge(rec):
    exp = rec["expected"]
    got = rec.get("two_stage", {})
    ok_classes = [exp["class"]] + exp["class_also_ok"]
    ok_tops = [exp["top"]] + exp["also_ok"]
    rec["class_ok"] = got.get("class") in ok_classes if "error" not in got else None
    rec["top_ok"] = got.get("top") in ok_tops if "error" not in got else None
    ncu = rec.get("two_stage_ncu")
    if ncu is not None and "error" not in ncu:
        rec["ncu_class_ok"] = ncu.get("class") in ok_classes
        rec["ncu_top_ok"] = ncu.get("top") in ok_tops
    full = rec.get("full")
    if full is not None and "error" not in full and "error" not in got:
        rec["agree"] = got.get("top") == full.get("top")
        if ncu is not None and "error" not in ncu:
            rec["ncu_agree"] = ncu.get("top") == full.get("top")
        full_ncu = full.get("ncu_wall_s")
        rec["ratio_basis"] = "ncu_wall_s" if full_ncu else "full_process_wall_s"
        denominator = full_ncu if full_ncu else full.get("wall_s")
        if denominator:
            rec["ratio"] = round(got["wall_s"] / denominator, 3)


# ---- summaries and the table -------------------------------------------------------------------

def rate(values):
    known = [v for v in values if v is not None]
    return {"n": len(known), "ok": sum(1 for v in known if v), "rate": round(sum(1 for v in known if v) / len(known), 3)
            if known else None}


def summarize(records):
    out = {}
    for s in SETS + ("all",):
        rs = [r for r in records if s == "all" or r["set"] == s]
        if not rs:
            continue
        ratios = [r["ratio"] for r in rs if r.get("ratio") is not None]
        out[s] = {
            "entries": len(rs),
            "class_accuracy": rate([r.get("class_ok") for r in rs]),
            "top_accuracy": rate([r.get("top_ok") for r in rs]),
            "class_accuracy_ncu_profiler": rate([r.get("ncu_class_ok") for r in rs]),
            "top_accuracy_ncu_profiler": rate([r.get("ncu_top_ok") for r in rs]),
            "agreement": rate([r.get("agree") for r in rs]),
            "agreement_ncu_profiler": rate([r.get("ncu_agree") for r in rs]),
            "median_ratio": round(statistics.median(ratios), 3) if ratios else None,
            "max_ratio": round(max(ratios), 3) if ratios else None,
            "ratios_at_most_quarter": sum(1 for x in ratios if x <= 0.25),
            "failures": [r["name"] for r in rs if any("error" in r.get(k, {}) for k in
                                                       ("two_stage", "two_stage_ncu", "full"))],
        }
    return out


def yn(v):
    return "-" if v is None else ("yes" if v else "NO")


def render(records, summary):
    cols = ["name", "set", "expected class", "expected top", "got class", "got top", "ok", "full-data top",
            "agree", "2-stage s", "ncu full s", "ratio"]
    rows = []
    for r in records:
        g, f = r.get("two_stage", {}), r.get("full", {})
        exp = r["expected"]
        got_class = "FAILED" if "error" in g else str(g.get("class"))
        got_top = "FAILED" if "error" in g else str(g.get("top"))
        ok = f"{yn(r.get('class_ok'))}/{yn(r.get('top_ok'))}"
        full_top = "-" if not f else ("FAILED" if "error" in f else str(f.get("top")))
        ncu_s = f.get("ncu_wall_s") or (f.get("wall_s") if f and "error" not in f else None)
        rows.append([r["name"], r["set"], exp["class"], exp["top"], got_class, got_top, ok, full_top,
                     yn(r.get("agree")), f"{g['wall_s']:.1f}" if g.get("wall_s") is not None else "-",
                     f"{ncu_s:.1f}" if ncu_s else "-", f"{r['ratio']:.2f}" if r.get("ratio") is not None else "-"])
    widths = [max(len(c), *(len(row[i]) for row in rows)) if rows else len(c) for i, c in enumerate(cols)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths)), "  ".join("-" * w for w in widths)]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)) for row in rows]
    lines.append("")
    lines.append("ok = class/top finding as expected (two-stage, default profiler); agree = its top finding equals the")
    lines.append("top finding of the --ncu-set full --all-tools run; ratio = two-stage wall / ncu --set full wall")
    for s, v in summary.items():
        def fmt(x):
            return f"{x['ok']}/{x['n']}" if x["n"] else "-"
        lines.append(f"{s:8} class {fmt(v['class_accuracy'])}, top {fmt(v['top_accuracy'])}, agreement "
                     f"{fmt(v['agreement'])}; with --profiler ncu: class {fmt(v['class_accuracy_ncu_profiler'])}, "
                     f"top {fmt(v['top_accuracy_ncu_profiler'])}, agreement {fmt(v['agreement_ncu_profiler'])}; "
                     f"median ratio {v['median_ratio']}, <= 1/4 in {v['ratios_at_most_quarter']}"
                     + (f"; failed: {', '.join(v['failures'])}" if v["failures"] else ""))
    return "\n".join(lines) + "\n"


def versions(kpilot, files):
    out = {}
    probes = {"ncu": ["ncu", "--version"], "nvcc": ["nvcc", "--version"],
              "gpu": ["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm", "--format=csv,noheader"],
              "kpilot_doctor": [kpilot, "doctor"]}
    for key, argv in probes.items():
        rc, o, e, _ = run(argv, 60)
        out[key] = (o.strip() or e.strip())[-2000:] if rc == 0 else f"unavailable (rc {rc}): {tail(e, 300)}"
    rc, o, _, _ = run(["git", "rev-parse", "HEAD"], 30)
    out["commit"] = o.strip() if rc == 0 else None
    with open(os.path.join(files, "versions.json"), "w") as f:
        json.dump(out, f, indent=1)
    return {k: (v.splitlines()[-1] if isinstance(v, str) and v else v) for k, v in out.items() if k != "kpilot_doctor"}


def dump_sass(entries, files, timeout):
    """Each candidate compiled with kpilot's nvcc flags, and its SASS (cuobjdump -sass)."""
    nvcc = shutil.which("nvcc")
    cuobjdump = shutil.which("cuobjdump") or (nvcc and os.path.join(os.path.dirname(nvcc), "cuobjdump"))
    if not nvcc or not cuobjdump or not os.path.exists(cuobjdump):
        progress("--sass: nvcc or cuobjdump not found; no SASS dumps")
        return
    for e in entries:
        src = os.path.join(SET_DIR, e["task"], e["candidate"])
        obj = os.path.join(files, e["name"] + ".so")
        rc, _, err, _ = run([nvcc, "-O3", "-lineinfo", "-std=c++17", "-Xcompiler", "-fPIC", "-shared", "-Xptxas", "-v",
                             "-gencode=arch=compute_90a,code=sm_90a", "-I", os.path.join(ROOT, "include"), "-o", obj,
                             src], timeout)
        with open(os.path.join(files, e["name"] + ".ptxas.txt"), "w") as f:
            f.write(err)
        if rc == 0:
            rc, out, _, _ = run([cuobjdump, "-sass", obj], timeout)
            with open(os.path.join(files, e["name"] + ".sass"), "w") as f:
                f.write(out)
        if os.path.exists(obj):
            os.remove(obj)


# ---- --check-manifest --------------------------------------------------------------------------

def list_tools(kpilot):
    rc, out, err, _ = run([kpilot, "profile", "--list-tools"], 60)
    if rc != 0:
        sys.exit(f"profile_verify: `{kpilot} profile --list-tools` failed (rc {rc}): {tail(err, 500)}")
    ids, classes = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            ids.add(parts[0])
            classes.update(c for c in parts[1].split(",") if c)
    return ids, classes


def check_manifest(a):
    ids, classes = list_tools(a.kpilot)
    entries = load_manifest()
    problems, seen, covered = [], set(), set()
    for i, e in enumerate(entries):
        where = f"entry[{i}] {e.get('name', '?')}"
        for k in ("name", "set", "task", "candidate", "expected_class", "expected_top", "why"):
            if not e.get(k):
                problems.append(f"{where}: missing {k}")
        for k in e:
            if k not in ENTRY_KEYS:
                problems.append(f"{where}: unknown key {k}")
        name = e.get("name", "")
        if not re.fullmatch(r"[a-z0-9][a-z0-9_-]*", name or "-"):
            problems.append(f"{where}: name must be lower-case letters, digits, '-' and '_'")
        if name in seen:
            problems.append(f"{where}: duplicate name")
        seen.add(name)
        folder = str(e.get("task", "")).split("/")[0]
        if e.get("set") not in SETS:
            problems.append(f"{where}: set {e.get('set')!r} is not one of {', '.join(SETS)}")
        elif e["set"] != "tuning" and folder != e["set"]:
            problems.append(f"{where}: a {e['set']} entry's task belongs under bench/profile_set/{e['set']}/")
        elif folder not in SET_FOLDERS:
            problems.append(f"{where}: the task belongs under one of {', '.join(f + '/' for f in SET_FOLDERS)}")
        task_dir = os.path.join(SET_DIR, e.get("task", ""))
        if not os.path.isfile(os.path.join(task_dir, "task.toml")):
            problems.append(f"{where}: {task_dir}/task.toml does not exist")
        else:
            facts = task_facts(task_dir)
            if facts["backend"] != "cuda":
                problems.append(f"{where}: task backend is {facts['backend']!r}, not cuda")
            if not facts["reference"] or not os.path.isfile(os.path.join(task_dir, facts["reference"])):
                problems.append(f"{where}: the task's reference {facts['reference']!r} does not exist")
            if facts["workloads"] != 1:
                problems.append(f"{where}: the task has {facts['workloads']} workloads; the set uses exactly one")
            if not facts["bytes"]:
                problems.append(f"{where}: the task has no [roofline] bytes formula")
        cand = os.path.join(task_dir, e.get("candidate", ""))
        if not (os.path.isfile(cand) and cand.endswith(".cu")):
            problems.append(f"{where}: candidate {cand} is not an existing .cu file")
        covered.add(os.path.normpath(cand))
        for c in [e.get("expected_class")] + list(e.get("class_also_ok", [])):
            if c not in classes:
                problems.append(f"{where}: class {c!r} is not one of {', '.join(sorted(classes))}")
        for t in [e.get("expected_top")] + list(e.get("also_ok", [])):
            if t not in ids:
                problems.append(f"{where}: tool id {t!r} is not listed by `kpilot profile --list-tools`")
        if e.get("expected_top") in e.get("also_ok", []) or e.get("expected_class") in e.get("class_also_ok", []):
            problems.append(f"{where}: also_ok/class_also_ok repeat the expected value")
    for s in SET_FOLDERS:
        for dirpath, _, names in os.walk(os.path.join(SET_DIR, s)):
            for n in names:
                path = os.path.normpath(os.path.join(dirpath, n))
                if os.path.basename(dirpath) == "candidates" and n.endswith(".cu") and path not in covered:
                    problems.append(f"{os.path.relpath(path, ROOT)}: a candidate without a manifest entry")
    counts = {s: sum(1 for e in entries if e.get("set") == s) for s in SETS}
    if counts["tuning"] < 7 or counts[HELDOUT] < 6:
        problems.append(f"the set needs >= 7 tuning and >= 6 {HELDOUT} entries; it has {counts}")
    if a.static and not problems:
        for e in entries:
            task = os.path.join("bench", "profile_set", e["task"])
            cand = os.path.join(task, e["candidate"])
            rc, out, err, wall = run([a.kpilot, "profile", task, cand, "--static", "--json", "--no-store"], a.timeout)
            doc = parse_json(out) if rc == 0 else None
            if doc is None or not doc.get("kernels"):
                problems.append(f"{e['name']}: kpilot profile --static failed (rc {rc}): {tail(err or out, 400)}")
                continue
            s = summarize_profile(doc)
            k = doc["kernels"][0].get("static", {})
            print(f"{e['name']:28} static ok in {wall:4.1f} s: {len(doc['kernels'])} kernel(s), "
                  f"{k.get('registers')} regs, spills {k.get('spill_store_bytes')}/{k.get('spill_load_bytes')} B; "
                  f"static findings: {', '.join(f[0] for f in s['findings']) or 'none'}")
    for p in problems:
        print("problem: " + p)
    print(f"manifest: {len(entries)} entries ({counts['tuning']} tuning, {counts[HELDOUT]} {HELDOUT}), "
          f"{len(ids)} tools known; {'OK' if not problems else str(len(problems)) + ' problem(s)'}")
    return 0 if not problems else 1


# ---- main --------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kpilot", default=None, help="kpilot binary (default .stage/bin/kpilot, else build/bin/kpilot)")
    ap.add_argument("--set", choices=SETS + ("all",), default="all")
    ap.add_argument("--only", default="", help="comma-separated entry names")
    ap.add_argument("--out", default="profile_verify_out")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per kpilot process (default 300)")
    ap.add_argument("--no-static", action="store_true", help="skip the static profiles (they need no GPU)")
    ap.add_argument("--no-full", action="store_true", help="skip the --ncu-set full runs")
    ap.add_argument("--no-ncu-profiler", action="store_true", help="skip the second two-stage run (--profiler ncu)")
    ap.add_argument("--sass", action="store_true", help="also dump each candidate's SASS (after the profiles)")
    ap.add_argument("--traces", action="store_true", help="also save `kpilot eval --json` (holds the launch traces)")
    ap.add_argument("--keep-files", action="store_true", help="keep OUT/files/ next to the tarball")
    ap.add_argument("--check-manifest", action="store_true", help="validate the manifest (no GPU) and exit")
    ap.add_argument("--static", action="store_true", help="with --check-manifest: also run each static profile")
    a = ap.parse_args()
    if a.kpilot is None:
        staged = os.path.join(ROOT, ".stage", "bin", "kpilot")
        a.kpilot = staged if os.path.exists(staged) else os.path.join(ROOT, "build", "bin", "kpilot")
    a.kpilot = os.path.abspath(a.kpilot)
    if a.check_manifest:
        return check_manifest(a)

    entries = [e for e in load_manifest() if a.set == "all" or e["set"] == a.set]
    if a.only:
        wanted = {n.strip() for n in a.only.split(",") if n.strip()}
        unknown = wanted - {e["name"] for e in entries}
        if unknown:
            sys.exit(f"profile_verify: no such entries in set {a.set}: {', '.join(sorted(unknown))}")
        entries = [e for e in entries if e["name"] in wanted]
    out = os.path.abspath(a.out)
    files = os.path.join(out, "files")
    os.makedirs(files, exist_ok=True)
    shutil.copy(MANIFEST, os.path.join(files, "manifest.toml"))
    progress(f"{len(entries)} entries, kpilot {a.kpilot}, out {out}")
    tool_versions = versions(a.kpilot, files)

    records = []
    for i, e in enumerate(entries, 1):
        records.append(verify_entry(e, a, files, i, len(entries)))
        with open(os.path.join(out, "profile_verify.json"), "w") as f:  # partial results survive a kill
            json.dump({"versions": tool_versions, "records": records, "summary": summarize(records)}, f, indent=1)
    if a.sass:
        progress("SASS dumps")
        dump_sass(entries, files, a.timeout)

    summary = summarize(records)
    table = render(records, summary)
    doc = {"versions": tool_versions, "kpilot": a.kpilot, "set": a.set, "records": records, "summary": summary,
           "kernel_rule": "longest mean gpu__time_duration.sum; else first kernel with findings; else first"}
    with open(os.path.join(out, "profile_verify.json"), "w") as f:
        json.dump(doc, f, indent=1)
    with open(os.path.join(out, "profile_verify.txt"), "w") as f:
        f.write(table)
    shutil.copy(os.path.join(out, "profile_verify.json"), os.path.join(files, "profile_verify.json"))
    with tarfile.open(os.path.join(out, "profile_set.tar.gz"), "w:gz") as tar:
        tar.add(files, arcname="profile_set")
    if not a.keep_files:
        shutil.rmtree(files)
    print(table, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
