"""Loads the E2B tools component with wasmtime-py and wraps its exports for a
Python agent: the catalog as function-calling tools, JSON dispatch for the
model's tool calls, and the typed functions (e2b-adk's six, and the two
opt-in background-process tools enabled by ``configure(tools=["all"])``).

The component needs from its host only ``wasi:http`` (its requests to E2B),
clocks (the keep-alive heartbeat) and the ``E2B_*`` environment variables;
it imports no filesystem and no sockets.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from wasmtime import Engine, Store, WasiConfig
from wasmtime.component import (
    Component,
    Func,
    Linker,
    ListType,
    OptionType,
    Record,
    RecordType,
    Variant,
)

#: The environment variables the component reads. Only these are handed to
#: it: the rest of the host's environment (and its secrets) stays outside.
E2B_ENV_NAMES = ("E2B_API_KEY", "E2B_DOMAIN", "E2B_API_URL", "E2B_SANDBOX_URL")

_PACKAGE = "e2b:tools/{}@0.1.0"


def e2b_env(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """Picks the ``E2B_*`` variables the component reads from ``environ``."""
    return {name: environ[name] for name in E2B_ENV_NAMES if environ.get(name)}


class ToolError(Exception):
    """A failed typed call: the component's ``tool-error``."""

    def __init__(self, record: Record) -> None:
        fields = vars(record)
        super().__init__(fields["message"])
        #: The class of failure (``not-found``, ``timeout``, ``sandbox-expired`` …).
        self.kind: str = fields["kind"]
        #: The message, prefixed as e2b-adk prefixes it.
        self.message: str = fields["message"]
        #: Output captured before the failure.
        self.partial_output: str = fields["partial-output"]
        #: The path the call was about, if any.
        self.path: str | None = fields["path"]
        #: The command the call was about, if any.
        self.command: str | None = fields["command"]


class ToolsComponent:
    """The compiled component: compile once, instantiate per agent session."""

    def __init__(self, wasm_path: str | os.PathLike[str]) -> None:
        self._engine = Engine()
        # Compiling takes a second or two; instances are cheap afterwards.
        self._component = Component.from_file(self._engine, str(wasm_path))
        self._linker = Linker(self._engine)
        self._linker.add_wasip2()
        self._linker.add_wasi_http()

    def instantiate(self, env: Mapping[str, str] | None = None) -> E2BTools:
        """A new instance whose whole WASI environment is ``env`` (default:
        the ``E2B_*`` variables of this process). Each instance owns its own
        sandbox, created by its first tool call."""
        store = Store(self._engine)
        wasi = WasiConfig()
        wasi.env = list((env if env is not None else e2b_env()).items())
        # stdout/stderr are not inherited: the guest has nothing to print.
        store.set_wasi(wasi)
        store.set_wasi_http()
        instance = self._linker.instantiate(store, self._component)
        return E2BTools(store, instance)


def _to_record(ty: RecordType, values: Mapping[str, Any]) -> Record:
    """Builds a WIT record from snake_case keyword values; fields not given
    are ``none`` (options) or empty (lists)."""
    record = Record()
    given = {key.replace("_", "-"): value for key, value in values.items()}
    names = {name for name, _ in ty.fields}
    unknown = set(given) - names
    if unknown:
        raise TypeError(f"unknown field(s) {sorted(unknown)}; expected {sorted(names)}")
    for name, field_ty in ty.fields:
        if name in given:
            value = given[name]
        elif isinstance(field_ty, ListType):
            value = []
        elif isinstance(field_ty, OptionType):
            value = None
        else:
            raise TypeError(f"missing required field {name!r}")
        if isinstance(field_ty, ListType) and isinstance(value, Mapping):
            # `list<key-value>` from a dict.
            value = [_key_value(k, v) for k, v in value.items()]
        setattr(record, name, value)
    return record


def _key_value(key: str, value: str) -> Record:
    record = Record()
    record.key = key
    record.value = value
    return record


def _fields(value: Any) -> Any:
    """Turns records (recursively) into dicts with WIT's kebab-case keys."""
    if isinstance(value, Record):
        return {name: _fields(field) for name, field in vars(value).items()}
    if isinstance(value, list):
        return [_fields(item) for item in value]
    return value


