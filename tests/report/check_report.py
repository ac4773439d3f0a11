#!/usr/bin/env python3
"""Checks a self-contained kpilot HTML report in headless Chromium (standard library only).

Each --view NAME is loaded as file:///abs/REPORT.html#view=NAME (plus &node=ID for the tree view) twice:
with --dump-dom (the DOM after scripts ran) and with --screenshot. A view passes when Chromium exits in
time, the page logs no uncaught exception and no console.error(), #report-errors is empty, every
--expect-selector matches the DOM, every --expect-text occurs in its visible text (script and style
excluded, whitespace collapsed), and the screenshot is not blank. Exit status: 0 all checks passed,
1 a check failed, 2 usage error. Example:
  check_report.py r.html --view tree --view roofline --expect-selector 'svg rect' --screenshots out/
"""

import argparse
import collections
import html.parser
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import urllib.parse
import zlib
from pathlib import Path

# Chromium (156 here) logs a web page's console messages all at INFO level, e.g.
#   [pid:tid:MMDD/HHMMSS.us:INFO:CONSOLE:LINE] "message", source: URL (LINE)
# so console.error() looks like console.log(). The dump pass therefore loads a copy of the report whose
# first script (PRELUDE) prefixes console.error() messages with ERROR_MARK and removes its own element.
# Uncaught exceptions and unhandled rejections are messages starting with "Uncaught".
ERROR_MARK = "[check_report:console.error]"
PRELUDE = ("<script>(function(){var e=console.error;console.error=function(){e.apply(console,['"
           + ERROR_MARK + "'].concat([].slice.call(arguments)))};document.currentScript.remove()})()"
           "</script>")
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
BASE_FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
              "--no-default-browser-check", "--disable-dev-shm-usage", "--enable-logging=stderr", "--v=0"]
LOAD_FLAGS = ["--virtual-time-budget=5000"]  # virtual time: timers up to 5 s fire, without waiting 5 s
SHOT_FLAGS = ["--window-size=1400,1000", "--hide-scrollbars"]
# Older Chromium wrote "CONSOLE(LINE)", newer "CONSOLE:LINE"; a message may span lines.
CONSOLE_RE = re.compile(r'^\[[^\]]*:([A-Z]+):CONSOLE[:(][^\]]*\] "(.*?)(?:", source: (.*))?$')
VOID_TAGS = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param",
             "source", "track", "wbr"}
COMPOUND_RE = re.compile(r'([a-zA-Z][\w-]*|\*)?((?:#[\w-]+|\.[\w-]+|\[[\w:-]+(?:=(?:"[^"]*"|\'[^\']*\''
                         r'|[^\]"\']*))?\])*)$')
PART_RE = re.compile(r'#([\w-]+)|\.([\w-]+)|\[([\w:-]+)(?:=("[^"]*"|\'[^\']*\'|[^\]]*))?\]')


class UsageError(Exception):
    """Bad arguments or environment: exit status 2."""


def run_chromium(chromium, url, extra, timeout, tmp):
    """One headless load -> (stdout, stderr, error or None, seconds). Output goes to files, not pipes,
    so a helper process that keeps a pipe open can never block us."""
    profile = tempfile.mkdtemp(prefix="profile-", dir=tmp)
    out_path, err_path = Path(tmp, "stdout"), Path(tmp, "stderr")
    start, error = time.monotonic(), None
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen([chromium, *BASE_FLAGS, f"--user-data-dir={profile}", *extra, url],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                start_new_session=True)  # its own process group, killed as a whole
        try:
            if proc.wait(timeout=timeout):
                error = f"chromium exited with status {proc.returncode}"
        except subprocess.TimeoutExpired:
            error = f"timed out after {timeout:g}s (process group killed)"
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # after a clean exit too: no helper outlives the load
        except ProcessLookupError:
            pass
        proc.wait()
    shutil.rmtree(profile, ignore_errors=True)
    return (out_path.read_text("utf-8", "replace"), err_path.read_text("utf-8", "replace"), error,
            time.monotonic() - start)


def console_errors(stderr):
    """Error-level console messages (with their source) in Chromium's stderr log."""
    found = []
    for m in filter(None, map(CONSOLE_RE.match, stderr.splitlines())):
        level, msg, source = m.groups()
        if level in ("ERROR", "FATAL") or msg.startswith(("Uncaught", ERROR_MARK)):
            found.append(msg.replace(ERROR_MARK, "console.error:", 1) + (f" ({source})" if source else ""))
    return found


def with_prelude(text):
    """The report with PRELUDE inserted after its doctype (before it would force quirks mode)."""
    m = re.match(r"[\s\ufeff]*(<!doctype[^>]*>)?", text, re.IGNORECASE)
    return text[:m.end()] + PRELUDE + text[m.end():]


class Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent, self.children = tag, attrs, parent, []
        self.text = []  # text chunks of this element and its descendants, in document order


