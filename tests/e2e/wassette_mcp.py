"""An MCP client (the official `mcp` SDK) against `wassette run` serving the
stateless component over stdio.

Usage: python wassette_mcp.py /path/to/scripts/wassette
The environment (HOME, XDG_*, the E2B_* variables) is passed to wassette as
it is. Prints the sandbox id on success; raises otherwise.
"""

import json
import os
import sys

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def result(answer) -> dict:
    assert not answer.is_error, answer
    return json.loads(answer.content[0].text)


async def main(wassette: str) -> None:
    params = StdioServerParameters(
        command=wassette, args=["run", "--disable-builtin-tools"], env=dict(os.environ)
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            # wassette loads its components in the background: a list
            # taken before the load ends is empty (seen once in CI).
            for _ in range(40):
                tools = {t.name: t for t in (await session.list_tools()).tools}
                if tools:
                    break
                await anyio.sleep(0.25)
            assert "e2b-run-code" in tools and "e2b-close-sandbox" in tools, sorted(tools)
            assert tools["e2b-run-code"].description.startswith("Run code in"), tools["e2b-run-code"]
            empty = {"sandbox-id": "", "language": "", "timeout-seconds": 0}
            # wassette lists tools from its cached metadata and loads the
            # component and restores its policy in the background: a first
            # call can come too early (an error, or a request the not yet
            # restored policy blocks, which fails before any sandbox exists).
            for attempt in range(20):
                answer = await session.call_tool("e2b-run-code", {**empty, "code": "x = 41"})
                if not answer.is_error and json.loads(answer.content[0].text).get("success"):
                    break
                print(f"attempt {attempt}: {answer.content}", file=sys.stderr)
                await anyio.sleep(0.5)
            first = result(answer)
            assert first["success"] and first["sandbox_id"], first
            sandbox = first["sandbox_id"]
            second = result(
                await session.call_tool(
                    "e2b-run-code", {**empty, "sandbox-id": sandbox, "code": "print(x + 1)"}
                )
            )
            assert second["stdout"] == "42\n", second
            closed = result(await session.call_tool("e2b-close-sandbox", {"sandbox-id": sandbox}))
            assert closed["closed"] == "killed", closed
            print(sandbox)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
