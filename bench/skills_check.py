#!/usr/bin/env python3
"""Validate kpilot's skill cards (skills/<id>/SKILL.md).

Needs Python 3 (standard library) and PyYAML (`pip install pyyaml`). Run from anywhere:

    python3 bench/skills_check.py [SKILLS_DIR]

Checks, for every card: the YAML front matter parses; every required field is present with the
right type; `name` == `id` == the folder name; ids are unique; trigger findings are real finding
ids (built-in tools, read from src/profile/tools/*.cc, plus the example rule files in
examples/tools/*.toml); trigger classes are roofline class names; requires/provides/conflicts
use only the feature vocabulary of skills/README.md; params moves are well formed; the body has
the recipe, preconditions, Before/After and example-configuration sections. Finally, every skill
id that a built-in tool (or an example rule file) suggests must have a card.

Exit status 0 when everything passes, 1 otherwise; each problem is printed as FILE: field: problem.
"""
import os
import re
import sys

try:
    import yaml
except ImportError:  # pragma: no cover
    sys.exit("skills_check.py needs PyYAML: python3 -m pip install pyyaml")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLASSES = {"memory-bound", "compute-bound", "latency-bound", "launch-bound", "mixed"}
PLATFORMS = {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "sm_100a", "x86-64", "aarch64"}
LANGUAGES = {"cuda", "cpp"}
MOVES = {"up", "down", "set"}
# Param roles of docs/generate.md; a card may also name one param literally (UPPER_CASE).
PARAM_ROLES = {"min-blocks", "block", "grid", "work-per-block", "stages", "unroll", "tile-k",
               "tile", "vector"}
REQUIRED = {
    "name": str, "description": str, "id": str, "intent": str, "anchor": str,
    "preconditions": list, "effect": dict, "risks": list, "scope": dict, "requires": list,
    "provides": list, "conflicts": list, "triggers": dict, "params": list,
}
BODY_SECTIONS = ["## Recipe", "## Preconditions", "## Before / After", "## Example configuration"]
ID_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


def finding_ids():
    ids = set()
    tools = os.path.join(ROOT, "src", "profile", "tools")
    for f in sorted(os.listdir(tools)):
        if f.endswith(".cc"):
            text = open(os.path.join(tools, f), encoding="utf-8").read()
            ids.update(re.findall(r'BuiltinTool\(\s*"([a-z0-9-]+)"', text))
    for f in rule_files():
        ids.update(re.findall(r'^\s*id\s*=\s*"([a-z0-9-]+)"', open(f, encoding="utf-8").read(), re.M))
    return ids


def rule_files():
    d = os.path.join(ROOT, "examples", "tools")
    return [os.path.join(d, f) for f in sorted(os.listdir(d)) if f.endswith(".toml")] if os.path.isdir(d) else []


def suggested_skills(findings):
    """Every kebab-case string literal in the tools' sources that is not a finding id is a
    suggested skill id (the tools hold no other such literals), plus rule files' skills = [...]."""
    out = {}
    tools = os.path.join(ROOT, "src", "profile", "tools")
    for f in sorted(os.listdir(tools)):
        if f.endswith(".cc"):
            for s in re.findall(r'"([a-z0-9]+(?:-[a-z0-9]+)+)"', open(os.path.join(tools, f), encoding="utf-8").read()):
                if s not in findings:
                    out.setdefault(s, f)
    for f in rule_files():
        for lst in re.findall(r"^\s*skills\s*=\s*\[([^\]]*)\]", open(f, encoding="utf-8").read(), re.M):
            for s in re.findall(r'"([^"]+)"', lst):
                out.setdefault(s, os.path.basename(f))
    return out


def vocabulary(readme):
    """Features: rows `| `name` | meaning |` of the table under '## Feature vocabulary'."""
    text = open(readme, encoding="utf-8").read()
    m = re.search(r"^## Feature vocabulary\n(.*?)(?=^## )", text, re.M | re.S)
    if not m:
        return set()
    return set(re.findall(r"^\|\s*`([a-z0-9-]+)`\s*\|", m.group(1), re.M))


