"""e2b_tools.adk.E2BPlugin in a real Google ADK run, driven by a scripted
model, and the same script with e2b-adk 0.1.2's E2BPlugin: the function
responses, the declarations the model sees, the sandbox killed when the
runner closes, and the options."""

from __future__ import annotations

import asyncio
import copy
from typing import Any, AsyncGenerator, Dict, List, Tuple

import pytest
from google.adk.agents import Agent
from google.adk.apps import App
from google.adk.models import BaseLlm, LlmRequest, LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types
from pydantic import Field

import e2b_tools.adk

from conftest import SIX, Ticker, sandboxes

# What the scripted model calls, in order: state across calls, a file
# written then read, a command, and a background server fetched from.
SCRIPT: List[Tuple[str, Dict[str, Any]]] = [
    ("run_code", {"code": "x = 41"}),
    ("run_code", {"code": "x + 1"}),
    ("write_file", {"path": "site/hello.txt", "content": "hello from adk\n"}),
    ("read_file", {"path": "site/hello.txt"}),
    ("list_files", {"path": "site"}),
    ("run_command", {"command": "echo out; echo err >&2; exit 3"}),
    ("start_background_command", {"command": "python3 -m http.server 8123", "cwd": "site"}),
    (
        "run_command",
        {"command": "for i in $(seq 100); do curl -sf localhost:8123/hello.txt && exit 0; sleep 0.1; done; exit 1"},
    ),
    ("read_file", {"path": "site/missing.txt"}),
]

# The responses e2b-tools must give (e2b-adk must give the same, checked below).
EXPECTED: List[Dict[str, Any]] = [
    {"stdout": "", "stderr": "", "text": "", "error": "", "success": True},
    {"stdout": "", "stderr": "", "text": "42", "error": "", "success": True},
    {"path": "site/hello.txt", "success": True},
    {"path": "site/hello.txt", "content": "hello from adk\n", "success": True},
    {"path": "site", "entries": [{"name": "hello.txt", "type": "file"}], "success": True},
    {
        "command": "echo out; echo err >&2; exit 3",
        "stdout": "out\n",
        "stderr": "err\n",
        "exit_code": 3,
        "success": True,
    },
    {"command": "python3 -m http.server 8123", "pid": "<pid>", "preview_url": None, "success": True},
    {"command": SCRIPT[7][1]["command"], "stdout": "hello from adk\n", "stderr": "", "exit_code": 0, "success": True},
    {
        "success": False,
        "error": "Failed to read file: path 'site/missing.txt' does not exist",
        "partial_output": "",
        "path": "site/missing.txt",
    },
]


class ScriptedLlm(BaseLlm):
    """A model that makes SCRIPT's function calls one per turn, records the
    function responses it gets and the tools it was offered, then stops."""

    script: List[Tuple[str, Dict[str, Any]]]
    responses: List[Tuple[str, Dict[str, Any]]] = Field(default_factory=list)
    declarations: List[types.FunctionDeclaration] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        if not self.declarations:
            for tool in llm_request.config.tools or []:
                self.declarations.extend(tool.function_declarations or [])
        for part in llm_request.contents[-1].parts or []:
            if part.function_response:
                self.responses.append((part.function_response.name, part.function_response.response))
        step = len(self.responses)
        if step < len(self.script):
            name, args = self.script[step]
            part = types.Part(function_call=types.FunctionCall(name=name, args=copy.deepcopy(args)))
        else:
            part = types.Part(text="done")
        yield LlmResponse(content=types.Content(role="model", parts=[part]))


def normalise(response: Dict[str, Any]) -> Dict[str, Any]:
    """Only what must differ between two runs: a background process's pid
    (each sandbox numbers its own processes)."""
    return {key: "<pid>" if key == "pid" and isinstance(value, int) else value for key, value in response.items()}


