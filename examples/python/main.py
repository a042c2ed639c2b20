"""E2B sandbox tools for an agent, from Python, with the e2b-tools package.

    pip install e2b_tools-0.1.0-py3-none-any.whl   # bindings/python/build or scripts/dist makes it
    export E2B_API_KEY=e2b_...                      # or the variables `e2b-tools local serve` prints
    python main.py

A session (one instance, one sandbox), typed calls (run_code keeping state,
a file round trip), the tool lists for OpenAI and Anthropic, and tool calls
answered as they come from a model. ``answer_openai`` and
``answer_anthropic`` are the part to copy into an agent loop.
"""

import json
import sys
from typing import Any, Dict, List

import e2b_tools


def answer_openai(e2b: e2b_tools.E2BTools, tool_calls: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The ``role: "tool"`` messages answering a chat completion's
    ``message.tool_calls`` (as dicts: ``message.model_dump()["tool_calls"]``
    with the OpenAI SDK). A failing tool is an answer too
    (``"success": false``), never an exception."""
    return [
        {
            "role": "tool",
            "tool_call_id": call["id"],
            # The arguments arrive as JSON text; call_tool takes it as is.
            "content": json.dumps(e2b.call_tool(call["function"]["name"], call["function"]["arguments"])),
        }
        for call in tool_calls
    ]


def answer_anthropic(e2b: e2b_tools.E2BTools, content: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The ``tool_result`` blocks answering the ``tool_use`` blocks of an
    Anthropic message's ``content`` (as dicts: ``block.model_dump()`` with
    the Anthropic SDK); send them back as the next user message."""
    results = []
    for block in content:
        if block["type"] != "tool_use":
            continue
        result = e2b.call_tool(block["name"], block["input"])
        results.append(
            {
                "type": "tool_result",
                "tool_use_id": block["id"],
                "content": json.dumps(result),
                "is_error": not result["success"],
            }
        )
    return results


def main() -> int:
    if "E2B_API_KEY" not in e2b_tools.e2b_env():
        print(
            "Set E2B_API_KEY (real E2B), or start `e2b-tools local serve` and export the variables it prints.",
            file=sys.stderr,
        )
        return 2

    # One instance is one session: its sandbox is created by the first tool
    # call and killed when the block ends. The instance sees only the
    # E2B_* variables, and may reach only the E2B hosts they name.
    with e2b_tools.load() as e2b:
        e2b.configure(timeout_seconds=120, metadata={"example": "python"})

        # What a model is given: a system prompt fragment and the tools.
        print(f"instructions: {len(e2b.instructions())} characters")
        openai_tools = e2b.openai_chat_tools()  # chat.completions.create(tools=...)
        anthropic_tools = e2b.anthropic_tools()  # messages.create(tools=...)
        print("tools:", ", ".join(tool["function"]["name"] for tool in openai_tools))
        print(json.dumps(anthropic_tools[0])[:100] + " ...")

        # Typed calls: dataclasses back, failures raised as ToolError.
        e2b.run_code("x = 41")
        print("run_code x + 1 ->", e2b.run_code("x + 1").text)
        e2b.write_file("notes/todo.txt", "buy milk\n")
        print("read_file ->", repr(e2b.read_file("notes/todo.txt")))
        print("list_files ->", [entry.name for entry in e2b.list_files("notes")])
        try:
            e2b.read_file("notes/missing.txt")
        except e2b_tools.ToolError as err:
            print(f"read_file missing -> ToolError {err.kind}: {err}")

        # Tool calls as a model sends them, answered with the JSON it expects.
        openai_calls = [
            {"id": "call_1", "type": "function", "function": {"name": "run_code", "arguments": '{"code": "x * 2"}'}},
            {"id": "call_2", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "nope"}'}},
        ]
        for message in answer_openai(e2b, openai_calls):
            print("openai tool message ->", json.dumps(message))
        anthropic_content = [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_1", "name": "run_command", "input": {"command": "ls notes"}},
        ]
        for block in answer_anthropic(e2b, anthropic_content):
            print("anthropic tool_result ->", json.dumps(block))
        print("sandbox:", e2b.sandbox_id())
    print("sandbox after the block:", e2b.sandbox_id())
    return 0


if __name__ == "__main__":
    sys.exit(main())
