"""A stand-in for an agent CLI of the command: generator (tests/mcp/test_mcp.py): it starts the
kpilot MCP server its workspace's .mcp.json names, through the official SDK, writes a draft (the
parent unrolled by 4), evaluates it there, and only then writes its answer, saying what the
server's verdict was."""

import asyncio
import json
import os
from pathlib import Path

from mcp import StdioServerParameters
from mcp.client.client import Client


async def main():
    work = Path(os.environ["KPILOT_WORKSPACE"])
    server = json.loads((work / ".mcp.json").read_text())["mcpServers"]["kpilot"]
    parent = next((work / "parent").iterdir())
    draft = work / "draft.cpp"
    draft.write_text("#undef UNROLL\n#define UNROLL 4\n" + parent.read_text())
    params = StdioServerParameters(command=server["command"], args=server["args"], env=server.get("env"), cwd=str(work))
    async with Client(params, mode="legacy") as c:
        result = await c.call_tool("evaluate", {"file": "draft.cpp", "summary": "unrolled by 4"})
        verdict = result.structured_content["verdict"] if result.structured_content else "error"
        (work / "AGENT_LOG").write_text(result.content[0].text)
    (work / os.environ["KPILOT_CANDIDATE"]).write_text(
        f"// Summary: unrolled by 4, checked with kpilot mcp first ({verdict})\n" + draft.read_text())


asyncio.run(main())