async def run(plugin: Any) -> Tuple[ScriptedLlm, List[str], List[str], List[str]]:
    """Runs SCRIPT through an ADK runner whose app holds ``plugin``; the
    model and the server's sandboxes before, during and after the run
    (after the runner closed)."""
    before = sandboxes()
    model = ScriptedLlm(model="scripted", script=SCRIPT)
    agent = Agent(name="coder", model=model, instruction="Use the sandbox.", tools=plugin.get_tools())
    runner = InMemoryRunner(app=App(name="e2b_adk_test", root_agent=agent, plugins=[plugin]))
    session = await runner.session_service.create_session(app_name="e2b_adk_test", user_id="user")
    message = types.Content(role="user", parts=[types.Part(text="Run the script.")])
    async for _ in runner.run_async(user_id="user", session_id=session.id, new_message=message):
        pass
    during = sandboxes()
    await runner.close()
    return model, before, during, sandboxes()


def test_a_scripted_adk_run_matches_e2b_adk_and_kills_its_sandbox(server):
    from e2b_adk import E2BPlugin as E2BAdkPlugin

    ours, before, during, after = asyncio.run(run(e2b_tools.adk.E2BPlugin()))
    assert [name for name, _ in ours.responses] == [name for name, _ in SCRIPT]
    assert [normalise(response) for _, response in ours.responses] == EXPECTED
    # One sandbox for the whole run, killed when the runner closed.
    assert len(set(during) - set(before)) == 1, (before, during)
    assert after == before

    theirs, before, during, after = asyncio.run(run(E2BAdkPlugin()))
    assert [normalise(response) for _, response in theirs.responses] == [
        normalise(response) for _, response in ours.responses
    ]
    assert len(set(during) - set(before)) == 1 and after == before

    # What the model was offered.
    our_tools = {d.name: d.model_dump(exclude_none=True) for d in ours.declarations}
    their_tools = {d.name: d.model_dump(exclude_none=True) for d in theirs.declarations}
    assert list(our_tools) == list(their_tools) == SIX
    # Deliberate differences: the arguments e2b-tools adds (binary files,
    # deeper listings), and start_background_command's description, which
    # says that readiness is probed (e2b-adk's says it is not).
    added = {"write_file": {"encoding"}, "read_file": {"encoding"}, "list_files": {"depth"}}
    for name, theirs_declared in their_tools.items():
        mine = our_tools[name]
        if name != "start_background_command":
            assert mine["description"] == theirs_declared["description"], name
        our_params, their_params = mine["parameters"], theirs_declared["parameters"]
        assert our_params.get("required") == their_params.get("required"), name
        assert set(our_params["properties"]) - set(their_params["properties"]) == added.get(name, set()), name
        for prop, schema in their_params["properties"].items():
            assert our_params["properties"][prop] == schema, (name, prop)


def test_a_later_call_after_close_gets_a_fresh_sandbox(server):
    async def main() -> None:
        plugin = e2b_tools.adk.E2BPlugin(metadata={"test": "adk"}, envs={"GREETING": "hi"}, timeout=120)
        run_code, run_command = plugin.get_tools()[:2]
        first = await run_command.run_async(args={"command": 'echo "$GREETING"'}, tool_context=None)
        assert first["stdout"] == "hi\n", first
        assert (await run_code.run_async(args={"code": "y = 1"}, tool_context=None))["success"]
        await plugin.close()
        again = await run_code.run_async(args={"code": "y"}, tool_context=None)
        assert again["success"] and "NameError" in again["error"], again
        await plugin.close()

    before = sandboxes()
    asyncio.run(main())
    assert sandboxes() == before


def test_concurrent_tool_calls_are_serialized_without_blocking_the_loop(server):
    async def main() -> None:
        plugin = e2b_tools.adk.E2BPlugin()
        run_code = plugin.get_tools()[0]
        ticker = Ticker(0.05)
        ticker.start()
        calls = [
            run_code.run_async(args={"code": f"import time\ntime.sleep(0.3)\nprint({n})"}, tool_context=None)
            for n in range(4)
        ]
        results = await asyncio.gather(*calls)
        ticker.stop()
        assert [r["stdout"] for r in results] == ["0\n", "1\n", "2\n", "3\n"]
        # About 1.2 s of sandbox work ran while the event loop kept ticking.
        assert ticker.ticks >= 10, ticker.ticks
        await plugin.close()

    asyncio.run(main())


