"""A Google ADK plugin: a drop-in replacement for e2b-adk 0.1.2's.

Switching ``from e2b_adk import E2BPlugin`` to ``from e2b_tools.adk import
E2BPlugin`` is the whole migration: the same constructor options,
``get_tools()`` with the same six tools (names, parameters, descriptions,
result dicts), and the sandbox killed when the runner closes the plugin::

    from google.adk.agents import Agent
    from google.adk.apps import App
    from google.adk.runners import InMemoryRunner
    from e2b_tools.adk import E2BPlugin

    plugin = E2BPlugin(timeout=600)
    agent = Agent(name="coder", model="gemini-2.5-flash", tools=plugin.get_tools())
    runner = InMemoryRunner(app=App(name="coder", root_agent=agent, plugins=[plugin]))

Options the component cannot honour are refused at construction, naming
the option, rather than ignored.

:class:`E2BCodeExecutor` is an ADK code executor (``LlmAgent(code_executor=
...)``): the model's code blocks run in a stateful sandbox kernel, one per
execution id (ADK's session), input files written first, images and new
files returned as output files::

    executor = E2BCodeExecutor()
    agent = LlmAgent(name="analyst", model="gemini-2.5-flash", code_executor=executor)
    runner = InMemoryRunner(app=App(name="analyst", root_agent=agent, plugins=[executor.plugin]))
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
import mimetypes
import threading
from collections.abc import Mapping
from typing import Any, Callable, Dict, List, Optional, Tuple

from google.adk.code_executors.base_code_executor import BaseCodeExecutor
from google.adk.code_executors.code_execution_utils import CodeExecutionInput, CodeExecutionResult, File
from google.adk.plugins import BasePlugin
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types
from pydantic import PrivateAttr

from ._core import InstanceError, ToolError
from ._events import Event, call_context
from ._host import E2BTools, NetworkRules, ToolSpec, VolumeMount, shared_component
from ._pool import WarmPool

logger = logging.getLogger("e2b_tools.adk")

#: Argument values that may hold credentials or large payloads, masked in logs.
_SENSITIVE_ARGS = frozenset({"command", "content", "code", "envs"})

#: Options of e2b-adk (and the E2B SDK it forwards them to) that the
#: component cannot honour, with the reason given when one is passed.
_REFUSED = {
    "mcp": "the component does not start E2B's MCP gateway",
    "proxy": "wasmtime-py's native wasi:http connects directly; the Rust host (e2b-tools) has proxies",
    "headers": "the component sends no custom request headers",
    "api_headers": "the component sends no custom request headers",
    "debug": "the component has no debug (local envd) mode; use api_url and sandbox_url",
    "retries": "the component has its own retry policy",
    "http_version": "the component speaks HTTP/1.1",
    "logger": "its requests are not logged to a logger",
    "idempotency_key": "the component does not send an idempotency key",
    "iam": "workload identity is not supported",
    "access_token": "the sandbox's access token comes from its creation",
    "validate_api_key": "it has no effect",
}


def _refuse(option: str, reason: str) -> ValueError:
    return ValueError(f"E2BPlugin: option {option!r} is not supported by e2b-tools ({reason})")


def _lifecycle(lifecycle: Mapping[str, Any]) -> Dict[str, Any]:
    """``lifecycle`` (``{"on_timeout": ..., "auto_resume": ...}``, as the
    E2B SDK takes it) as config options."""
    if not isinstance(lifecycle, Mapping):
        raise TypeError("E2BPlugin: lifecycle must be a mapping")
    unknown = sorted(set(lifecycle) - {"on_timeout", "auto_resume"})
    if unknown:
        raise _refuse(f"lifecycle.{unknown[0]}", "only on_timeout and auto_resume are")
    config: Dict[str, Any] = {}
    on_timeout = lifecycle.get("on_timeout")
    if isinstance(on_timeout, Mapping):
        unknown = sorted(set(on_timeout) - {"action"})
        if unknown:
            raise _refuse(f"lifecycle.on_timeout.{unknown[0]}", "only the action is")
        on_timeout = on_timeout.get("action")
    if on_timeout is not None:
        config["on_timeout"] = on_timeout
    if lifecycle.get("auto_resume") is not None:
        config["auto_resume"] = lifecycle["auto_resume"]
    return config


def _network(network: Mapping[str, Any]) -> NetworkRules:
    """``network`` (the E2B SDK's ``SandboxNetworkOpts``) as rules."""
    if not isinstance(network, Mapping):
        raise TypeError("E2BPlugin: network must be a mapping")
    for key in ("rules", "egress_proxy"):
        if key in network:
            raise _refuse(f"network.{key}", "only allow_out, deny_out, allow_public_traffic and mask_request_host are")
    for key in ("allow_out", "deny_out"):
        if callable(network.get(key)):
            raise _refuse(f"network.{key}", "give a list of CIDRs or domains, not a callable")
    unknown = sorted(set(network) - {"allow_out", "deny_out", "allow_public_traffic", "mask_request_host"})
    if unknown:
        raise _refuse(f"network.{unknown[0]}", "unknown network option")
    return NetworkRules(
        allow_out=network.get("allow_out") or (),
        deny_out=network.get("deny_out") or (),
        allow_public_traffic=network.get("allow_public_traffic"),
        mask_request_host=network.get("mask_request_host"),
    )


def _volume_mounts(mounts: Mapping[str, Any]) -> List[VolumeMount]:
    """``volume_mounts`` (mount path to volume name, or to a volume object
    with a ``name``) as mounts."""
    if not isinstance(mounts, Mapping):
        raise TypeError("E2BPlugin: volume_mounts must map mount paths to volumes")
    mounted = []
    for path, volume in mounts.items():
        name = volume if isinstance(volume, str) else getattr(volume, "name", None)
        if not isinstance(name, str):
            raise TypeError(f"E2BPlugin: volume_mounts[{path!r}] must be a volume name or have one")
        mounted.append(VolumeMount(name=name, path=path))
    return mounted


def _schema(json_schema: Mapping[str, Any]) -> types.Schema:
    """A JSON Schema of the catalog as the ``types.Schema`` ADK declares, in
    e2b-adk's vocabulary (type, description, enum, properties, required),
    so the model sees e2b-adk's declarations. Left out: bounds (the
    component checks them and says so) and ``additionalProperties``, which
    the Gemini Developer API refuses."""
    return types.Schema(
        type=types.Type(json_schema["type"].upper()) if "type" in json_schema else None,
        description=json_schema.get("description"),
        enum=json_schema.get("enum"),
        items=_schema(json_schema["items"]) if "items" in json_schema else None,
        properties=(
            {name: _schema(prop) for name, prop in json_schema["properties"].items()}
            if "properties" in json_schema
            else None
        ),
        required=json_schema.get("required") or None,
    )


def _redacted(args: Any) -> Any:
    if not isinstance(args, dict):
        return args
    return {key: "<redacted>" if key in _SENSITIVE_ARGS else value for key, value in args.items()}


class E2BTool(BaseTool):
    """One of the plugin's sandbox tools; its description and parameters
    are the component's catalog entry, which are e2b-adk's."""

    def __init__(self, plugin: E2BPlugin, spec: ToolSpec) -> None:
        super().__init__(name=spec.name, description=spec.description)
        self._plugin = plugin
        self._parameters = spec.parameters

    def _get_declaration(self) -> types.FunctionDeclaration:
        return types.FunctionDeclaration(
            name=self.name, description=self.description, parameters=_schema(self._parameters)
        )

    async def run_async(self, *, args: Dict[str, Any], tool_context: ToolContext) -> Dict[str, Any]:
        """Runs the tool in the plugin's sandbox and returns its result dict.
        Never raises: a failure is a dict with ``"success": False``."""
        return await self._plugin._call_tool(self.name, args, tool_context)


class E2BPlugin(BasePlugin):
    """An ADK plugin that runs tool calls in one E2B sandbox, created by the
    first call and killed when the runner closes the plugin.

    The options are e2b-adk 0.1.2's, which are those of the E2B SDK's
    ``AsyncSandbox.create``: ``api_key`` (default ``E2B_API_KEY``),
    ``template``, ``metadata``, ``envs``, ``timeout`` (seconds),
    ``allow_internet_access``, ``network`` (``allow_out``, ``deny_out``,
    ``allow_public_traffic``, ``mask_request_host``), ``lifecycle``
    (``on_timeout``: ``"kill"`` or ``"pause"``, ``auto_resume``),
    ``volume_mounts`` (mount path to volume name), ``secure`` (True only:
    envd access is always secured), and of the connection: ``domain``,
    ``api_url``, ``sandbox_url``, ``request_timeout`` (seconds).

    Raises ValueError at construction for an option the component cannot
    honour (``mcp``, ``proxy``, ``headers``, network ``rules``, …) or a
    value it rejects, naming the option.

    ``on_event``: a callback (function or coroutine function) of the
    sandbox's lifecycle events (:class:`~e2b_tools.Event`), each tagged with the
    ADK run (``run_id``: the invocation id) and ``agent`` of the tool call;
    an exception escaping a sandbox tool (ADK's ``on_tool_error_callback``)
    is an ``error`` event too.

    ``warm_pool``: a :class:`~e2b_tools.WarmPool` made with the same
    options (``WarmPool(n, template=..., timeout_seconds=...)``, in
    :meth:`~e2b_tools.E2BTools.configure`'s names): the plugin's sandbox
    comes from it, made ahead, so the first tool call does not wait for
    one; a pool of other options is a ValueError."""

    def __init__(
        self,
        *,
        api_key: Optional[str] = None,
        template: Optional[str] = None,
        metadata: Optional[Dict[str, str]] = None,
        envs: Optional[Dict[str, str]] = None,
        timeout: Optional[int] = None,
        secure: Optional[bool] = None,
        allow_internet_access: Optional[bool] = None,
        mcp: Optional[Any] = None,
        network: Optional[Any] = None,
        lifecycle: Optional[Any] = None,
        volume_mounts: Optional[Any] = None,
        plugin_name: str = "e2b_plugin",
        on_event: Optional[Callable[[Event], Any]] = None,
        warm_pool: Optional[WarmPool] = None,
        **opts: Any,
    ) -> None:
        super().__init__(name=plugin_name)
        config: Dict[str, Any] = {
            "api_key": api_key,
            "template": template,
            "metadata": metadata,
            "envs": envs,
            "timeout_seconds": timeout,
            "allow_internet_access": allow_internet_access,
        }
        if secure is False:
            raise _refuse("secure", "envd access is always secured; E2B's SDK ignores secure=False too")
        if mcp is not None:
            raise _refuse("mcp", _REFUSED["mcp"])
        if network is not None:
            config["network"] = _network(network)
        if lifecycle is not None:
            config.update(_lifecycle(lifecycle))
        if volume_mounts is not None:
            config["volume_mounts"] = _volume_mounts(volume_mounts)
        for key, value in opts.items():
            # As in the E2B SDK, an option set to None is not set.
            if value is None:
                continue
            if key in ("domain", "api_url", "sandbox_url"):
                config[key] = value
            elif key == "tools":
                # As the other packages: a name ("default", "all", a tool)
                # or a list of them; the component checks the names.
                config["tools"] = value
            elif key == "request_timeout":
                if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
                    raise ValueError(f"E2BPlugin: request_timeout must be seconds >= 0, not {value!r}")
                config["request_timeout_ms"] = round(value * 1000)
            else:
                raise _refuse(key, _REFUSED.get(key, "unknown option"))
        self._config = {key: value for key, value in config.items() if value is not None}
        if warm_pool is not None:
            if not warm_pool.serves(self._config):
                raise ValueError("E2BPlugin: warm_pool was made with other options than this plugin's")
            self._e2b: E2BTools = warm_pool.take()
            if on_event is not None:
                self._e2b.subscribe(on_event)
        else:
            self._e2b = shared_component().instantiate(on_event=on_event)
            try:
                self._e2b.configure(**self._config)
            except ToolError as err:
                raise ValueError(f"E2BPlugin: {err}") from None
        self._specs = self._e2b.list_tools()
        self._executors: List[E2BCodeExecutor] = []

    def get_tools(self) -> List[BaseTool]:
        """The tools, all sharing this plugin's sandbox: by default the six
        ``run_code``, ``run_command``, ``write_file``, ``read_file``,
        ``list_files``, ``start_background_command``; ``tools="all"`` (or
        a list of names) chooses others, as in the other packages."""
        return [E2BTool(self, spec) for spec in self._specs]

    async def close(self) -> None:
        """Kills the sandbox, and those of the code executors sharing it
        (ADK calls this when the runner closes). A later tool call creates
        a fresh one."""
        for executor in list(self._executors):
            await asyncio.to_thread(executor.close)
        await asyncio.to_thread(self._e2b.shutdown)

    async def _call_tool(self, name: str, args: Dict[str, Any], tool_context: Any = None) -> Dict[str, Any]:
        # The component's calls block: run them off the event loop (the
        # call context follows into the thread). The instance's lock
        # serializes them.
        token = call_context.set(_context_of(tool_context))
        try:
            return await asyncio.to_thread(self._e2b.call_tool, name, args)
        except InstanceError as err:
            return {"success": False, "error": f"Sandbox unavailable: {err}", "partial_output": ""}
        finally:
            call_context.reset(token)

    def _sandbox_for_sharing(self) -> str:
        """The plugin's sandbox, made now if no tool call has made it."""
        sandbox = self._e2b.sandbox_id()
        if sandbox is None:
            self._e2b.call_tool("list_files", {"path": "/"})
            sandbox = self._e2b.sandbox_id()
        if sandbox is None:
            raise InstanceError("the plugin's sandbox could not be created")
        return sandbox

    def _owns(self, tool: BaseTool) -> bool:
        # ADK calls plugin callbacks for every tool of the app.
        return isinstance(tool, E2BTool) and tool._plugin is self

    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: Dict[str, Any], tool_context: ToolContext
    ) -> Optional[Dict[str, Any]]:
        """Logs the sandbox tool about to run (debug level, sensitive
        argument values masked); never changes the call."""
        if self._owns(tool):
            logger.debug("E2B tool starting: %s args=%s", tool.name, _redacted(tool_args))
        return None

    async def after_tool_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: Dict[str, Any],
        tool_context: ToolContext,
        result: Dict[str, Any],
    ) -> Optional[Dict[str, Any]]:
        """Logs a sandbox tool's failure result (warning level); never
        changes the result."""
        if self._owns(tool) and isinstance(result, dict) and result.get("success") is False:
            logger.warning("E2B tool %s returned a failure result: %s", tool.name, result.get("error"))
        return None

    async def on_tool_error_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: Dict[str, Any],
        tool_context: ToolContext,
        error: Exception,
    ) -> Optional[Dict[str, Any]]:
        """Logs an exception that escaped a sandbox tool (they return
        failures instead, so this is a bug); substitutes no result."""
        if self._owns(tool):
            logger.error("E2B tool %s raised an uncaught exception: %s", tool.name, error)
            token = call_context.set(_context_of(tool_context))
            try:
                self._e2b._core.events.emit(
                    "error", tool=tool.name, error_kind="internal", detail=f"{type(error).__name__}: {error}"
                )
            finally:
                call_context.reset(token)
        return None


