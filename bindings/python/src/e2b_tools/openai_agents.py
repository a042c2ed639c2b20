"""The tools for the OpenAI Agents SDK (``pip install
'e2b-tools[openai-agents]'``): one ``FunctionTool`` per enabled tool, with
the catalog's description and JSON Schema, run in a worker thread so the
event loop keeps running; all share one instance (one sandbox)::

    from agents import Agent, Runner
    from e2b_tools.openai_agents import function_tools

    with e2b_tools.load() as e2b:
        agent = Agent(name="coder", tools=function_tools(e2b))
        result = await Runner.run(agent, "What is 2**100? Compute it.")

A tool answers with e2b-adk's result dict as JSON text; a failure,
including an argument the schema does not name, is a ``"success": false``
result the model reads.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Dict, List

from agents import FunctionTool

from ._core import InstanceError
from ._host import E2BTools

__all__ = ["function_tools"]


def function_tools(e2b: E2BTools) -> List[FunctionTool]:
    """The Agents SDK tools of ``e2b``'s enabled tools, in catalog order.
    Not strict: strict mode needs every property required, and most of
    these arguments are optional."""
    if not isinstance(e2b, E2BTools):
        raise TypeError(f"function_tools takes an E2BTools instance, not {type(e2b).__name__}")
    return [_function_tool(e2b, spec.name, spec.description, spec.parameters) for spec in e2b.list_tools()]


def _function_tool(e2b: E2BTools, name: str, description: str, schema: Dict[str, Any]) -> FunctionTool:
    known = set(schema.get("properties", {}))

    def call(arguments: str) -> Dict[str, Any]:
        try:
            parsed = json.loads(arguments or "{}")
        except json.JSONDecodeError as err:
            return {"success": False, "error": f"Arguments are not JSON: {err}", "partial_output": ""}
        unknown = sorted(set(parsed) - known) if isinstance(parsed, dict) else []
        if unknown:
            return {
                "success": False,
                "error": f"Unknown argument(s) for {name}: {', '.join(unknown)} (it takes {', '.join(sorted(known))})",
                "partial_output": "",
            }
        try:
            return e2b.call_tool(name, arguments or "{}")
        except InstanceError as err:
            return {"success": False, "error": f"Sandbox unavailable: {err}", "partial_output": ""}

    async def invoke(context: Any, arguments: str) -> str:
        return json.dumps(await asyncio.to_thread(call, arguments))

    return FunctionTool(
        name=name,
        description=description,
        params_json_schema=schema,
        on_invoke_tool=invoke,
        strict_json_schema=False,
    )
