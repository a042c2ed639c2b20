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
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Mapping
from typing import Any, Dict, List, Optional

from google.adk.plugins import BasePlugin
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from ._host import E2BTools, InstanceError, NetworkRules, ToolError, ToolsComponent, ToolSpec, VolumeMount

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

_component_lock = threading.Lock()
_component: Optional[ToolsComponent] = None


def _shared_component() -> ToolsComponent:
    """The process's compiled component, shared by every plugin."""
    global _component
    with _component_lock:
        if _component is None:
            _component = ToolsComponent()
        return _component


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
        return await self._plugin._call_tool(self.name, args)


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
    value it rejects, naming the option."""

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
            elif key == "request_timeout":
                if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
                    raise ValueError(f"E2BPlugin: request_timeout must be seconds >= 0, not {value!r}")
                config["request_timeout_ms"] = round(value * 1000)
            else:
                raise _refuse(key, _REFUSED.get(key, "unknown option"))
        self._e2b: E2BTools = _shared_component().instantiate()
        try:
            self._e2b.configure(**{key: value for key, value in config.items() if value is not None})
        except ToolError as err:
            raise ValueError(f"E2BPlugin: {err}") from None
        self._specs = self._e2b.list_tools()

    def get_tools(self) -> List[BaseTool]:
        """The six tools, all sharing this plugin's sandbox: ``run_code``,
        ``run_command``, ``write_file``, ``read_file``, ``list_files``,
        ``start_background_command``."""
        return [E2BTool(self, spec) for spec in self._specs]

    async def close(self) -> None:
        """Kills the sandbox (ADK calls this when the runner closes). A
        later tool call creates a fresh one."""
        await asyncio.to_thread(self._e2b.shutdown)

    async def _call_tool(self, name: str, args: Dict[str, Any]) -> Dict[str, Any]:
        # The component's calls block: run them off the event loop. The
        # instance's lock serializes them.
        try:
            return await asyncio.to_thread(self._e2b.call_tool, name, args)
        except InstanceError as err:
            return {"success": False, "error": f"Sandbox unavailable: {err}", "partial_output": ""}

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
        return None
