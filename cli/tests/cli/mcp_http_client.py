"""MCP over streamable HTTP against `e2b-tools mcp --http`, with the official
`mcp` SDK's client, and the local server's API to count sandboxes.

Usage: python mcp_http_client.py PHASE MCP_URL TOKEN API_URL API_KEY
  PHASE "sessions": auth, origin, two concurrent sessions with separate
        sandboxes, every tool, the session cap, a closed session's sandbox
        killed; leaves one session (with a sandbox) open on purpose.
  PHASE "after-shutdown": no sandbox is left.
  PHASE "stateless-pool" (a server with --warm-pool 1): a client of the
        stateless revision; its second call that names no sandbox runs in
        one made before the call (the first call started the pool); both
        sandboxes closed, the pools' two left waiting.
Prints OK on success; raises (non-zero exit) otherwise.
"""

import json
import sys
import time

import anyio
import httpx
from jsonschema import Draft202012Validator
from mcp import Client
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from mcp_progress import check_progress

PHASE, URL, TOKEN, API_URL, API_KEY = sys.argv[1:6]
AUTH = {"Authorization": f"Bearer {TOKEN}"}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def live_sandboxes() -> list:
    answer = httpx.get(f"{API_URL}/sandboxes", headers={"X-API-Key": API_KEY}, timeout=10)
    answer.raise_for_status()
    return [s for s in answer.json() if s.get("state", "running") == "running"]


def wait_for_sandboxes(count: int) -> None:
    for _ in range(100):
        if len(live_sandboxes()) == count:
            return
        time.sleep(0.1)
    raise AssertionError(f"expected {count} live sandboxes, got {live_sandboxes()}")


async def call(session, schemas, tool, args):
    result = await session.call_tool(tool, args)
    payload = json.loads(result.content[0].text)
    assert result.structured_content == payload, result
    Draft202012Validator(schemas[tool]).validate(payload)
    return payload


