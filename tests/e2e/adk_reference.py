"""Runs tool calls through e2b-adk 0.1.2 itself, as ADK calls them.

Reads JSON lines {"tool": name, "args": {...}} on stdin and writes one JSON
result dict per line on stdout. The SDK reads E2B_API_URL, E2B_SANDBOX_URL
and E2B_API_KEY from the environment, so it talks to whatever server the test
started. The e2e suite compares these dicts with the component's `call-tool`
results for the same calls: e2b-adk is the contract, measured, not recalled.
"""

import asyncio
import json
import sys

from e2b_adk import E2BPlugin


async def main() -> None:
    plugin = E2BPlugin()
    tools = {tool.name: tool for tool in plugin.get_tools()}
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            call = json.loads(line)
            tool = tools[call["tool"]]
            result = await tool.run_async(args=call["args"], tool_context=None)
            print(json.dumps(result, ensure_ascii=False), flush=True)
    finally:
        await plugin.close()


asyncio.run(main())
