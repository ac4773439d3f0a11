"""kpilot mcp through the official MCP Python SDK's client (PyPI `mcp`), on a host task.

Run by ctest (`mcp_sdk`) with the test venv's interpreter; KPILOT names the kpilot binary.
Each test starts `kpilot mcp` as an agent CLI would, over stdio, and checks what the tools
answer and what the store records. The malformed-JSON and disconnect cases talk to the server
over raw pipes, since the SDK never sends such bytes.
"""

import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import tomllib
import unittest
from pathlib import Path

from mcp import StdioServerParameters
from mcp.client.client import Client
from mcp.shared.exceptions import MCPError

HERE = Path(__file__).resolve().parent
KPILOT = os.environ.get("KPILOT", str(HERE.parents[1] / "build" / "bin" / "kpilot"))
TASK = HERE / "task"
RIGHT = (TASK / "candidates" / "start.cpp").read_text()
WRONG = (HERE / "candidates" / "wrong.cpp").read_text()


def server(store, *extra, cwd=None):
    args = ["mcp", str(TASK), "--store", str(store), "--code-root", str(HERE / "code"),
            "--skills", str(HERE / "agent_skills"), *extra]
    return StdioServerParameters(command=KPILOT, args=args, cwd=str(cwd or store))


def run(coro):
    return asyncio.run(coro)


def descendants(pid):
    """The pids of every process below `pid` (read from /proc)."""
    children = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
                ppid = int(stat.rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(d.name))
            except (OSError, ValueError, IndexError):
                pass
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def candidate_loaders(pid):
    """The processes below `pid` that have a candidate's object mapped (an evaluation in flight)."""
    found = []
    for c in descendants(pid):
        try:
            if "-object.so" in Path(f"/proc/{c}/maps").read_text():
                found.append(c)
        except OSError:
            pass
    return found


