"""E2B sandbox tools for AI agents, as a WebAssembly component run by
wasmtime.

Six tools that let an agent run code safely in an E2B sandbox (``run_code``,
``run_command``, ``write_file``, ``read_file``, ``list_files``,
``start_background_command``, with e2b-adk 0.1.2's result dicts) plus two
opt-in background-process tools, without the E2B SDK::

    import e2b_tools

    with e2b_tools.load() as e2b:              # one instance = one sandbox
        tools = e2b.openai_chat_tools()        # or openai_responses_tools(), anthropic_tools()
        result = e2b.call_tool("run_code", '{"code": "print(6 * 7)"}')

``e2b_tools.adk.E2BPlugin`` is a drop-in replacement for e2b-adk's plugin,
``e2b_tools.adk.E2BCodeExecutor`` an ADK code executor;
``e2b_tools.langchain`` and ``e2b_tools.openai_agents`` give the tools to
LangChain and the OpenAI Agents SDK (each an extra). ``load(on_event=...)``
takes a callback of lifecycle events, and an instance never closed has its
sandbox killed when the process ends. ``WarmPool(n, **config)`` makes
sandboxes ahead: ``pool.take()`` gives an instance whose first call does
not wait for one.

With nothing set (no ``E2B_API_KEY``, no ``E2B_API_URL``, no endpoint
given to ``configure``), the sandboxes run on this machine: the package
starts the ``e2b-tools`` CLI's local server (``$E2B_TOOLS_CLI``, else
``e2b-tools`` on ``PATH``) once per process, and it stops when the process
ends (:class:`LocalServerError` when there is no CLI).
"""

from ._cache import CACHE_ENV, default_cache_dir
from ._core import InstanceError, ToolError
from ._events import KINDS as EVENT_KINDS
from ._events import Event, Subscription
from ._local import LocalServerError
from ._host import (
    DEFAULT_MEMORY_LIMIT,
    BackgroundProcess,
    CommandOutput,
    DirEntry,
    E2BTools,
    ForkFailure,
    Forks,
    NetworkRules,
    OutputOffsets,
    ProcessOutput,
    RichResult,
    RunCodeOutput,
    Snapshot,
    StoppedProcess,
    ToolHints,
    ToolsComponent,
    ToolSpec,
    VolumeMount,
    default_wasm_path,
    e2b_env,
    load,
)
from ._policy import DEFAULT_DOMAIN, OutboundPolicy, PolicyError
from ._pool import MAX_POOL_SIZE, WAITING_TIMEOUT, PoolStats, WarmPool

__version__ = "0.1.0"

__all__ = [
    "CACHE_ENV",
    "DEFAULT_DOMAIN",
    "DEFAULT_MEMORY_LIMIT",
    "BackgroundProcess",
    "CommandOutput",
    "DirEntry",
    "E2BTools",
    "EVENT_KINDS",
    "ForkFailure",
    "Forks",
    "Event",
    "InstanceError",
    "LocalServerError",
    "MAX_POOL_SIZE",
    "NetworkRules",
    "OutboundPolicy",
    "OutputOffsets",
    "PolicyError",
    "PoolStats",
    "ProcessOutput",
    "RichResult",
    "RunCodeOutput",
    "Snapshot",
    "StoppedProcess",
    "Subscription",
    "ToolError",
    "ToolHints",
    "ToolSpec",
    "ToolsComponent",
    "VolumeMount",
    "WAITING_TIMEOUT",
    "WarmPool",
    "__version__",
    "default_cache_dir",
    "default_wasm_path",
    "e2b_env",
    "load",
]
