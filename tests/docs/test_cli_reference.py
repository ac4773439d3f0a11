"""docs/cli.md against the binary's own help.

For `kpilot --help` and `kpilot <cmd> [<sub>] --help` of every subcommand (nested ones included),
docs/cli.md must have a heading `kpilot <cmd> [<sub>]`, and the section under it (up to the next
heading) must name every flag that --help prints and no `--flag` that --help does not print.
`-h`/`--help` is taken as given everywhere.

Environment:
  KPILOT_BIN       the kpilot binary (default: build/bin/kpilot under the repository root)
  KPILOT_CLI_DOC   the reference page to check (default: docs/cli.md under the repository root)
"""

import os
import re
import subprocess
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("KPILOT_BIN") or ROOT / "build" / "bin" / "kpilot")
if not BIN.is_absolute():
    BIN = ROOT / BIN
DOC = Path(os.environ.get("KPILOT_CLI_DOC") or ROOT / "docs" / "cli.md")

ALWAYS = {"-h", "--help"}

# A heading naming a command: "## kpilot", "### kpilot eval", "#### `kpilot skills list`".
HEADING = re.compile(r"^#{1,6}\s+`?(kpilot(?:\s+[a-z][a-z0-9-]*)*)`?\s*$")
ANY_HEADING = re.compile(r"^#{1,6}\s")
# A long flag in prose or a table: --name, not part of a longer word.
DOC_LONG_FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")
CODE_SPAN = re.compile(r"`([^`\n]*)`")
KPILOT_NAMES = {"kpilot", "build/bin/kpilot"}


def run_help(words):
    p = subprocess.run([str(BIN), *words, "--help"], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise AssertionError("`kpilot %s --help` exited %d: %s" % (" ".join(words), p.returncode, p.stderr.strip()))
    return p.stdout


def parse_help(text):
    """(flags, subcommands) of one CLI11 help page."""
    flags, subcommands = [], []
    section = None
    for line in text.splitlines():
        if re.match(r"^\S.*:$", line):
            section = line[:-1].strip()
            continue
        if section == "Options":
            m = re.match(r"^\s{2}(-[^\s]+)", line)
            if m:
                for name in m.group(1).split(","):
                    if name.startswith("-"):
                        flags.append(name)
        elif section == "Subcommands":
            m = re.match(r"^\s{2}([a-z][a-z0-9-]*)\s", line)
            if m:
                subcommands.append(m.group(1))
    return flags, subcommands


def all_commands():
    """{("eval",): [flags], ("skills", "list"): [flags], (): [flags of kpilot itself], …}"""
    out = {}
    pending = [()]
    while pending:
        words = pending.pop(0)
        flags, subs = parse_help(run_help(list(words)))
        out[words] = flags
        pending.extend(words + (s,) for s in subs)
    return out


def doc_sections(text):
    """{("eval",): section text, …} for every command heading of the page."""
    sections, current, lines = {}, None, []
    for line in text.splitlines():
        if ANY_HEADING.match(line):
            if current is not None:
                sections[current] = "\n".join(lines)
            m = HEADING.match(line)
            current = tuple(m.group(1).split()[1:]) if m else None
            lines = []
        elif current is not None:
            lines.append(line)
    if current is not None:
        sections[current] = "\n".join(lines)
    return sections


def documented_flags(section, words, commands):
    """[(command words, flag)] for every long flag the section names. A flag inside a code span
    that starts with a kpilot command line (`kpilot calibrate --json`) belongs to that command; one
    inside a span that starts with another program (`ncu --csv --page raw`) is not kpilot's and is
    left out; every other flag belongs to the section's command."""
    found = []
    for span in CODE_SPAN.findall(section):
        tokens = span.split()
        if not tokens or tokens[0].startswith("-"):
            found.extend((words, f) for f in DOC_LONG_FLAG.findall(span))
        elif tokens[0] in KPILOT_NAMES:
            owner = ()
            for t in tokens[1:]:
                if owner + (t,) not in commands:
                    break
                owner += (t,)
            found.extend((owner, f) for f in DOC_LONG_FLAG.findall(span))
    prose = CODE_SPAN.sub(" ", section)
    found.extend((words, f) for f in DOC_LONG_FLAG.findall(prose))
    return found


def mentions(section, flag):
    # `-D NAME=VALUE`, `--store DIR`, `--json`: the flag in backquotes, alone or followed by its
    # argument or a separator.
    return re.search(r"`" + re.escape(flag) + r"(?![\w-])", section) is not None


def name(words):
    return "kpilot" + "".join(" " + w for w in words)


class CliReferenceTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not BIN.exists():
            raise AssertionError("%s does not exist: build kpilot first, or set KPILOT_BIN" % BIN)
        cls.commands = all_commands()
        cls.sections = doc_sections(DOC.read_text())

    def test_finds_the_commands(self):
        self.assertIn((), self.commands)
        self.assertIn(("eval",), self.commands)
        self.assertIn("--store", self.commands[("eval",)])
        self.assertIn("-D", self.commands[("eval",)])
        self.assertTrue(any(len(w) == 2 for w in self.commands), "no nested subcommand (kpilot skills …) found")

    def test_every_command_has_a_section(self):
        missing = [name(w) for w in self.commands if w not in self.sections]
        self.assertEqual(missing, [], "%s: no heading for these commands" % DOC)

    def test_no_section_for_a_command_that_does_not_exist(self):
        extra = [name(w) for w in self.sections if w not in self.commands]
        self.assertEqual(extra, [], "%s: headings for commands that `kpilot --help` does not list" % DOC)

    def test_every_flag_of_help_is_documented(self):
        problems = []
        for words, flags in sorted(self.commands.items()):
            section = self.sections.get(words)
            if section is None:
                continue
            for flag in flags:
                if flag not in ALWAYS and not mentions(section, flag):
                    problems.append("%s: %s is printed by --help but missing from %s" % (name(words), flag, DOC.name))
        self.assertEqual(problems, [], "\n" + "\n".join(problems))

    def test_every_documented_flag_exists(self):
        problems = []
        for words, section in sorted(self.sections.items()):
            if words not in self.commands:
                continue
            for owner, flag in sorted(set(documented_flags(section, words, self.commands))):
                if flag not in set(self.commands[owner]) | ALWAYS:
                    problems.append("%s: %s is in %s but `%s --help` does not print it" %
                                    (name(words), flag, DOC.name, name(owner)))
        self.assertEqual(problems, [], "\n" + "\n".join(problems))


if __name__ == "__main__":
    unittest.main()
