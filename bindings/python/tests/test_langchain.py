"""e2b_tools.langchain against the local server: a LangChain agent loop
(langchain-core's fake chat model answering with tool calls) whose two
tools share the toolkit's sandbox, sync and async; the tools' schemas;
unknown arguments; the sandbox killed by close."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Dict, List

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool

from e2b_tools.langchain import E2BToolkit

from conftest import SIX, sandboxes


def scripted() -> GenericFakeChatModel:
    calls: List[Dict[str, Any]] = [
        {"name": "write_file", "args": {"path": "notes.txt", "content": "shared\n"}, "id": "call-1"},
        {"name": "run_code", "args": {"code": "print(open('notes.txt').read().strip(), 6 * 7)"}, "id": "call-2"},
    ]
    return GenericFakeChatModel(
        messages=iter([AIMessage(content="", tool_calls=[call]) for call in calls] + [AIMessage(content="done")])
    )


def test_an_async_agent_loop_calls_two_tools_that_share_a_sandbox(server):
    async def main() -> List[Any]:
        before = sandboxes()
        async with E2BToolkit() as toolkit:
            tools = {tool.name: tool for tool in toolkit.get_tools()}
            model = scripted()
            messages: List[Any] = [HumanMessage("Write a note, then read it from code.")]
            while True:
                answer = await model.ainvoke(messages)
                messages.append(answer)
                if not answer.tool_calls:
                    break
                for call in answer.tool_calls:
                    messages.append(await tools[call["name"]].ainvoke(call))
            assert len(set(sandboxes()) - set(before)) == 1
        assert set(sandboxes()) <= set(before)
        return messages

    messages = asyncio.run(main())
    replies = [m for m in messages if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in replies] == ["call-1", "call-2"]
    assert json.loads(replies[0].content) == {"path": "notes.txt", "success": True}
    assert json.loads(replies[1].content)["stdout"] == "shared 42\n"
    assert messages[-1].content == "done"


def test_the_sync_loop_schemas_and_unknown_arguments(server):
    before = sandboxes()
    toolkit = E2BToolkit(timeout_seconds=120)
    tools = toolkit.get_tools()
    assert [tool.name for tool in tools] == SIX
    specs = {spec.name: spec for spec in toolkit.e2b.list_tools()}
    for tool in tools:
        openai = convert_to_openai_tool(tool)["function"]
        assert openai["description"] == specs[tool.name].description
        assert openai["parameters"]["properties"] == specs[tool.name].parameters["properties"]
    by_name = {tool.name: tool for tool in tools}
    model = scripted()
    messages: List[Any] = [HumanMessage("go")]
    while True:
        answer = model.invoke(messages)
        messages.append(answer)
        if not answer.tool_calls:
            break
        messages.extend(by_name[call["name"]].invoke(call) for call in answer.tool_calls)
    assert json.loads(messages[-2].content)["stdout"] == "shared 42\n"
    # An argument the tool does not take: a clear failure the model reads.
    refused = json.loads(by_name["read_file"].invoke({"path": "notes.txt", "bogus": 1}))
    assert refused["success"] is False and "bogus" in refused["error"], refused
    toolkit.close()
    assert set(sandboxes()) <= set(before)