def split_card(path):
    text = open(path, encoding="utf-8").read()
    if not text.startswith("---\n"):
        raise ValueError("does not start with a '---' front-matter line")
    end = text.find("\n---\n", 4)
    if end < 0:
        raise ValueError("no closing '---' line after the front matter")
    return text[4:end], text[end + 5:]


def check_card(path, folder, fm, body, findings, features, errors):
    def err(field, msg):
        errors.append(f"{path}: {field}: {msg}")

    if not isinstance(fm, dict):
        err("front matter", "is not a mapping")
        return
    for k, t in REQUIRED.items():
        if k not in fm:
            err(k, "missing")
        elif not isinstance(fm[k], t):
            err(k, f"must be a {t.__name__}, got {type(fm[k]).__name__}")
    for k in fm:
        if k not in REQUIRED:
            err(k, "unknown field")
    if any(k not in fm or not isinstance(fm[k], REQUIRED[k]) for k in REQUIRED):
        return
    for k in ("name", "description", "id", "intent", "anchor"):
        if not fm[k].strip():
            err(k, "empty")
    if not ID_RE.match(fm["id"]):
        err("id", f"{fm['id']!r} is not kebab-case")
    if fm["id"] != folder:
        err("id", f"{fm['id']!r} differs from the folder name {folder!r}")
    if fm["name"] != fm["id"]:
        err("name", f"{fm['name']!r} differs from id {fm['id']!r}")
    if len(fm["description"]) > 1024:
        err("description", "longer than 1024 characters (Agent Skills limit)")
    if "\n" in fm["intent"].strip():
        err("intent", "must be one line")
    if not fm["preconditions"]:
        err("preconditions", "empty: every technique has preconditions")
    for i, p in enumerate(fm["preconditions"]):
        if not isinstance(p, dict) or set(p) != {"what", "why"} or not all(isinstance(v, str) and v.strip() for v in p.values()):
            err(f"preconditions[{i}]", "must be {what: text, why: text}")
    eff = fm["effect"]
    if set(eff) != {"expected", "measured"}:
        err("effect", "must have exactly the keys expected and measured")
    else:
        if not isinstance(eff["expected"], str) or not eff["expected"].strip():
            err("effect.expected", "must be non-empty text")
        if not isinstance(eff["measured"], list):
            err("effect.measured", "must be a list")
        for i, m in enumerate(eff["measured"] if isinstance(eff["measured"], list) else []):
            if not isinstance(m, dict) or "provenance" not in m:
                err(f"effect.measured[{i}]", "a measured effect needs its provenance (run, task, device)")
    if not fm["risks"] or not all(isinstance(r, str) and r.strip() for r in fm["risks"]):
        err("risks", "must be a non-empty list of text")
    sc = fm["scope"]
    if set(sc) != {"cases", "languages", "platforms"}:
        err("scope", "must have exactly the keys cases, languages, platforms")
    else:
        for k in ("cases", "languages", "platforms"):
            if not isinstance(sc[k], list) or not sc[k]:
                err(f"scope.{k}", "must be a non-empty list")
        for l in sc["languages"] if isinstance(sc["languages"], list) else []:
            if l not in LANGUAGES:
                err("scope.languages", f"unknown language {l!r} (use {sorted(LANGUAGES)})")
        for p in sc["platforms"] if isinstance(sc["platforms"], list) else []:
            if p not in PLATFORMS:
                err("scope.platforms", f"unknown platform {p!r} (use {sorted(PLATFORMS)})")
    for k in ("requires", "provides", "conflicts"):
        for f in fm[k]:
            if f not in features:
                err(k, f"feature {f!r} is not in the vocabulary of skills/README.md")
    if not fm["provides"]:
        err("provides", "empty: a card must provide at least one feature")
    if set(fm["requires"]) & set(fm["provides"]):
        err("requires", "a feature both required and provided")
    if set(fm["conflicts"]) & (set(fm["provides"]) | set(fm["requires"])):
        err("conflicts", "a feature both conflicting and required/provided")
    tr = fm["triggers"]
    if set(tr) != {"findings", "classes"} or not all(isinstance(tr[k], list) for k in tr):
        err("triggers", "must be {findings: [..], classes: [..]}")
    else:
        if not tr["findings"] and not tr["classes"]:
            err("triggers", "no finding and no class")
        for f in tr["findings"]:
            if f not in findings:
                err("triggers.findings", f"unknown finding id {f!r}")
        for c in tr["classes"]:
            if c not in CLASSES:
                err("triggers.classes", f"unknown class {c!r} (use {sorted(CLASSES)})")
    for i, mv in enumerate(fm["params"]):
        where = f"params[{i}]"
        if not isinstance(mv, dict) or not {"param", "move", "when"} <= set(mv) or set(mv) - {"param", "move", "value", "when"}:
            err(where, "must be {param, move, when, value (optional)}")
            continue
        if not isinstance(mv["param"], str) or not (mv["param"] in PARAM_ROLES or re.match(r"^[A-Z][A-Z0-9_]*$", mv["param"])):
            err(where + ".param", f"{mv['param']!r}: use a role {sorted(PARAM_ROLES)} or an UPPER_CASE param name")
        if mv["move"] not in MOVES:
            err(where + ".move", f"{mv['move']!r}: use up, down or set")
        if mv["move"] == "set" and "value" not in mv:
            err(where + ".value", "a 'set' move needs a value")
        lead = re.split(r"[\s(]", str(mv["when"]).strip(), maxsplit=1)[0]
        if lead not in findings and lead not in CLASSES:
            err(where + ".when", f"must start with a finding id or a class name, got {lead!r}")
    for s in BODY_SECTIONS:
        if s not in body:
            err("body", f"missing section {s!r}")
    if "example, not a precondition" not in body:
        err("body", "the example configuration must say 'example, not a precondition'")
    if "```cuda" not in body:
        err("body", "no ```cuda Before/After fragment")


