"""e2b_tools.openai_agents with the real OpenAI Agents SDK: its Runner, with
a scripted Model (no network), calls two tools that share a sandbox."""

from __future__ import annotations

import asyncio
import json
from typing import Any, List, Tuple

from agents import Agent, Model, ModelResponse, RunConfig, Runner, Usage, set_tracing_disabled
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

import e2b_tools
from e2b_tools.openai_agents import function_tools

from conftest import SIX, sandboxes

set_tracing_disabled(True)

CALLS: List[Tuple[str, dict]] = [
    ("write_file", {"path": "notes.txt", "content": "shared\n"}),
    ("run_code", {"code": "print(open('notes.txt').read().strip(), 6 * 7)"}),
    ("read_file", {"path": "notes.txt", "bogus": 1}),
]


class ScriptedModel(Model):
    """Calls CALLS one per turn, records the tool outputs it is given."""

    def __init__(self) -> None:
        self.step = 0
        self.outputs: List[Any] = []
        self.offered: List[Any] = []

    async def get_response(self, system_instructions, input, model_settings, tools, *args: Any, **kwargs: Any):
        self.offered = tools
        if isinstance(input, list):
            self.outputs = [item["output"] for item in input if item.get("type") == "function_call_output"]
        if self.step < len(CALLS):
            name, arguments = CALLS[self.step]
            self.step += 1
            output: List[Any] = [
                ResponseFunctionToolCall(
                    type="function_call",
                    call_id=f"call-{self.step}",
                    name=name,
                    arguments=json.dumps(arguments),
                    id=f"fc-{self.step}",
                    status="completed",
                )
            ]
        else:
            text = ResponseOutputText(type="output_text", text="done", annotations=[])
            output = [
                ResponseOutputMessage(id="m", type="message", role="assistant", status="completed", content=[text])
            ]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any):
        raise NotImplementedError


def test_an_agents_sdk_run_calls_two_tools_in_one_sandbox(component, server):
    before = sandboxes()
    with component.instantiate() as e2b:
        tools = function_tools(e2b)
        assert [tool.name for tool in tools] == SIX
        model = ScriptedModel()
        agent = Agent(name="coder", instructions="Use the sandbox.", model=model, tools=tools)
        result = asyncio.run(Runner.run(agent, "Write a note, then read it.", run_config=RunConfig()))
        assert result.final_output == "done"
        outputs = [json.loads(output) for output in model.outputs]
        assert outputs[0] == {"path": "notes.txt", "success": True}
        assert outputs[1]["stdout"] == "shared 42\n"
        assert outputs[2]["success"] is False and "Unknown argument(s) for read_file: bogus" in outputs[2]["error"]
        offered = next(tool for tool in model.offered if tool.name == "run_code")
        assert offered.params_json_schema == e2b.list_tools()[0].parameters
        assert len(set(sandboxes()) - set(before)) == 1
    assert set(sandboxes()) <= set(before)
    try:
        function_tools("not an instance")  # type: ignore[arg-type]
        raise AssertionError("a str was accepted")
    except TypeError:
        pass
    assert e2b_tools.EVENT_KINDS[0] == "sandbox_start"
