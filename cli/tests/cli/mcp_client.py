"""MCP client check for `e2b-tools mcp`, using the official `mcp` SDK.

Usage: python mcp_client.py /path/to/e2b-tools
Needs the `mcp` and `jsonschema` packages (target/pyenv has both).
Prints OK on success; raises (non-zero exit) otherwise.
"""

import json
import sys
import time

try:
    from jsonschema import Draft202012Validator
except ImportError as err:
    raise SystemExit(
        f"mcp_client.py: {sys.executable} lacks the `jsonschema` package, which checks the "
        "tools' input schemas; `scripts/bootstrap --test` installs it in target/pyenv"
    ) from err

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from mcp_progress import check_progress

# A 1x1 PNG.
PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)

EXPECTED = {
    "run_code",
    "run_command",
    "write_file",
    "read_file",
    "list_files",
    "start_background_command",
}


async def main(binary: str) -> None:
    # No E2B_API_KEY in the server's environment: the local backend.
    params = StdioServerParameters(command=binary, args=["--rich-results", "mcp"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.server_info.name == "e2b-tools", init

            listed = await session.list_tools()
            names = {tool.name for tool in listed.tools}
            assert names == EXPECTED, names
            for tool in listed.tools:
                assert tool.input_schema["type"] == "object", tool
                Draft202012Validator.check_schema(tool.input_schema)
                # Every tool declares its result's shape; the client checks
                # each call's structuredContent against it.
                Draft202012Validator.check_schema(tool.output_schema)
                assert tool.title and tool.annotations.title == tool.title, tool
            hints = {tool.name: tool.annotations for tool in listed.tools}
            assert hints["read_file"].read_only_hint is True, hints["read_file"]
            assert hints["list_files"].read_only_hint is True
            assert hints["run_command"].read_only_hint is False
            assert hints["run_command"].destructive_hint is True
            assert hints["run_command"].open_world_hint is True
            assert hints["write_file"].idempotent_hint is True
            assert hints["write_file"].open_world_hint is False
            schemas = {tool.name: tool.output_schema for tool in listed.tools}

            result = await session.call_tool("run_code", {"code": "x = 6 * 7\nprint(x)"})
            assert not result.is_error, result
            payload = json.loads(result.content[0].text)
            assert payload["success"] is True, payload
            assert payload["stdout"] == "42\n", payload
            # The same object, structured, matching the declared schema.
            assert result.structured_content == payload, result
            Draft202012Validator(schemas["run_code"]).validate(result.structured_content)

            # State is kept across calls of one connection (one sandbox).
            result = await session.call_tool("run_code", {"code": "x + 1"})
            payload = json.loads(result.content[0].text)
            assert payload["text"] == "43", payload

            # A PNG the code displays comes back as MCP image content.
            code = (
                "import base64\nfrom IPython.display import Image, display\n"
                f"display(Image(data=base64.b64decode('{PNG}')))"
            )
            result = await session.call_tool("run_code", {"code": code})
            assert not result.is_error, result
            images = [c for c in result.content if c.type == "image"]
            assert len(images) == 1, result
            assert images[0].mime_type == "image/png", images[0]
            assert images[0].data == PNG, images[0]

            await check_progress(session)
            # Cancelling a running command (notifications/cancelled, which
            # the client sends when its call is abandoned) kills the
            # process; the session and its sandbox go on.
            with anyio.move_on_after(2):
                await session.call_tool("run_command", {"command": "sleep 300"})
            cancelled_at = time.monotonic()
            # The kernel's command line is long: search, do not list.
            ps = await session.call_tool(
                "run_command", {"command": "ps -eo args | grep -c '^sleep 300' || true"}
            )
            waited = time.monotonic() - cancelled_at
            assert json.loads(ps.content[0].text)["stdout"] == "0\n", ps
            assert waited < 10, f"the cancelled call took {waited:.1f} s to stop"
            print(f"cancelled call stopped within {waited:.2f} s")
            result = await session.call_tool("run_code", {"code": "x + 1"})
            assert json.loads(result.content[0].text)["text"] == "43", result

            # A tool failure is an error result, not a protocol error.
            result = await session.call_tool("read_file", {"path": "/home/user/missing"})
            assert result.is_error, result
            assert result.structured_content["success"] is False, result
            Draft202012Validator(schemas["read_file"]).validate(result.structured_content)
            # The opt-in tools are not offered by default: calling one is
            # the protocol error the spec names for an unknown tool.
            try:
                await session.call_tool("get_background_output", {"pid": 1})
            except MCPError as err:
                assert err.error.code == -32602, err
            else:
                raise AssertionError("get_background_output answered without --tools")
    await background_tools(binary)
    print("OK")


async def background_tools(binary: str) -> None:
    """With --tools all: ten tools, and a background process read and stopped."""
    params = StdioServerParameters(command=binary, args=["--tools", "all", "mcp"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.list_tools()
            names = {tool.name for tool in listed.tools}
            opt_in = {"get_background_output", "stop_background_command", "create_snapshot", "fork_sandbox"}
            assert names == EXPECTED | opt_in, names
            for tool in listed.tools:
                Draft202012Validator.check_schema(tool.input_schema)

            async def call(tool, args):
                result = await session.call_tool(tool, args)
                payload = json.loads(result.content[0].text)
                assert payload["success"] is True and not result.is_error, payload
                return payload

            started = await call("start_background_command", {"command": "echo up; sleep 300"})
            pid = started["pid"]
            for _ in range(50):
                output = await call("get_background_output", {"pid": pid})
                if output["stdout"]:
                    break
                await anyio.sleep(0.1)
            assert output["stdout"] == "up\n" and output["state"] == "running", output
            stopped = await call("stop_background_command", {"pid": pid})
            assert stopped["signal"] == "SIGTERM", stopped


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