class DomBuilder(html.parser.HTMLParser):
    """A forgiving element tree of the dumped DOM; `visible` collects text outside script and style."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.elements, self.visible = [Node("#root", {}, None)], [], []

    def handle_starttag(self, tag, attrs):
        node = Node(tag, {k: v or "" for k, v in attrs}, self.stack[-1])
        self.stack[-1].children.append(node)
        self.elements.append(node)
        if tag not in VOID_TAGS:
            self.stack.append(node)

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, 0, -1):  # close up to the nearest open match, if any
            if self.stack[i].tag == tag:
                del self.stack[i:]
                break

    def handle_data(self, data):
        for node in self.stack:
            node.text.append(data)
        if not any(n.tag in ("script", "style", "template") for n in self.stack):
            self.visible.append(data)


def parse_selector(sel):
    """'div.a [x="1"]' -> [(tag, [(name, value, is_class)]), ...] (a value of None: just present)."""
    compiled = []
    for part in re.findall(r'(?:"[^"]*"|\'[^\']*\'|[^\s"\'])+', sel):
        m = COMPOUND_RE.match(part)
        if not m:
            raise UsageError(f"unsupported selector {sel!r} (supported: tag, #id, .class, [attr], "
                             "[attr=value], [attr=\"value\"] and the descendant combinator)")
        tests = []
        for ident, cls, attr, value in PART_RE.findall(m.group(2)):
            if ident:
                tests.append(("id", ident, False))
            elif cls:
                tests.append(("class", cls, True))
            else:  # [attr], [attr=v], [attr="v"], [attr='v']
                quoted = len(value) >= 2 and value[0] in "'\""
                tests.append((attr.lower(), (value[1:-1] if quoted else value) or None, False))
        compiled.append(((m.group(1) or "*").lower(), tests))
    if not compiled:
        raise UsageError(f"empty selector {sel!r}")
    return compiled


def matches(node, compound):
    tag, tests = compound
    return (tag in ("*", node.tag)) and all(
        name in node.attrs and (value is None or (value in node.attrs[name].split() if is_class
                                                  else node.attrs[name] == value))
        for name, value, is_class in tests)


def select(elements, compiled):
    """Elements matching a chain of descendant combinators. Matching each earlier compound against the
    nearest ancestor that fits is never worse than a farther one, so one greedy walk up is exact."""
    found = []
    for node in elements:
        want, anc = len(compiled) - 2, node.parent
        if not matches(node, compiled[-1]):
            continue
        while want >= 0 and anc is not None:
            if matches(anc, compiled[want]):
                want -= 1
            anc = anc.parent
        if want < 0:
            found.append(node)
    return found


def squash(text):
    return " ".join(text.split())


def png_stats(path):
    """(fraction of pixels unlike the most common colour, number of distinct colours) of a PNG."""
    data = Path(path).read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG file")
    pos, idat, header = 8, [], None
    while pos + 8 <= len(data):  # chunks: length, type, body, CRC
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", data[pos + 8:pos + 21])
        elif kind == b"IDAT":
            idat.append(data[pos + 8:pos + 8 + length])
        elif kind == b"IEND":
            break
        pos += 12 + length
    if header is None:
        raise ValueError("PNG without IHDR")
    width, height, depth, ctype, _, _, interlace = header
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise ValueError(f"unsupported PNG (bit depth {depth}, colour type {ctype}, interlace {interlace});"
                         " only 8-bit non-interlaced RGB (2) and RGBA (6) are decoded")
    bpp = 3 if ctype == 2 else 4
    stride, raw = width * bpp, zlib.decompress(b"".join(idat))
    pixels, prev = bytearray(), bytearray(stride)
    for y in range(height):  # undo each row's filter; a, b, c: left, up, up-left (0 off the image)
        ftype, row = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if ftype == 1:  # Sub
            for i in range(bpp, stride):
                row[i] = (row[i] + row[i - bpp]) & 255
        elif ftype == 2:  # Up
            row = bytearray((x + b) & 255 for x, b in zip(row, prev))
        elif ftype == 3:  # Average
            for i in range(stride):
                row[i] = (row[i] + (((row[i - bpp] if i >= bpp else 0) + prev[i]) >> 1)) & 255
        elif ftype == 4:  # Paeth
            for i in range(stride):
                a, b, c = (row[i - bpp], prev[i], prev[i - bpp]) if i >= bpp else (0, prev[i], 0)
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                row[i] = (row[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        elif ftype:
            raise ValueError(f"bad PNG filter type {ftype} in row {y}")
        pixels += row
        prev = row
    counts = collections.Counter(zip(*(pixels[c::bpp] for c in range(bpp))))
    return 1 - counts.most_common(1)[0][1] / (width * height), len(counts)


def check_view(args, chromium, report, view, shots, tmp, add):
    """Loads one view (None: no URL fragment) and passes the result of each check to add()."""
    fragment = f"#view={urllib.parse.quote(view)}" if view else ""
    if args.node and view == "tree":
        fragment += f"&node={urllib.parse.quote(args.node)}"
    view = view or "default"
    copy = Path(tmp, "dump", report.name)
    copy.parent.mkdir(exist_ok=True)
    copy.write_text(with_prelude(report.read_text("utf-8", "surrogateescape")), "utf-8", "surrogateescape")
    dom, err1, error1, t1 = run_chromium(chromium, copy.as_uri() + fragment, LOAD_FLAGS + ["--dump-dom"],
                                         args.timeout, tmp)
    err1 = err1.replace(copy.as_uri(), report.as_uri())  # name the report, not its copy
    shot = shots / f"{view}.png"
    shot.unlink(missing_ok=True)  # never judge a stale screenshot
    _, err2, error2, t2 = run_chromium(chromium, report.as_uri() + fragment,
                                       LOAD_FLAGS + SHOT_FLAGS + [f"--screenshot={shot}"], args.timeout, tmp)
    failed = [f"{name}: {e}" for name, e in (("dump", error1), ("screenshot", error2)) if e]
    add(view, "load", not failed, "; ".join(failed) or f"dump {t1:.1f}s, screenshot {t2:.1f}s")
    errors = list(dict.fromkeys(console_errors(err1) + console_errors(err2)))  # both passes, once each
    add(view, "console", not errors, "; ".join(errors[:5]) or "no errors")

    if error1 or not dom.strip():
        add(view, "dom", False, "no DOM dumped")
    else:
        dom_tree = DomBuilder()
        dom_tree.feed(dom)
        dom_tree.close()
        boxes = [n for n in dom_tree.elements if n.attrs.get("id") == "report-errors"]
        text = squash("".join(t for n in boxes for t in n.text))
        bad = text or any(n.children for n in boxes)
        add(view, "report-errors", not bad, f"not empty: {text[:300]!r}" if bad
            else "empty" if boxes else "absent (not checked)")
        visible = squash("".join(dom_tree.visible))
        missing = [f"selector {s!r}" for s in args.expect_selector
                   if not select(dom_tree.elements, parse_selector(s))]
        missing += [f"text {t!r}" for t in args.expect_text if squash(t) not in visible]
        add(view, "dom", not missing, "missing " + ", ".join(missing) if missing
            else f"{len(args.expect_selector)} selectors, {len(args.expect_text)} texts")

    if error2 or not shot.is_file():
        return add(view, "screenshot", False, "no screenshot written")
    try:
        frac, colours = png_stats(shot)
    except (ValueError, zlib.error) as e:
        return add(view, "screenshot", False, f"{shot.name}: {e}")
    blank = frac < args.min_fraction or colours < args.min_colours
    add(view, "screenshot", not blank, f"{frac:.2%} non-background pixels, {colours} colours"
        + (" (blank)" if blank else "") + (f" {shot}" if args.screenshots else ""))


def find_chromium(given):
    for name in [given] if given else CHROMIUM_NAMES:
        if shutil.which(name):
            return shutil.which(name)
    if given:
        raise UsageError(f"--chromium {given}: not an executable")
    raise UsageError(f"no Chromium found (tried {', '.join(CHROMIUM_NAMES)}); install it with "
                     "`apt-get install chromium` or pass --chromium PATH")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("report", help="the HTML report file")
    ap.add_argument("--view", action="append", default=[], help="view to load (repeatable)")
    ap.add_argument("--expect-selector", action="append", default=[], metavar="CSS")
    ap.add_argument("--expect-text", action="append", default=[], metavar="TEXT")
    ap.add_argument("--node", metavar="ID", help="node id added to the tree view's URL fragment")
    ap.add_argument("--screenshots", metavar="DIR", help="keep screenshots here as NAME.png")
    ap.add_argument("--chromium", metavar="PATH")
    ap.add_argument("--timeout", type=float, default=60, metavar="S", help="limit per Chromium run")
    ap.add_argument("--min-fraction", type=float, default=0.01, help="of non-background pixels")
    ap.add_argument("--min-colours", type=int, default=8)
    ap.add_argument("--json", action="store_true", help="JSON summary on stdout (check lines on stderr)")
    args = ap.parse_args(argv)
    results = []

    def add(view, check, ok, detail):
        results.append({"view": view, "check": check, "ok": ok, "detail": detail})
        print(f"{'ok' if ok else 'FAIL'} view={view} {check}: {detail}",
              file=sys.stderr if args.json else sys.stdout, flush=True)

    try:
        report = Path(args.report).resolve()
        if not report.is_file():
            raise UsageError(f"{args.report}: no such file")
        for sel in args.expect_selector:
            parse_selector(sel)
        chromium = find_chromium(args.chromium)
    except UsageError as e:
        print(f"check_report: {e}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="check_report-", ignore_cleanup_errors=True) as tmp:
        shots = Path(args.screenshots or tmp).resolve()
        shots.mkdir(parents=True, exist_ok=True)
        for view in args.view or [None]:
            check_view(args, chromium, report, view, shots, tmp, add)
    ok = all(r["ok"] for r in results)
    if args.json:
        print(json.dumps({"report": str(report), "ok": ok, "checks": results}, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
