"""MCP client check for `e2b-tools mcp`, using the official `mcp` SDK.

Usage: python mcp_client.py /path/to/e2b-tools
Needs the `mcp` and `jsonschema` packages (target/pyenv has both).
Prints OK on success; raises (non-zero exit) otherwise.
"""

import json
import sys

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

            result = await session.call_tool("run_code", {"code": "x = 6 * 7\nprint(x)"})
            assert not result.is_error, result
            payload = json.loads(result.content[0].text)
            assert payload["success"] is True, payload
            assert payload["stdout"] == "42\n", payload

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

            # A tool failure is an error result, not a protocol error.
            result = await session.call_tool("read_file", {"path": "/home/user/missing"})
            assert result.is_error, result
    print("OK")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