async def sessions() -> None:
    # No token, a wrong one, a foreign Origin: refused before any session.
    assert httpx.post(URL, json=INIT, headers=ACCEPT).status_code == 401
    wrong = {**ACCEPT, "Authorization": "Bearer nope"}
    assert httpx.post(URL, json=INIT, headers=wrong).status_code == 401
    evil = {**ACCEPT, **AUTH, "Origin": "http://evil.example"}
    assert httpx.post(URL, json=INIT, headers=evil).status_code == 403
    assert httpx.post(URL, content=b"{not json", headers={**ACCEPT, **AUTH}).status_code in (400, 415, 422)
    # A body over the bound is refused before it is read.
    huge = b"x" * (65 * 1024 * 1024 + 1)
    assert httpx.post(URL, content=huge, headers={**ACCEPT, **AUTH}, timeout=60).status_code == 413
    with httpx.Client(headers={**ACCEPT, **AUTH}, timeout=60) as raw:
        sid = raw.post(URL, json=INIT).headers["mcp-session-id"]
        headers = {"mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}
        raw.post(URL, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
        # An unknown method is JSON-RPC's "method not found".
        unknown = raw.post(URL, json={"jsonrpc": "2.0", "id": 7, "method": "tools/explode"}, headers=headers)
        assert '"code":-32601' in unknown.text.replace(" ", ""), unknown.text
        # After DELETE the session is gone: 404, as the specification says.
        assert raw.delete(URL, headers=headers).status_code in (200, 202, 204)
        closed = raw.post(URL, json={"jsonrpc": "2.0", "id": 8, "method": "tools/list"}, headers=headers)
        assert closed.status_code == 404, closed
        # And a DELETE of it again, or of a session never made, is 404 too.
        assert raw.delete(URL, headers=headers).status_code == 404
        never = {**headers, "mcp-session-id": "never-made"}
        assert raw.delete(URL, headers=never).status_code == 404
        # A batch on a session of a later revision is refused, saying why.
        sid = raw.post(URL, json=INIT).headers["mcp-session-id"]
        headers = {"mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}
        batch = [{"jsonrpc": "2.0", "id": 2, "method": "ping"}]
        refused = raw.post(URL, json=batch, headers=headers)
        assert refused.status_code == 400 and "2025-03-26 only" in refused.text, refused.text
        assert raw.delete(URL, headers=headers).status_code in (200, 202, 204)
    # A 2025-03-26 session (no protocol header, as that revision sends
    # none) takes batches, answered as one JSON array.
    with httpx.Client(headers={**ACCEPT, **AUTH}, timeout=60) as raw:
        old = {**INIT, "params": {**INIT["params"], "protocolVersion": "2025-03-26"}}
        opened = raw.post(URL, json=old)
        assert "2025-03-26" in opened.text, opened.text
        headers = {"mcp-session-id": opened.headers["mcp-session-id"]}
        batch = [
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            {"jsonrpc": "2.0", "id": 3, "method": "ping"},
        ]
        answered = raw.post(URL, json=batch, headers=headers)
        assert answered.status_code == 200, answered.text
        replies = answered.json()
        assert [r["id"] for r in replies] == [2, 3], replies
        assert any(t["name"] == "run_code" for t in replies[0]["result"]["tools"]), replies
        assert raw.delete(URL, headers=headers).status_code in (200, 202, 204)
    wait_for_sandboxes(0)

    async with streamable_http_client(URL, http_client=create_mcp_http_client(headers=AUTH)) as (read_a, write_a):
        async with ClientSession(read_a, write_a) as a:
            await a.initialize()
            listed = await a.list_tools()
            schemas = {t.name: t.output_schema for t in listed.tools}
            assert "get_background_output" in schemas, schemas
            # A session without a tool call holds no sandbox.
            wait_for_sandboxes(0)
            await call(a, schemas, "run_code", {"code": "x = 41"})
            wait_for_sandboxes(1)
            async with streamable_http_client(URL, http_client=create_mcp_http_client(headers=AUTH)) as (read_b, write_b):
                async with ClientSession(read_b, write_b) as b:
                    await b.initialize()
                    other = await call(b, schemas, "run_code", {"code": "x"})
                    assert "NameError" in other["error"], other
                    wait_for_sandboxes(2)
                    # The cap (2): a third session is refused, clearly.
                    third = httpx.post(URL, json=INIT, headers={**ACCEPT, **AUTH})
                    assert third.status_code == 503, third
                    assert "live sessions" in third.json()["error"]["message"], third.text
            # B ended (DELETE): its sandbox is killed, A's is not.
            wait_for_sandboxes(1)
            out = await call(a, schemas, "run_code", {"code": "x + 1"})
            assert out["text"] == "42", out
            await check_progress(a)
            # Every tool, in A's sandbox.
            await call(a, schemas, "write_file", {"path": "n.txt", "content": "kept"})
            read = await call(a, schemas, "read_file", {"path": "n.txt"})
            assert read["content"] == "kept", read
            listing = await call(a, schemas, "list_files", {})
            assert any(e["name"] == "n.txt" for e in listing["entries"]), listing
            command = await call(a, schemas, "run_command", {"command": "cat n.txt"})
            assert command["stdout"] == "kept", command
            # A write over rmcp's own 4 MiB default bound is taken.
            await call(a, schemas, "write_file", {"path": "big.txt", "content": "y" * (6 << 20)})
            size = await call(a, schemas, "run_command", {"command": "wc -c < big.txt"})
            assert size["stdout"].strip() == str(6 << 20), size
            started = await call(
                a, schemas, "start_background_command", {"command": "echo up; sleep 300"}
            )
            for _ in range(50):
                output = await call(a, schemas, "get_background_output", {"pid": started["pid"]})
                if output["stdout"]:
                    break
                await anyio.sleep(0.1)
            assert output["stdout"] == "up\n", output
            stopped = await call(a, schemas, "stop_background_command", {"pid": started["pid"]})
            assert stopped["signal"] == "SIGTERM", stopped
            failed = await a.call_tool("read_file", {"path": "/nope"})
            assert failed.is_error and failed.structured_content["success"] is False, failed
    wait_for_sandboxes(0)

    # A client of the stateless revision (2026-07-28, the SDK's default
    # "auto" mode) has no MCP session: the sandbox travels as sandbox_id.
    transport = streamable_http_client(URL, http_client=create_mcp_http_client(headers=AUTH))
    async with Client(transport) as modern:
        assert modern.protocol_version == "2026-07-28", modern.protocol_version
        listed = await modern.list_tools()
        stateless_schemas = {t.name: t.output_schema for t in listed.tools}
        assert "close_sandbox" in stateless_schemas, stateless_schemas
        first = await call(modern, stateless_schemas, "run_code", {"code": "x = 41"})
        sandbox = first["sandbox_id"]
        again = await call(
            modern, stateless_schemas, "run_code", {"code": "x + 1", "sandbox_id": sandbox}
        )
        assert again["text"] == "42" and again["sandbox_id"] == sandbox, again
        wait_for_sandboxes(1)
        closed = await call(modern, stateless_schemas, "close_sandbox", {"sandbox_id": sandbox})
        assert closed["closed"] == "killed", closed
    wait_for_sandboxes(0)

    # One session left open with a sandbox (no DELETE): shutdown must kill it.
    with httpx.Client(headers={**ACCEPT, **AUTH}, timeout=60) as client:
        init = client.post(URL, json=INIT)
        sid = init.headers["mcp-session-id"]
        headers = {"mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}
        client.post(URL, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
        answer = client.post(
            URL,
            json={"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                  "params": {"name": "run_code", "arguments": {"code": "1"}}},
            headers=headers,
        )
        assert answer.status_code == 200 and '"success\\":true' in answer.text, answer.text
    wait_for_sandboxes(1)


def after_shutdown() -> None:
    wait_for_sandboxes(0)


async def stateless_pool() -> None:
    transport = streamable_http_client(URL, http_client=create_mcp_http_client(headers=AUTH))
    async with Client(transport) as modern:
        assert modern.protocol_version == "2026-07-28", modern.protocol_version
        listed = await modern.list_tools()
        schemas = {t.name: t.output_schema for t in listed.tools}
        first = await call(modern, schemas, "run_command", {"command": "echo one"})
        # The session pool's sandbox, the first call's, the stateless pool's.
        wait_for_sandboxes(3)
        before = {s["sandboxID"] for s in live_sandboxes()}
        second = await call(modern, schemas, "run_command", {"command": "echo two"})
        assert second["stdout"] == "two\n", second
        assert second["sandbox_id"] in before, (second, before)
        assert second["sandbox_id"] != first["sandbox_id"], (first, second)
        for made in (first, second):
            closed = await call(
                modern, schemas, "close_sandbox", {"sandbox_id": made["sandbox_id"]}
            )
            assert closed["closed"] == "killed", closed
    # Refilled: one waits in each pool.
    wait_for_sandboxes(2)


if PHASE == "sessions":
    anyio.run(sessions)
elif PHASE == "stateless-pool":
    anyio.run(stateless_pool)
else:
    after_shutdown()
print("OK")