@pytest.mark.parametrize(
    "options, named",
    [
        ({"mcp": {"servers": {}}}, "'mcp'"),
        ({"proxy": "http://proxy:3128"}, "'proxy'"),
        ({"headers": {"X-A": "b"}}, "'headers'"),
        ({"secure": False}, "'secure'"),
        ({"network": {"rules": {}}}, "'network.rules'"),
        ({"network": {"allow_out": lambda ctx: []}}, "'network.allow_out'"),
        ({"lifecycle": {"on_timeout": {"action": "pause", "mode": "filesystem"}}}, "'lifecycle.on_timeout.mode'"),
        ({"no_such_option": 1}, "'no_such_option'"),
    ],
)
def test_options_the_component_cannot_honour_are_refused_by_name(options, named):
    with pytest.raises(ValueError, match=named):
        e2b_tools.adk.E2BPlugin(**options)


def test_options_the_component_honours_are_accepted(server):
    plugin = e2b_tools.adk.E2BPlugin(
        template="code-interpreter-v1",
        timeout=600,
        secure=True,
        allow_internet_access=False,
        network={"allow_out": ["1.1.1.1"], "deny_out": ["0.0.0.0/0"]},
        lifecycle={"on_timeout": {"action": "pause"}, "auto_resume": True},
        volume_mounts={"/mnt/data": "data"},
        request_timeout=30.5,
        proxy=None,
        plugin_name="sandbox",
    )
    assert plugin.name == "sandbox"
    assert [tool.name for tool in plugin.get_tools()][0] == "run_code"
    with pytest.raises(ValueError, match="timeout"):
        e2b_tools.adk.E2BPlugin(timeout=0)


def test_the_plugin_and_the_executor_take_the_tool_selection(server):
    plugin = e2b_tools.adk.E2BPlugin(tools="all")
    names = [tool.name for tool in plugin.get_tools()]
    assert "get_background_output" in names and "create_snapshot" in names, names
    plugin = e2b_tools.adk.E2BPlugin(tools=["read_file", "list_files"])
    assert [tool.name for tool in plugin.get_tools()] == ["read_file", "list_files"]
    with pytest.raises(ValueError, match="nope"):
        e2b_tools.adk.E2BPlugin(tools=["nope"])
    executor = e2b_tools.adk.E2BCodeExecutor(tools="all")
    assert executor._options["tools"] == "all"


def test_plugin_events_carry_the_adk_run_and_agent(server):
    events: List[Any] = []
    plugin = e2b_tools.adk.E2BPlugin(on_event=events.append)
    model, before, during, after = asyncio.run(run(plugin))
    assert after == before
    ends = [e for e in events if e.kind == "exec_end"]
    assert [e.tool for e in ends] == [name for name, _ in SCRIPT]
    assert {e.agent for e in ends} == {"coder"}
    assert len({e.run_id for e in ends}) == 1 and ends[0].run_id
    assert [e.kind for e in events][-1] == "sandbox_stop"

    # An exception escaping a sandbox tool (a bug: they return failures)
    # is an error event, tagged the same way.
    tool = plugin.get_tools()[0]
    context = type("ToolContext", (), {"invocation_id": "run-7", "agent_name": "coder"})()
    asyncio.run(
        plugin.on_tool_error_callback(tool=tool, tool_args={}, tool_context=context, error=RuntimeError("boom"))
    )
    for _ in range(100):
        if events[-1].kind == "error":
            break
        import time

        time.sleep(0.05)
    error = events[-1]
    assert (error.kind, error.tool, error.run_id, error.agent) == ("error", "run_code", "run-7", "coder")
    assert "RuntimeError: boom" in error.detail