class E2BTools:
    """One instance of the component: it owns at most one sandbox."""

    def __init__(self, store: Store, instance: Any) -> None:
        self._store = store
        self._instance = instance
        self._funcs: dict[tuple[str, str], Func] = {}

    def _func(self, interface: str, name: str) -> Func:
        if (interface, name) not in self._funcs:
            self._funcs[interface, name] = self._lookup(interface, name)
        return self._funcs[interface, name]

    def _lookup(self, interface: str, name: str) -> Func:
        parent = self._instance.get_export_index(self._store, _PACKAGE.format(interface))
        index = self._instance.get_export_index(self._store, name, parent)
        func = self._instance.get_func(self._store, index) if index else None
        if func is None:
            raise LookupError(f"the component exports no {interface}.{name}")
        return func

    def _call(self, interface: str, name: str, *args: Any) -> Any:
        return self._func(interface, name)(self._store, *args)

    def _call_result(self, interface: str, name: str, *args: Any) -> Any:
        """Calls a function returning ``result<T, tool-error>``: returns T or
        raises :class:`ToolError`."""
        value = self._func(interface, name)(self._store, *args)
        if isinstance(value, Variant):
            # wasmtime-py tags the result when `ok` and `err` are both records.
            if value.tag == "err":
                raise ToolError(value.payload)
            return value.payload
        # Untagged: `ok` is not a record (unit, string, list), so a record
        # can only be the `tool-error`.
        if isinstance(value, Record):
            raise ToolError(value)
        return value

    def _args(self, interface: str, name: str, **values: Any) -> Record:
        func = self._func(interface, name)
        (_, ty), *_ = func.type(self._store).params
        return _to_record(ty, {k: v for k, v in values.items() if v is not None})

    # lifecycle

    def configure(self, **options: Any) -> None:
        """Sets the instance's options (``lifecycle.configure``), as snake_case
        keywords of the WIT ``config`` record, e.g. ``timeout_seconds=120``,
        ``metadata={"k": "v"}``. Must come before the first tool call.

        ``tools`` names the tools offered (listed, described, callable):
        a list such as ``["all"]`` or ``["default", "get_background_output"]``
        (a single string is one name). ``"default"`` is e2b-adk's six,
        ``"all"`` adds ``get_background_output`` and
        ``stop_background_command``. Unset: ``E2B_TOOLS_ENABLED``, then
        the default six."""
        tools = options.get("tools")
        if tools is not None:
            options["tools"] = [tools] if isinstance(tools, str) else list(tools)
        self._call_result("lifecycle", "configure", self._args("lifecycle", "configure", **options))

    def sandbox_id(self) -> str | None:
        """The ID of the instance's sandbox, if one is open."""
        return self._call("lifecycle", "sandbox-id")

    def shutdown(self) -> bool:
        """Kills the sandbox; True if one was killed."""
        return self._call_result("lifecycle", "shutdown")

    # catalog

    def function_tools(self) -> list[dict[str, Any]]:
        """The catalog as OpenAI-style function tools
        (``{"type": "function", "function": {name, description, parameters}}``),
        ready for a chat-completions ``tools`` list."""
        return [
            {
                "type": "function",
                "function": {
                    "name": spec.name,
                    "description": spec.description,
                    "parameters": json.loads(getattr(spec, "parameters-schema")),
                },
            }
            for spec in self._call("catalog", "list-tools")
        ]

    def instructions(self) -> str:
        """A system-prompt fragment describing the tools and the sandbox."""
        return self._call("catalog", "instructions")

    def call_tool(self, name: str, arguments: str | Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Runs a tool call as a model makes it (``arguments`` as a dict or the
        model's JSON text) and returns e2b-adk's result dict. Never raises for
        a failed tool: the dict has ``"success": False``."""
        text = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
        return json.loads(self._call("catalog", "call-tool", name, text))

    # typed tools; results are dicts with WIT's kebab-case keys

    def run_code(
        self,
        code: str,
        language: str | None = None,
        envs: Mapping[str, str] | None = None,
        timeout_seconds: int | None = None,
    ) -> dict[str, Any]:
        """Typed ``run-code``: ``{stdout, stderr, text, error, rich}``."""
        args = self._args(
            "tools",
            "run-code",
            code=code,
            language=language,
            envs=envs,
            timeout_seconds=timeout_seconds,
        )
        return _fields(self._call_result("tools", "run-code", args))

    def run_command(
        self,
        command: str,
        cwd: str | None = None,
        envs: Mapping[str, str] | None = None,
        timeout_seconds: int | None = None,
    ) -> dict[str, Any]:
        """Typed ``run-command``: ``{command, stdout, stderr, exit-code}``."""
        args = self._args(
            "tools",
            "run-command",
            command=command,
            cwd=cwd,
            envs=envs,
            timeout_seconds=timeout_seconds,
        )
        return _fields(self._call_result("tools", "run-command", args))

    def write_file(self, path: str, content: str) -> None:
        """Typed ``write-file``."""
        self._call_result("tools", "write-file", path, content)

    def read_file(self, path: str) -> str:
        """Typed ``read-file``: the file's text."""
        return self._call_result("tools", "read-file", path)

    def list_files(self, path: str | None = None) -> list[dict[str, Any]]:
        """Typed ``list-files``: ``[{name, type}]``, one level deep."""
        return _fields(self._call_result("tools", "list-files", path))

    def start_background_command(
        self,
        command: str,
        port: int | None = None,
        cwd: str | None = None,
        envs: Mapping[str, str] | None = None,
        timeout_seconds: int | None = None,
    ) -> dict[str, Any]:
        """Typed ``start-background-command``:
        ``{command, pid, preview-url, readiness, exit-code, stdout, stderr}``."""
        args = self._args(
            "tools",
            "start-background-command",
            command=command,
            port=port,
            cwd=cwd,
            envs=envs,
            timeout_seconds=timeout_seconds,
        )
        return _fields(self._call_result("tools", "start-background-command", args))

    def get_background_output(
        self,
        pid: int,
        since: Mapping[str, int] | None = None,
    ) -> dict[str, Any]:
        """Typed ``get-background-output``: what a process started by
        :meth:`start_background_command` printed, from ``since`` (a
        ``{"stdout": n, "stderr": m}`` dict, e.g. the previous answer's
        ``next-since``; None: from the start), and whether it runs:
        ``{pid, state, exit-code, stdout, stderr, next-since}``, ``state``
        being ``"running"`` or ``"exited"``. Only when enabled by
        ``configure(tools=...)`` (else ``ToolError`` ``invalid-argument``)."""
        offsets = None
        if since is not None:
            offsets = Record()
            offsets.stdout = int(since.get("stdout", 0))
            offsets.stderr = int(since.get("stderr", 0))
        return _fields(self._call_result("tools", "get-background-output", pid, offsets))

    def stop_background_command(self, pid: int, signal: str | None = None) -> dict[str, Any]:
        """Typed ``stop-background-command``: stops a process started by
        :meth:`start_background_command` and its children with ``signal``
        (``"sigterm"``, the default, ``"sigint"``, ``"sighup"``, ``"sigquit"``,
        ``"sigkill"``; ``"SIGTERM"`` and ``"term"`` are accepted too), then
        SIGKILL after 5 seconds: ``{pid, exit-code, signal}``, ``signal``
        being the one that ended it (None if it had exited already). Only
        when enabled by ``configure(tools=...)``."""
        if signal is not None:
            signal = signal.strip().lower()
            if not signal.startswith("sig"):
                signal = "sig" + signal
        return _fields(self._call_result("tools", "stop-background-command", pid, signal))


def default_wasm_path() -> Path:
    """``$E2B_TOOLS_WASM``, else the workspace's release build."""
    configured = os.environ.get("E2B_TOOLS_WASM")
    if configured:
        return Path(configured)
    root = Path(__file__).resolve().parents[2]
    return root / "target" / "wasm32-wasip2" / "release" / "e2b_tools.wasm"


def load(wasm_path: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None) -> E2BTools:
    """Compiles the component and returns one instance of it whose
    environment is ``env`` (default: the ``E2B_*`` variables of this process)."""
    return ToolsComponent(wasm_path or default_wasm_path()).instantiate(env)