def _context_of(context: Any) -> Dict[str, Optional[str]]:
    """The run and agent of an ADK tool or invocation context."""
    if context is None:
        return {}
    agent = getattr(context, "agent_name", None)
    if agent is None:
        agent = getattr(getattr(context, "agent", None), "name", None)
    return {"run_id": getattr(context, "invocation_id", None), "agent": agent}


#: Where the files a code block produces are looked for, how deep, and how
#: many are returned at most.
_WORKDIR = "/home/user"
_FIND_DEPTH = 3
_MAX_OUTPUT_FILES = 20
_STAMP = "/tmp/.e2b-tools-executor-stamp"


class _ExecutorPlugin(BasePlugin):
    """Closes an :class:`E2BCodeExecutor`'s sandboxes when the runner closes."""

    def __init__(self, executor: E2BCodeExecutor) -> None:
        super().__init__(name="e2b_code_executor")
        self._executor = executor

    async def close(self) -> None:
        await asyncio.to_thread(self._executor.close)


class E2BCodeExecutor(BaseCodeExecutor):
    """An ADK code executor that runs the model's code blocks in an E2B
    sandbox's stateful kernel.

    One sandbox per execution id (ADK passes the session's when
    ``stateful``, the default here), or per session when there is none;
    variables persist between code blocks of one. Before each block the
    ``input_files`` are written into the sandbox's working directory
    (text or binary: they go as base64); afterwards, images the code shows
    (``plt.show()``, a displayed figure) and files it wrote there are the
    result's ``output_files``. ``stdout`` is what it printed plus the last
    expression's value, ``stderr`` what it printed there plus the error,
    each bounded as the ``run_code`` tool bounds them. ADK runs
    ``execute_code`` in a worker thread, and the calls here block only that
    thread.

    ``plugin``: an :class:`E2BPlugin` whose sandbox to share (its tools and
    these code blocks then see the same files and kernel); the plugin's
    close kills it. Without one, register :attr:`plugin` with the app so
    that the runner's close kills the executor's sandboxes. Other keyword
    arguments are ``E2BPlugin``'s sandbox options (``timeout``,
    ``template``, ``envs``, …); ``on_event`` as there."""

    stateful: bool = True
    _plugin: Any = PrivateAttr(default=None)
    _options: Dict[str, Any] = PrivateAttr(default_factory=dict)
    _on_event: Any = PrivateAttr(default=None)
    _instances: Dict[str, E2BTools] = PrivateAttr(default_factory=dict)
    _written: Dict[str, Dict[str, str]] = PrivateAttr(default_factory=dict)
    _lock: Any = PrivateAttr(default_factory=threading.Lock)
    _closer: Any = PrivateAttr(default=None)

    def __init__(
        self,
        *,
        plugin: Optional[E2BPlugin] = None,
        on_event: Optional[Callable[[Event], Any]] = None,
        **options: Any,
    ) -> None:
        fields = {key: options.pop(key) for key in list(options) if key in type(self).model_fields}
        super().__init__(**fields)
        # Checked now, as E2BPlugin checks them, so a typo fails here.
        self._options = E2BPlugin(**options)._config if options else {}
        self._plugin = plugin
        self._on_event = on_event
        if plugin is not None:
            plugin._executors.append(self)

    @property
    def plugin(self) -> BasePlugin:
        """The plugin whose close (when the runner closes) kills this
        executor's sandboxes: the shared :class:`E2BPlugin`, or one of its
        own. Put it in the ``App``'s ``plugins``."""
        if self._plugin is not None:
            return self._plugin  # type: ignore[no-any-return]
        if self._closer is None:
            self._closer = _ExecutorPlugin(self)
        return self._closer  # type: ignore[no-any-return]

    def close(self) -> None:
        """Kills the executor's sandboxes (a shared plugin's is left to the
        plugin). A later code block starts a fresh one."""
        with self._lock:
            instances = list(self._instances.values())
            self._instances.clear()
            self._written.clear()
        for e2b in instances:
            try:
                e2b.close()
            except (ToolError, InstanceError) as err:
                logger.warning("E2BCodeExecutor: closing a sandbox failed: %s", err)

    def _instance(self, key: str) -> E2BTools:
        with self._lock:
            e2b = self._instances.get(key)
            if e2b is not None:
                return e2b
            e2b = shared_component().instantiate(on_event=self._on_event)
            config = {**self._options, "rich_results": True}
            if self._plugin is not None:
                config = {**self._plugin._config, "rich_results": True}
                config["sandbox_id"] = self._plugin._sandbox_for_sharing()
            e2b.configure(**config)
            self._instances[key] = e2b
            self._written[key] = {}
            return e2b

    def execute_code(self, invocation_context: Any, code_execution_input: CodeExecutionInput) -> CodeExecutionResult:
        """Runs one code block (see the class); never raises for a failure
        in the sandbox, which is reported in ``stderr``."""
        session = getattr(getattr(invocation_context, "session", None), "id", None)
        key = code_execution_input.execution_id or session or "default"
        if self._plugin is not None:
            key = "shared"
        token = call_context.set(_context_of(invocation_context))
        try:
            e2b = self._instance(key)
            problems = self._write_inputs(e2b, key, code_execution_input.input_files)
            e2b.call_tool("run_command", {"command": f"mkdir -p {_WORKDIR} && touch {_STAMP}"})
            result = e2b.call_tool("run_code", {"code": code_execution_input.code})
            outputs = _rich_files(result.get("results") or []) + self._new_files(e2b)
        except InstanceError as err:
            return CodeExecutionResult(stderr=f"Sandbox unavailable: {err}", exit_code=1)
        finally:
            call_context.reset(token)
        stdout = result.get("stdout", "") + result.get("partial_output", "")
        if result.get("text"):
            stdout += result["text"] + ("" if result["text"].endswith("\n") else "\n")
        stderr = problems + result.get("stderr", "") + result.get("error", "")
        failed = result.get("success") is not True or bool(result.get("error"))
        return CodeExecutionResult(stdout=stdout, stderr=stderr, output_files=outputs, exit_code=1 if failed else 0)

    def _write_inputs(self, e2b: E2BTools, key: str, files: List[File]) -> str:
        """Writes the input files not written yet (or changed); returns what
        went wrong, for ``stderr``."""
        problems = ""
        written = self._written.setdefault(key, {})
        for file in files:
            data, problem = _file_bytes(file)
            if data is None:
                problems += f"Input file {file.name!r} skipped: {problem}\n"
                continue
            encoded = base64.b64encode(data).decode("ascii")
            if written.get(file.name) == encoded:
                continue
            result = e2b.call_tool("write_file", {"path": file.name, "content": encoded, "encoding": "base64"})
            if result.get("success") is True:
                written[file.name] = encoded
            else:
                problems += f"Input file {file.name!r} not written: {result.get('error')}\n"
        return problems

    def _new_files(self, e2b: E2BTools) -> List[File]:
        """The files under the working directory changed by the last block."""
        command = (
            f"cd {_WORKDIR} && find . -maxdepth {_FIND_DEPTH} -type f -newer {_STAMP} "
            f"-not -path '*/.*' | head -n {_MAX_OUTPUT_FILES}"
        )
        listing = e2b.call_tool("run_command", {"command": command})
        files = []
        for line in listing.get("stdout", "").splitlines():
            path = line[2:] if line.startswith("./") else line
            if not path:
                continue
            read = e2b.call_tool("read_file", {"path": f"{_WORKDIR}/{path}", "encoding": "base64"})
            if read.get("success") is not True:
                continue
            mime = mimetypes.guess_type(path)[0] or "application/octet-stream"
            files.append(File(name=path, content=read["content"], mime_type=mime))
        return files


def _file_bytes(file: File) -> Tuple[Optional[bytes], str]:
    """An input file's bytes: ``bytes`` as they are, ``str`` as ADK gives
    it (base64), else text."""
    content = file.content
    if isinstance(content, bytes):
        return content, ""
    if isinstance(content, str):
        try:
            return base64.b64decode(content, validate=True), ""
        except (binascii.Error, ValueError):
            return content.encode("utf-8", "surrogateescape"), ""
    return None, f"its content must be bytes or str, not {type(content).__name__}"


def _rich_files(results: List[Dict[str, Any]]) -> List[File]:
    """The images (and other displayed data) of a ``run_code`` result."""
    files = []
    for n, item in enumerate(results, start=1):
        mime = item.get("mime_type", "")
        if not mime.startswith("image/"):
            continue
        data = item.get("data", "")
        if mime == "image/svg+xml":
            data = base64.b64encode(data.encode("utf-8")).decode("ascii")
        extension = mimetypes.guess_extension(mime) or ".bin"
        files.append(File(name=f"output_{n}{extension}", content=data, mime_type=mime))
    return files
