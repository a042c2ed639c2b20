"""The tools as LangChain tools (``pip install 'e2b-tools[langchain]'``:
``langchain-core`` only).

:class:`E2BToolkit` gives one ``BaseTool`` per enabled tool, each with the
component's JSON Schema as its ``args_schema`` and its description, sync
(``invoke``) and async (``ainvoke``, run in a worker thread so the event
loop keeps running). All tools of one toolkit share its sandbox, created by
the first call and killed by :meth:`E2BToolkit.close` (or the end of a
``with`` block, or the process)::

    from e2b_tools.langchain import E2BToolkit

    with E2BToolkit() as toolkit:
        model = chat_model.bind_tools(toolkit.get_tools())
        ...  # each tool call: ToolMessage = tool.invoke(call)

A tool answers with e2b-adk's result dict as JSON text; a failure (a bad
argument, an argument the schema does not name, a missing file) is a
``"success": false`` result the model reads, never an exception.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from langchain_core.tools import BaseTool, BaseToolkit
from pydantic import ConfigDict, PrivateAttr

from ._core import InstanceError
from ._events import Event
from ._host import E2BTools, ToolSpec, shared_component

__all__ = ["E2BLangChainTool", "E2BToolkit"]


class E2BLangChainTool(BaseTool):
    """One sandbox tool of an :class:`E2BToolkit`."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    _e2b: Any = PrivateAttr(default=None)

    def _run(self, run_manager: Any = None, **kwargs: Any) -> str:
        return json.dumps(self._call(kwargs))

    async def _arun(self, run_manager: Any = None, **kwargs: Any) -> str:
        return json.dumps(await asyncio.to_thread(self._call, kwargs))

    def _call(self, arguments: Dict[str, Any]) -> Dict[str, Any]:
        schema = self.args_schema if isinstance(self.args_schema, dict) else {}
        known = set(schema.get("properties", {}))
        unknown = sorted(set(arguments) - known)
        if unknown:
            # The component ignores keys it does not know (as e2b-adk does);
            # a model should hear that its argument went nowhere.
            return {
                "success": False,
                "error": f"Unknown argument(s) for {self.name}: {', '.join(unknown)} "
                f"(it takes {', '.join(sorted(known)) or 'none'})",
                "partial_output": "",
            }
        try:
            result: Dict[str, Any] = self._e2b.call_tool(self.name, arguments)
        except InstanceError as err:
            result = {"success": False, "error": f"Sandbox unavailable: {err}", "partial_output": ""}
        return result


class E2BToolkit(BaseToolkit):
    """The sandbox tools for LangChain: one sandbox per toolkit.

    ``e2b``: an instance to use (default: a new one on the process's shared
    component). ``tools``: which tools (``"default"``, ``"all"`` or names).
    ``on_event``: a lifecycle event callback (see ``E2BTools.subscribe``).
    Other keywords go to ``E2BTools.configure`` (``timeout_seconds``,
    ``template``, ``envs``, …)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    _e2b: Any = PrivateAttr(default=None)
    _specs: List[ToolSpec] = PrivateAttr(default_factory=list)

    def __init__(
        self,
        *,
        e2b: Optional[E2BTools] = None,
        tools: Union[str, Sequence[str], None] = None,
        on_event: Optional[Callable[[Event], Any]] = None,
        **options: Any,
    ) -> None:
        super().__init__()
        self._e2b = e2b if e2b is not None else shared_component().instantiate()
        if on_event is not None:
            self._e2b.subscribe(on_event)
        if tools is not None or options:
            self._e2b.configure(tools=tools, **options)
        self._specs = self._e2b.list_tools()

    @property
    def e2b(self) -> E2BTools:
        """The instance (and so the sandbox) the tools share."""
        return self._e2b  # type: ignore[no-any-return]

    def get_tools(self) -> List[BaseTool]:
        """One LangChain tool per enabled tool, in catalog order."""
        tools: List[BaseTool] = []
        for spec in self._specs:
            tool = E2BLangChainTool(name=spec.name, description=spec.description, args_schema=spec.parameters)
            tool._e2b = self._e2b
            tools.append(tool)
        return tools

    def close(self) -> None:
        """Kills the sandbox and ends the instance."""
        self._e2b.close()

    async def aclose(self) -> None:
        """:meth:`close`, off the event loop."""
        await asyncio.to_thread(self.close)

    def __enter__(self) -> E2BToolkit:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> E2BToolkit:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