def wait_for(what, condition, timeout_s=60):
    """Polls `condition` until it returns something true, which it returns; fails after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while not (found := condition()):
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %g s waiting for %s" % (timeout_s, what))
        time.sleep(0.05)  # a poll, not an ordering
    return found


def kpilot_json(*args):
    out = subprocess.run([KPILOT, *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


class McpSdkTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.store = Path(self.tmp.name) / "store"
        self.store.mkdir()

    def tearDown(self):
        self.tmp.cleanup()

    def test_the_configs_the_docs_give_start_a_server_an_agent_can_use(self):
        """The .mcp.json of the README and of docs/mcp.md and the Codex config.toml of docs/mcp.md, as
        written (docs/mcp.md's /path/to/ placeholders filled in, the README's relative task path
        from a folder holding examples/), start a server whose tools answer. Their task is a CUDA
        one: without a GPU the server must refuse for that reason alone, not for its arguments."""
        root = HERE.parents[1]
        work = Path(self.tmp.name) / "agent"
        work.mkdir()
        (work / "examples").symlink_to(root / "examples")

        def filled(text):
            return text.replace("/path/to/examples", str(root / "examples")).replace("/path/to/.kpilot", str(self.store))

        configs = []
        for doc in ("README.md", "docs/mcp.md"):
            text = (root / doc).read_text()
            for block in re.findall(r"```json\n(.*?)```", text, re.S):
                if "mcpServers" in block:
                    configs.append((doc, json.loads(filled(block))["mcpServers"]["kpilot"]))
            for block in re.findall(r"```toml\n(.*?)```", text, re.S):
                if "mcp_servers" in block:
                    configs.append((doc + ", Codex", tomllib.loads(filled(block))["mcp_servers"]["kpilot"]))
        self.assertEqual(len(configs), 3, [c[0] for c in configs])
        env = {**os.environ, "PATH": str(Path(KPILOT).parent) + os.pathsep + os.environ.get("PATH", "")}

        async def session(config):
            params = StdioServerParameters(command=config["command"], args=config["args"], env=env, cwd=str(work))
            async with Client(params, mode="legacy") as c:
                names = {t.name for t in (await c.list_tools()).tools}
                self.assertLessEqual({"describe_task", "evaluate", "profile", "best_so_far", "finish"}, names)
                d = await c.call_tool("describe_task", {})
                self.assertFalse(d.is_error, d.content[0].text)
                return d.structured_content["name"]

        for doc, config in configs:
            with self.subTest(doc=doc):
                self.assertEqual(config["command"], "kpilot")
                alone = subprocess.run([config["command"], *config["args"]], cwd=work, env=env, stdin=subprocess.DEVNULL,
                                       capture_output=True, text=True, timeout=60)
                if alone.returncode != 0:
                    self.assertIn("needs a GPU", alone.stderr)
                    continue
                self.assertEqual(run(session(config)), "row_softmax")

    def test_a_session_evaluates_profiles_and_finishes_as_a_run(self):
        async def session():
            async with Client(server(self.store), mode="legacy") as c:
                self.assertEqual(c.protocol_version, "2025-11-25")
                names = {t.name for t in (await c.list_tools()).tools}
                self.assertLessEqual({"describe_task", "evaluate", "profile", "search_skills", "get_skill",
                                      "search_code", "read_file", "best_so_far", "history", "finish"}, names)
                d = await c.call_tool("describe_task", {})
                self.assertFalse(d.is_error)
                self.assertEqual(d.structured_content["name"], "mcp_saxpy")
                self.assertIn("kpilot_launch", d.content[0].text)  # the ABI header
                self.assertIn("a * x[i] + y_in[i]", d.content[0].text)  # the reference source
                right = await c.call_tool("evaluate", {"source": RIGHT, "name": "unrolled.cpp",
                                                       "params": {"UNROLL": "4"}, "summary": "unroll by 4"})
                self.assertFalse(right.is_error, right.content[0].text)
                r = right.structured_content
                self.assertEqual(r["verdict"], "passed")
                self.assertEqual(r["parent"], 0)  # under the starting candidate
                self.assertEqual(len(r["timings"]), 1)
                self.assertLessEqual(r["ci"][0], r["speedup"])
                wrong = await c.call_tool("evaluate", {"source": WRONG, "name": "wrong.cpp"})
                w = wrong.structured_content
                self.assertEqual(w["verdict"], "incorrect", wrong.content[0].text)
                self.assertEqual(w["parent"], r["node"])  # the previous evaluation
                self.assertIn("incorrect", wrong.content[0].text)
                p = await c.call_tool("profile", {"node": r["node"]})
                self.assertEqual(p.structured_content["profiled_with"], "static")
                self.assertIn("cuda tasks only", p.structured_content["why_static"])
                h = (await c.call_tool("history", {})).structured_content["nodes"]
                self.assertEqual([n["node"] for n in h], [0, 1, 2])
                best = (await c.call_tool("best_so_far", {})).structured_content
                self.assertIn(best["best"]["node"], (0, 1))
                self.assertEqual(best["evaluations"], 2)
                fin = await c.call_tool("finish", {})
                self.assertFalse(fin.is_error, fin.content[0].text)
                again = await c.call_tool("evaluate", {"source": RIGHT})
                self.assertTrue(again.is_error)
                return fin.structured_content["run"]

        run_id = run(session())
        runs = kpilot_json("runs", "--store", str(self.store), "--json")
        rec = next(r for r in runs if r["id"] == run_id)
        self.assertEqual(rec["status"], "finished")
        shown = kpilot_json("show", str(run_id), "--store", str(self.store), "--json")
        self.assertEqual(len(shown["nodes"]), 3)
        kinds = [e["kind"] for e in shown["history"]]
        for k in ("start", "evaluated", "promote", "tool_call", "stop", "final"):
            self.assertIn(k, kinds)
        self.assertTrue(shown["options"]["generator"].startswith("agent:"))
        report = subprocess.run([KPILOT, "report", str(run_id), "--store", str(self.store), "--out",
                                 str(Path(self.tmp.name) / "rep")], capture_output=True, text=True)
        self.assertEqual(report.returncode, 0, report.stderr)

    def test_the_modern_envelope_skills_and_code_tools(self):
        async def session():
            async with Client(server(self.store), mode="auto") as c:
                self.assertEqual(c.protocol_version, "2026-07-28")
                s = await c.call_tool("search_skills", {"query": "unroll the saxpy loop with restrict pointers"})
                ids = [card["id"] for card in s.structured_content["cards"]]
                self.assertIn("tiling-notes", ids)
                card = next(x for x in s.structured_content["cards"] if x["id"] == "tiling-notes")
                self.assertTrue(card["text_only"])
                g = await c.call_tool("get_skill", {"id": "tiling-notes"})
                self.assertIn("__restrict", g.content[0].text)
                found = await c.call_tool("search_code", {"query": "PipelineState"})
                self.assertIn("pipeline.hpp", found.content[0].text)
                path = next(line.split(":")[0] for line in found.content[0].text.splitlines() if "pipeline.hpp" in line)
                read = await c.call_tool("read_file", {"path": path})
                self.assertIn("shared-memory stage", read.content[0].text)
                outside = await c.call_tool("read_file", {"path": "code/../../../../etc/passwd"})
                self.assertTrue(outside.is_error)

        run(session())

    def test_bad_calls_get_the_protocols_errors(self):
        (self.store / "mine.cpp").write_text(RIGHT)

        async def session():
            async with Client(server(self.store, "--max-evals", "1"), mode="legacy") as c:
                cases = [
                    ("no_such_tool", {}, "unknown tool"),
                    ("evaluate", {"source": 3}, "must be a string"),
                    ("evaluate", {"source": RIGHT, "bogus": 1}, "unknown argument `bogus`"),
                    ("evaluate", {}, "either as `source`"),
                    ("evaluate", {"source": "x" * (2 << 20)}, "the limit is"),
                    ("evaluate", {"file": "../../etc/passwd"}, "outside the workspace"),
                    ("evaluate", {"source": RIGHT, "params": {"UNROLL": "3"}}, "must be one of"),
                    ("evaluate", {"source": RIGHT, "parent": 99}, "not a node"),
                    ("get_skill", {"id": "no-such-card"}, "no skill card"),
                ]
                for name, args, text in cases:
                    with self.assertRaises(MCPError, msg=name) as e:
                        await c.call_tool(name, args)
                    self.assertEqual(e.exception.code, -32602, e.exception.message)
                    self.assertIn(text, e.exception.message)
                ok = await c.call_tool("evaluate", {"file": "mine.cpp"})
                self.assertFalse(ok.is_error, ok.content[0].text)
                spent = await c.call_tool("evaluate", {"file": "mine.cpp"})
                self.assertTrue(spent.is_error)
                self.assertIn("evaluations are spent", spent.content[0].text)

        run(session())

    def test_malformed_messages_and_a_client_that_goes_away(self):
        p = subprocess.Popen([KPILOT, "mcp", str(TASK), "--store", str(self.store)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=self.store)

        def ask(line):
            p.stdin.write(line + "\n")
            p.stdin.flush()
            return json.loads(p.stdout.readline())

        self.assertEqual(ask("{not json")["error"]["code"], -32700)
        self.assertEqual(ask('[{"jsonrpc":"2.0","id":1,"method":"ping"}]')["error"]["code"], -32600)
        self.assertEqual(ask('{"jsonrpc":"1.0","id":2,"method":"ping"}')["error"]["code"], -32600)
        self.assertEqual(ask('{"jsonrpc":"2.0","id":3,"method":"resources/list"}')["error"]["code"], -32601)
        self.assertEqual(ask('{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x","arguments":{}},'
                             '"extra":"ignored"}')["error"]["code"], -32602)
        v = ask('{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"_meta":'
                '{"io.modelcontextprotocol/protocolVersion":"1999-01-01"}}}')
        self.assertEqual(v["error"]["code"], -32022)
        self.assertIn("2026-07-28", v["error"]["data"]["supported"])
        self.assertIn("result", ask('{"jsonrpc":"2.0","id":6,"method":"ping"}'))
        # An evaluation of a candidate that sleeps 3 s per call, and the client closes its end.
        slow = json.dumps((HERE / "candidates" / "slow.cpp").read_text())
        p.stdin.write('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"evaluate","arguments":'
                      '{"source":' + slow + '}}}\n')
        p.stdin.flush()
        wait_for("a runner calling the slow candidate", lambda: candidate_loaders(p.pid))
        running = descendants(p.pid)
        p.stdin.close()
        try:
            p.wait(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            self.fail("the server did not end after its client went away")
        self.assertEqual(p.returncode, 0, p.stderr.read())
        left = [pid for pid in running if Path(f"/proc/{pid}").exists()]
        self.assertEqual(left, [], "a runner outlived the server")
        runs = kpilot_json("runs", "--store", str(self.store), "--json")
        self.assertEqual(len(runs), 1)
        self.assertEqual(runs[0]["status"], "interrupted")
        self.assertIn("without finish", runs[0]["stop_reason"])


class CommandAgentTest(unittest.TestCase):
    def test_a_command_agent_calls_the_server_before_writing_its_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            store = Path(tmp) / "store"
            agent = f"command:{sys.executable} {HERE / 'fake_agent.py'}"
            out = subprocess.run([KPILOT, "optimize", str(TASK), "--generator", agent, "--budget", "2", "--drafts", "1",
                                  "--store", str(store), "--json"], capture_output=True, text=True, timeout=600)
            self.assertEqual(out.returncode, 0, out.stderr[-3000:])
            result = json.loads(out.stdout)
            self.assertEqual(result["evaluations"], 2)
            shown = kpilot_json("show", str(result["run"]), "--store", str(store), "--json")
            child = next(n for n in shown["nodes"] if n["node"] == 1)
            self.assertIn("checked with kpilot mcp first (passed)", child["summary"])
            # The agent's own session, kept beside the store.
            sessions = list((store / "agent-sessions").iterdir())
            self.assertEqual(len(sessions), 1, sessions)
            runs = kpilot_json("runs", "--store", str(sessions[0]), "--json")
            self.assertEqual(len(runs), 1)
            agent_run = kpilot_json("show", str(runs[0]["id"]), "--store", str(sessions[0]), "--json")
            start = next(e for e in agent_run["history"] if e["kind"] == "start")["payload"]
            self.assertEqual(start["context"], {"run": result["run"], "node": 0})
            self.assertEqual(len(agent_run["nodes"]), 2)  # the parent as node 0, the agent's evaluation


class AgentSkillsTest(unittest.TestCase):
    def test_a_folder_of_plain_agent_skills_validates_and_lists_as_text_only(self):
        v = subprocess.run([KPILOT, "skills", "validate", str(HERE / "agent_skills")], capture_output=True, text=True)
        self.assertEqual(v.returncode, 0, v.stdout + v.stderr)
        listed = subprocess.run([KPILOT, "skills", "list", "--skills", str(HERE / "agent_skills")],
                                capture_output=True, text=True, check=True).stdout
        line = next(l for l in listed.splitlines() if l.startswith("tiling-notes"))
        self.assertIn("(text only)", line)


if __name__ == "__main__":
    unittest.main(verbosity=2)