def main():
    skills = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "skills")
    readme = os.path.join(skills, "README.md")
    errors = []
    features = vocabulary(readme) if os.path.exists(readme) else set()
    if not features:
        errors.append(f"{readme}: no '## Feature vocabulary' table")
    findings = finding_ids()
    ids = {}
    for folder in sorted(os.listdir(skills)):
        path = os.path.join(skills, folder, "SKILL.md")
        if not os.path.isdir(os.path.join(skills, folder)):
            continue
        if not os.path.exists(path):
            errors.append(f"{os.path.join(skills, folder)}: no SKILL.md")
            continue
        try:
            head, body = split_card(path)
            fm = yaml.safe_load(head)
        except (ValueError, yaml.YAMLError) as e:
            errors.append(f"{path}: front matter: {e}")
            continue
        check_card(path, folder, fm, body, findings, features, errors)
        if isinstance(fm, dict) and "id" in fm:
            if fm["id"] in ids:
                errors.append(f"{path}: id: {fm['id']!r} also in {ids[fm['id']]}")
            ids[fm["id"]] = path
    for sid, src in sorted(suggested_skills(findings).items()):
        if sid not in ids:
            errors.append(f"{src}: suggests skill {sid!r}, which has no card in {skills}")
    if os.path.exists(readme):
        text = open(readme, encoding="utf-8").read()
        for sid in ids:
            if f"`{sid}`" not in text:
                errors.append(f"{readme}: card table lacks {sid!r}")
    for e in errors:
        print(e)
    print(f"{len(ids)} cards, {len(features)} features, {len(findings)} finding ids: "
          f"{'OK' if not errors else str(len(errors)) + ' problem(s)'}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
