"""A check both MCP clients make (mcp_client.py over stdio, mcp_http_client.py
over streamable HTTP); imported from the script's own directory."""

import json


async def check_progress(session) -> None:
    """A long command reports progress with its latest line, at least every
    few seconds, and its result is unchanged."""
    updates = []

    async def on_progress(progress, total, message):
        updates.append((progress, message))

    long = await session.call_tool(
        "run_command",
        {"command": "for i in 1 2 3 4 5; do echo step $i; sleep 0.7; done; sleep 2.5"},
        progress_callback=on_progress,
    )
    assert json.loads(long.content[0].text)["stdout"].count("step") == 5, long
    messages = [m for _, m in updates if m]
    assert len(messages) >= 3 and messages[0].startswith("step"), updates
    assert messages[-1] == "step 5", updates
    assert len(updates) > len(set(messages)), "a heartbeat while it printed nothing"
    assert [p for p, _ in updates] == sorted(p for p, _ in updates), updates
