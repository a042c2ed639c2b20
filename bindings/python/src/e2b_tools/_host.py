"""The host: loads the component with wasmtime-py and wraps its exports.

One :class:`ToolsComponent` per process (the compiled component, cached on
disk), one :class:`E2BTools` per agent session (an instance, owning at most
one sandbox). Every call into an instance holds that instance's lock, so
threads may share an instance; calls are serialized, as the component
requires.
"""

from __future__ import annotations

import json
import os
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

from wasmtime import Engine, Store, WasiConfig
from wasmtime.component import (
    Component,
    Linker,
    ListType,
    OptionType,
    Record,
    RecordType,
)

from . import _cache, _local, _outbound, _reaper
from ._core import Core, unwrap
from ._events import Event, Subscription
from ._policy import OutboundPolicy
from ._sandboxes import Tracker

#: A callback of lifecycle events: a function or a coroutine function.
EventCallback = Callable[[Event], Any]

#: Cap on the component's linear memory, as the Rust host's default: growing
#: past it traps the instance, never the process.
DEFAULT_MEMORY_LIMIT = 256 * 1024 * 1024

_U32_MAX = 2**32 - 1
_U64_MAX = 2**64 - 1
_ON_TIMEOUT = ("kill", "pause")
_SIGNALS = ("sigterm", "sigint", "sighup", "sigquit", "sigkill")

PathLike = Union[str, "os.PathLike[str]"]

#: Calls that reach no server: they need no endpoints (see ``_local``).
_NO_SERVER = {
    ("lifecycle", "configure"),
    ("lifecycle", "sandbox-id"),
    ("lifecycle", "shutdown"),
    ("catalog", "list-tools"),
    ("catalog", "instructions"),
}


def e2b_env(environ: Mapping[str, str] = os.environ) -> Dict[str, str]:
    """The ``E2B_*`` variables of ``environ``: all of the environment a
    component instance sees (the rest, and its secrets, stays outside)."""
    return {name: value for name, value in environ.items() if name.startswith("E2B_") and value}


def default_wasm_path() -> Path:
    """``$E2B_TOOLS_WASM``, else the component shipped in this package."""
    configured = os.environ.get("E2B_TOOLS_WASM")
    return Path(configured) if configured else Path(__file__).with_name("e2b_tools.wasm")


@dataclass(frozen=True)
class ToolHints:
    """What calling a tool does, as MCP's tool annotations say it."""

    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool


@dataclass(frozen=True)
class ToolSpec:
    """One tool as the catalog describes it."""

    #: The tool's name, e.g. ``run_code``.
    name: str
    #: A short human title.
    title: str
    #: What it does, written for a model.
    description: str
    #: JSON Schema of its arguments object.
    parameters: Dict[str, Any]
    #: JSON Schema of the result dict :meth:`E2BTools.call_tool` returns.
    result_schema: Dict[str, Any]
    #: Behaviour hints.
    hints: ToolHints


@dataclass(frozen=True)
class RichResult:
    """An image, HTML or JSON result of ``run_code`` (with ``rich_results``)."""

    mime_type: str
    #: Base64 for images, text otherwise.
    data: str
    is_main_result: bool


@dataclass(frozen=True)
class RunCodeOutput:
    """What ``run_code`` produced; a raised exception is in ``error``."""

    stdout: str
    stderr: str
    #: The last expression's value as text.
    text: str
    #: ``<name>: <value>\\n<traceback>`` if the code raised, else empty.
    error: str
    rich: List[RichResult]


@dataclass(frozen=True)
class CommandOutput:
    """What ``run_command`` produced; a non-zero exit is not a failure."""

    command: str
    stdout: str
    stderr: str
    #: -1 when killed by a signal.
    exit_code: int


@dataclass(frozen=True)
class DirEntry:
    """One entry of a directory listing."""

    name: str
    #: ``file``, ``dir``, ``symlink`` or ``unknown``.
    type: str


@dataclass(frozen=True)
class BackgroundProcess:
    """A process started by ``start_background_command``."""

    command: str
    pid: int
    preview_url: Optional[str]
    #: ``ready``, ``exited`` or ``not-listening``; None without a port
    #: unless the process exited at once.
    readiness: Optional[str]
    exit_code: Optional[int]
    stdout: str
    stderr: str


@dataclass(frozen=True)
class OutputOffsets:
    """Byte offsets into a background process's stdout and stderr."""

    stdout: int
    stderr: int


@dataclass(frozen=True)
class ProcessOutput:
    """What a background process printed since the offsets, and its state."""

    pid: int
    #: ``running`` or ``exited``.
    state: str
    exit_code: Optional[int]
    stdout: str
    stderr: str
    #: Pass as ``since`` to read only newer output.
    next_since: OutputOffsets


@dataclass(frozen=True)
class StoppedProcess:
    """A background process stopped by ``stop_background_command``."""

    pid: int
    exit_code: Optional[int]
    #: The signal that ended it; None if it had exited already.
    signal: Optional[str]


@dataclass(frozen=True)
class Snapshot:
    """A snapshot made by ``create_snapshot``: new sandboxes start from it
    when it is their template (``configure(template=snapshot_id)``)."""

    snapshot_id: str
    #: Its full names (team, name and tag); empty when unnamed.
    names: List[str]


@dataclass(frozen=True)
class ForkFailure:
    """A fork that did not start (each fork starts or fails on its own)."""

    #: The error kind, as :class:`ToolError`'s (``rate-limited``, …).
    kind: str
    message: str


@dataclass(frozen=True)
class Forks:
    """What ``fork_sandbox`` made: the forks that started, and why the
    others did not. ``call_tool`` addresses a fork by ``sandbox_id``; an
    instance configured with ``sandbox_id=`` works in it with typed calls."""

    sandbox_ids: List[str]
    failures: List[ForkFailure]


@dataclass(frozen=True)
class NetworkRules:
    """Outbound network rules of the sandbox, passed to E2B as given."""

    #: CIDRs or domains the sandbox may reach even when denied.
    allow_out: Sequence[str] = ()
    #: CIDRs the sandbox may not reach (``0.0.0.0/0`` denies all).
    deny_out: Sequence[str] = ()
    #: Whether preview URLs are reachable without the traffic token.
    allow_public_traffic: Optional[bool] = None
    #: Host header sent to the sandbox's services (``${PORT}`` is replaced).
    mask_request_host: Optional[str] = None


@dataclass(frozen=True)
class VolumeMount:
    """A volume mounted into the sandbox at creation."""

    name: str
    path: str


class ToolsComponent:
    """The compiled component: load once per process, instantiate per agent
    session.

    ``cache_dir``: where compiled components are cached (None: the default,
    ``$E2B_TOOLS_CACHE_DIR``, ``$XDG_CACHE_HOME/e2b-tools`` or
    ``~/.cache/e2b-tools``; False: no cache)."""

    def __init__(
        self,
        wasm: Union[PathLike, bytes, None] = None,
        *,
        cache_dir: Union[PathLike, None, bool] = None,
    ) -> None:
        if isinstance(wasm, bytes):
            data = wasm
        else:
            path = Path(wasm or default_wasm_path())
            if not path.is_file():
                raise FileNotFoundError(f"no component at {path} (E2B_TOOLS_WASM names another)")
            data = path.read_bytes()
        directory = _cache.resolve_cache_dir(cache_dir)
        self.engine = Engine()
        self.component, source = _cache.load_component(
            self.engine, data, directory, lambda engine, wasm: Component(engine, wasm)
        )
        version = _outbound.wasi_http_version(self.engine, self.component)
        if version is None:
            raise ValueError("the component imports no wasi:http outgoing-handler")
        self._http_version = version
        self._helper, helper_source = _cache.load_component(
            self.engine,
            _outbound.helper_source(version),
            directory,
            lambda engine, text: Component(engine, text.decode("utf-8")),
        )
        #: ``"cache"`` when both the component and the outbound gate's helper
        #: were deserialized from the disk cache, else ``"compiled"``.
        self.source: _cache.CacheSource = "cache" if source == helper_source == "cache" else "compiled"
        self._helper_linker = Linker(self.engine)
        self._helper_linker.add_wasip2()
        self._helper_linker.add_wasi_http()

    def instantiate(
        self,
        env: Optional[Mapping[str, str]] = None,
        *,
        policy: Optional[OutboundPolicy] = None,
        memory_limit: int = DEFAULT_MEMORY_LIMIT,
        on_event: Optional[EventCallback] = None,
    ) -> E2BTools:
        """A new instance (it owns its own sandbox, created by its first tool
        call).

        ``env``: its whole WASI environment (default: this process's
        ``E2B_*`` variables). ``policy``: the hosts it may reach (default:
        the API and sandbox hosts of its configuration, following
        :meth:`E2BTools.configure`). ``memory_limit``: the cap on its
        memory, in bytes. ``on_event``: a callback of its lifecycle events
        (:meth:`E2BTools.subscribe`)."""
        tools = self._instantiate(env, policy=policy, memory_limit=memory_limit)
        if on_event is not None:
            tools.subscribe(on_event)
        return tools

    def _instantiate(
        self,
        env: Optional[Mapping[str, str]],
        *,
        policy: Optional[OutboundPolicy],
        memory_limit: int = DEFAULT_MEMORY_LIMIT,
        tracker: Optional[Tracker] = None,
        reaped: bool = True,
    ) -> E2BTools:
        """An instance whose component reports to ``tracker`` (default: one
        of its own); unless ``reaped``, not killed at the end (the reaper's
        own fresh instance)."""
        env = dict(e2b_env() if env is None else env)
        store = Store(self.engine)
        wasi = WasiConfig()
        wasi.env = list(env.items())
        # stdout and stderr are not inherited: the guest has nothing to print.
        store.set_wasi(wasi)
        store.set_wasi_http()
        store.set_limits(memory_size=memory_limit)
        linker = Linker(self.engine)
        linker.add_wasip2()
        linker.add_wasi_http()
        tools = E2BTools(store, env, policy, self, tracker=tracker, reaped=reaped)
        tools._gate.install(linker, self._helper_linker, store, self._helper, self._http_version)
        tools._core.tracker.install(linker)
        tools._core.instance = linker.instantiate(store, self.component)
        return tools


def _filled(ty: Any, values: Mapping[str, Any]) -> Record:
    """A WIT record of type ``ty`` from kebab-case ``values``; absent fields
    are ``none`` (options) or empty (lists)."""
    if not isinstance(ty, RecordType):
        raise TypeError(f"expected a record type, not {ty!r}")
    fields = {}
    for name, field_ty in ty.fields:
        if name in values:
            fields[name] = values[name]
        elif isinstance(field_ty, ListType):
            fields[name] = []
        elif isinstance(field_ty, OptionType):
            fields[name] = None
        else:
            raise TypeError(f"missing required field {name!r}")
    return _record(fields)


def _record(fields: Mapping[str, Any]) -> Record:
    """A WIT record with these kebab-case fields."""
    record = Record()
    for name, value in fields.items():
        setattr(record, name, value)
    return record


def _fields(record: Any) -> Dict[str, Any]:
    return dict(vars(record))


def _text(name: str, value: Any) -> str:
    """``value``, checked to be a str that can cross into the component."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{name} is not valid Unicode text (it holds a lone surrogate)") from None
    return value


def _opt_text(name: str, value: Any) -> Optional[str]:
    return None if value is None else _text(name, value)


def _uint(name: str, value: Any, maximum: int = _U32_MAX) -> int:
    """``value``, checked to be an int in range (wasmtime-py would wrap it)."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not 0 <= value <= maximum:
        raise ValueError(f"{name} must be between 0 and {maximum}, not {value}")
    return value


def _opt_uint(name: str, value: Any, maximum: int = _U32_MAX) -> Optional[int]:
    return None if value is None else _uint(name, value, maximum)


def _opt_bool(name: str, value: Any) -> Optional[bool]:
    if value is not None and not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, not {type(value).__name__}")
    return value


def _opt_choice(name: str, value: Any, choices: Tuple[str, ...]) -> Optional[str]:
    if value is None:
        return None
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, not {value!r}")
    return str(value)


def _texts(name: str, values: Any) -> List[str]:
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise TypeError(f"{name} must be a list of str, not {type(values).__name__}")
    return [_text(f"{name}[{i}]", value) for i, value in enumerate(values)]


def _key_values(name: str, values: Optional[Mapping[str, str]]) -> List[Record]:
    """``list<key-value>`` from a mapping of str to str."""
    if values is None:
        return []
    if not isinstance(values, Mapping):
        raise TypeError(f"{name} must be a mapping of str to str, not {type(values).__name__}")
    return [
        _record({"key": _text(f"{name} key", key), "value": _text(f"{name}[{key!r}]", value)})
        for key, value in values.items()
    ]


def _network_record(network: Union[NetworkRules, Mapping[str, Any]]) -> Record:
    if isinstance(network, Mapping):
        unknown = set(network) - {"allow_out", "deny_out", "allow_public_traffic", "mask_request_host"}
        if unknown:
            raise ValueError(f"network: unknown key(s) {sorted(unknown)}")
        network = NetworkRules(**network)
    if not isinstance(network, NetworkRules):
        raise TypeError(f"network must be NetworkRules or a mapping, not {type(network).__name__}")
    return _record(
        {
            "allow-out": _texts("network.allow_out", network.allow_out),
            "deny-out": _texts("network.deny_out", network.deny_out),
            "allow-public-traffic": _opt_bool("network.allow_public_traffic", network.allow_public_traffic),
            "mask-request-host": _opt_text("network.mask_request_host", network.mask_request_host),
        }
    )


def _volume_records(mounts: Sequence[Union[VolumeMount, Tuple[str, str]]]) -> List[Record]:
    if isinstance(mounts, (str, Mapping)) or not isinstance(mounts, Sequence):
        raise TypeError("volume_mounts must be a list of VolumeMount or (name, path) pairs")
    records = []
    for i, mount in enumerate(mounts):
        name, path = (mount.name, mount.path) if isinstance(mount, VolumeMount) else mount
        records.append(
            _record({"name": _text(f"volume_mounts[{i}].name", name), "path": _text(f"volume_mounts[{i}].path", path)})
        )
    return records


class E2BTools:
    """One instance of the component: it owns at most one sandbox.

    Calls block the calling thread and are serialized per instance (a
    lock), so an instance may be shared between threads. Use it as a
    context manager to shut the sandbox down at the end."""

    def __init__(
        self,
        store: Store,
        env: Dict[str, str],
        policy: Optional[OutboundPolicy],
        component: ToolsComponent,
        *,
        tracker: Optional[Tracker] = None,
        reaped: bool = True,
    ) -> None:
        # Built by ToolsComponent.instantiate.
        self._env = env
        # Nothing names an E2B server: the local one is used unless the
        # configuration names one (`_local`).
        self._local_pending = _local.needed(env)
        self._explicit_policy = policy is not None
        self._gate = _outbound.Gate(
            policy
            or OutboundPolicy.for_endpoints(env.get("E2B_API_URL"), env.get("E2B_SANDBOX_URL"), env.get("E2B_DOMAIN"))
        )
        self._core = Core(component, store, env, self._gate, tracker)
        self._finalizer: Optional[weakref.finalize] = None
        if reaped:
            # Not closed by the end of the process or by the garbage
            # collector: the sandboxes it owns are killed then (the reaper's
            # own atexit hook kills all at once, so the finalizer's is off).
            _reaper.track(self._core)
            self._finalizer = weakref.finalize(self, _reaper.reap_later, self._core)
            self._finalizer.atexit = False

    def __enter__(self) -> E2BTools:
        return self

    def __exit__(self, *exc: object) -> None:
        # Shut down, not closed: the instance stays usable after the block,
        # as it always was (a later call makes a fresh sandbox).
        core = self._core
        if core.broken is None and not core.closed:
            self.shutdown()

    def close(self) -> None:
        """Shuts the sandbox down and ends the instance: later calls raise
        :class:`InstanceError`. (Leaving a ``with`` block only shuts the
        sandbox down.) A trapped instance's own sandboxes are killed
        through a fresh instance."""
        core = self._core
        if core.closed:
            return
        try:
            if core.broken is None:
                core.shutdown()
            else:
                core.reap("shutdown")
        finally:
            core.closed = True
            core.helper.stop()
            if self._finalizer is not None:
                self._finalizer.detach()
            _reaper.untrack(core)

    def subscribe(self, callback: EventCallback) -> Subscription:
        """Calls ``callback`` (a function, or a coroutine function) with each
        lifecycle :class:`Event` of this instance: ``exec_start``,
        ``exec_end``, ``sandbox_start``, ``sandbox_stop``, ``snapshot``,
        ``error``, in order, as the component reports them (while the call
        runs, not after it). It runs on a thread of its own (a coroutine
        function subscribed inside an event loop runs on that loop), behind
        a bounded queue: one that raises, blocks or never returns loses
        events (counted in :attr:`dropped_events` and logged once), never
        the call's result or time."""
        return self._core.events.subscribe(callback)

    @property
    def dropped_events(self) -> int:
        """Events lost over all callbacks (queue full, or the callback raised)."""
        return self._core.events.dropped

    @property
    def policy(self) -> OutboundPolicy:
        """The hosts this instance may send requests to."""
        return self._gate.policy

    def _call(self, interface: str, name: str, *args: Any) -> Any:
        if (interface, name) not in _NO_SERVER:
            self._ensure_server()
        return self._core.call(interface, name, *args)

    def _ensure_server(self) -> None:
        """Configures the local server's endpoints before the first call
        that reaches a server, when nothing names one (see ``_local``)."""
        if self._local_pending:
            self.configure()

    def _call_result(self, interface: str, name: str, *args: Any) -> Any:
        """Calls a function returning ``result<T, tool-error>``: T, or
        :class:`ToolError`."""
        return unwrap(self._call(interface, name, *args))

    def _tool(self, name: str, *args: Any) -> Any:
        """A typed tool call (``run-code``, …)."""
        self._ensure_server()
        core = self._core
        tool = name.replace("-", "_")
        return core.execute(tool, lambda record: unwrap(core.call("tools", name, *args, record=record)))

    def _args_type(self, interface: str, name: str) -> Any:
        """The type of a function's first parameter."""
        core = self._core
        with core.lock:
            func = core.func(interface, name)
            (_, ty), *_ = func.type(core.store).params
        return ty

    # lifecycle

    def configure(
        self,
        *,
        api_key: Optional[str] = None,
        template: Optional[str] = None,
        metadata: Optional[Mapping[str, str]] = None,
        envs: Optional[Mapping[str, str]] = None,
        timeout_seconds: Optional[int] = None,
        domain: Optional[str] = None,
        api_url: Optional[str] = None,
        sandbox_url: Optional[str] = None,
        request_timeout_ms: Optional[int] = None,
        allow_internet_access: Optional[bool] = None,
        network: Union[NetworkRules, Mapping[str, Any], None] = None,
        on_timeout: Optional[str] = None,
        auto_resume: Optional[bool] = None,
        volume_mounts: Sequence[Union[VolumeMount, Tuple[str, str]]] = (),
        max_output_bytes: Optional[int] = None,
        rich_results: Optional[bool] = None,
        readiness_timeout_ms: Optional[int] = None,
        sandbox_id: Optional[str] = None,
        tools: Union[str, Sequence[str], None] = None,
        kill_on_exit: Optional[bool] = None,
    ) -> None:
        """Sets the instance's options (the WIT ``lifecycle.config``; every
        one optional, falling back to the environment, then E2B's default).
        Call it before the first tool call: with a sandbox open it raises
        :class:`ToolError` ``invalid-argument``. Never contacts E2B.

        ``tools`` names the tools offered: ``"default"`` (e2b-adk's six),
        ``"all"`` (adding ``get_background_output`` and
        ``stop_background_command``), or names, e.g.
        ``["default", "get_background_output"]``. ``on_timeout`` is
        ``"kill"`` or ``"pause"``. Unless the instance was made with an
        explicit ``policy``, the allow-list follows ``domain``, ``api_url``
        and ``sandbox_url``.

        ``kill_on_exit`` (the host's, not the component's): a sandbox
        attached to with ``sandbox_id`` (or, with ``on_timeout="pause"``,
        the one left to pause) is left running when the instance is
        garbage-collected or the process ends (at exit, SIGTERM, SIGINT);
        with True it is killed then, as the sandboxes the instance created
        or forked always are. :meth:`shutdown` and :meth:`close` kill it
        either way."""
        if isinstance(tools, str):
            tools = [tools]
        if self._local_pending and all(v is None for v in (api_key, api_url, sandbox_url, domain)):
            local = _local.endpoints()
            api_key, api_url, sandbox_url = local["E2B_API_KEY"], local["E2B_API_URL"], local["E2B_SANDBOX_URL"]
        kill_on_exit = bool(_opt_bool("kill_on_exit", kill_on_exit))
        values = {
            "api-key": _opt_text("api_key", api_key),
            "template": _opt_text("template", template),
            "metadata": _key_values("metadata", metadata),
            "envs": _key_values("envs", envs),
            "timeout-seconds": _opt_uint("timeout_seconds", timeout_seconds),
            "domain": _opt_text("domain", domain),
            "api-url": _opt_text("api_url", api_url),
            "sandbox-url": _opt_text("sandbox_url", sandbox_url),
            "request-timeout-ms": _opt_uint("request_timeout_ms", request_timeout_ms),
            "allow-internet-access": _opt_bool("allow_internet_access", allow_internet_access),
            "network": None if network is None else _network_record(network),
            "on-timeout": _opt_choice("on_timeout", on_timeout, _ON_TIMEOUT),
            "auto-resume": _opt_bool("auto_resume", auto_resume),
            "volume-mounts": _volume_records(volume_mounts),
            "max-output-bytes": _opt_uint("max_output_bytes", max_output_bytes),
            "rich-results": _opt_bool("rich_results", rich_results),
            "readiness-timeout-ms": _opt_uint("readiness_timeout_ms", readiness_timeout_ms),
            "sandbox-id": _opt_text("sandbox_id", sandbox_id),
            "tools": None if tools is None else _texts("tools", tools),
        }
        policy = self._gate.policy
        if not self._explicit_policy:
            policy = OutboundPolicy.for_endpoints(
                api_url or self._env.get("E2B_API_URL"),
                sandbox_url or self._env.get("E2B_SANDBOX_URL"),
                domain or self._env.get("E2B_DOMAIN"),
            )
        config = _filled(self._args_type("lifecycle", "configure"), values)
        self._call_result("lifecycle", "configure", config)
        self._gate.policy = policy
        core = self._core
        core.kill_on_exit = kill_on_exit
        connection = {
            "api_key": api_key,
            "domain": domain,
            "api_url": api_url,
            "sandbox_url": sandbox_url,
            "request_timeout_ms": request_timeout_ms,
        }
        core.connection = {key: value for key, value in connection.items() if value is not None}
        # Configured: with the local server's endpoints, or with the
        # server the options name.
        self._local_pending = False

    def prepare(self, timeout_seconds: Optional[int] = None) -> str:
        """Makes the instance's sandbox now (or resumes the one it holds)
        and returns its ID; ``timeout_seconds`` sets its timeout (None: the
        configured one). A warm pool makes sandboxes ahead with this
        (:class:`~e2b_tools.WarmPool`); a failure raises :class:`ToolError`."""
        sandbox: str = self._call_result("lifecycle", "prepare", _opt_uint("timeout_seconds", timeout_seconds))
        return sandbox

    def sandbox_id(self) -> Optional[str]:
        """The ID of the instance's sandbox, if one is open."""
        sandbox: Optional[str] = self._call("lifecycle", "sandbox-id")
        return sandbox

    def shutdown(self) -> bool:
        """Kills the sandbox and the forks made without ``keep`` (with
        ``on_timeout="pause"``, leaves them to pause); True if the sandbox
        was killed. On failure (:class:`ToolError`) the sandbox is kept, so
        it can be retried."""
        return self._core.shutdown()

    def kill(self, sandbox_id: str) -> bool:
        """Kills sandbox ``sandbox_id`` by its ID, without attaching to it
        (one request): a fork made with ``keep=True``, or a sandbox another
        instance or process left running. One of this instance's own is
        forgotten, as by :meth:`shutdown`. True if it was killed, False if
        E2B no longer knew it."""
        return bool(self._call_result("lifecycle", "kill", _text("sandbox_id", sandbox_id)))

    # catalog

    def list_tools(self) -> List[ToolSpec]:
        """The enabled tools: names, descriptions, JSON Schemas, hints."""
        specs = []
        for spec in self._call("catalog", "list-tools"):
            fields = _fields(spec)
            hints = _fields(fields["hints"])
            specs.append(
                ToolSpec(
                    name=fields["name"],
                    title=fields["title"],
                    description=fields["description"],
                    parameters=json.loads(fields["parameters-schema"]),
                    result_schema=json.loads(fields["result-schema"]),
                    hints=ToolHints(
                        read_only=hints["read-only"],
                        destructive=hints["destructive"],
                        idempotent=hints["idempotent"],
                        open_world=hints["open-world"],
                    ),
                )
            )
        return specs

    def openai_chat_tools(self) -> List[Dict[str, Any]]:
        """The tools for OpenAI chat completions' ``tools``:
        ``{"type": "function", "function": {name, description, parameters}}``."""
        return [
            {
                "type": "function",
                "function": {"name": s.name, "description": s.description, "parameters": s.parameters},
            }
            for s in self.list_tools()
        ]

    def openai_responses_tools(self) -> List[Dict[str, Any]]:
        """The tools for the OpenAI Responses API's ``tools``:
        ``{"type": "function", name, description, parameters}``."""
        return [
            {"type": "function", "name": s.name, "description": s.description, "parameters": s.parameters}
            for s in self.list_tools()
        ]

    def anthropic_tools(self) -> List[Dict[str, Any]]:
        """The tools for Anthropic's Messages API ``tools``:
        ``{name, description, input_schema}``."""
        return [{"name": s.name, "description": s.description, "input_schema": s.parameters} for s in self.list_tools()]

    def instructions(self) -> str:
        """A system-prompt fragment describing the tools and the sandbox."""
        text: str = self._call("catalog", "instructions")
        return text

    def call_tool(self, name: str, arguments: Union[str, Mapping[str, Any], None] = None) -> Dict[str, Any]:
        """Runs a tool call as a model makes it (``arguments`` as a dict or
        the model's JSON text) and returns e2b-adk's result dict. A failed
        tool, an unknown tool or malformed arguments give ``"success":
        False``; it raises only for arguments that are not JSON at all
        (:class:`TypeError`) or a trapped instance."""
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, not {type(name).__name__}")
        # Lone surrogates (which Python's JSON decoder lets through) cannot
        # cross into the component; escaped, its parser refuses them with a
        # result instead.
        name = name.encode("utf-8", "backslashreplace").decode("utf-8")
        if arguments is None:
            text = "{}"
        elif isinstance(arguments, str):
            text = arguments.encode("utf-8", "backslashreplace").decode("utf-8")
        elif isinstance(arguments, Mapping):
            text = json.dumps(arguments)
        else:
            raise TypeError(f"arguments must be a JSON str or a mapping, not {type(arguments).__name__}")
        self._ensure_server()
        core = self._core
        result: Dict[str, Any] = core.execute(
            name, lambda record: json.loads(core.call("catalog", "call-tool", name, text, record=record))
        )
        return result

    # typed tools

    def run_code(
        self,
        code: str,
        language: Optional[str] = None,
        envs: Optional[Mapping[str, str]] = None,
        timeout_seconds: Optional[int] = None,
    ) -> RunCodeOutput:
        """Runs code in the sandbox's stateful kernel (variables persist).
        ``language``: python (default), javascript, typescript, r, java or
        bash. ``timeout_seconds``: 0 disables it; default 300."""
        args = _filled(
            self._args_type("tools", "run-code"),
            {
                "code": _text("code", code),
                "language": _opt_text("language", language),
                "envs": _key_values("envs", envs),
                "timeout-seconds": _opt_uint("timeout_seconds", timeout_seconds),
            },
        )
        out = _fields(self._tool("run-code", args))
        rich = [_fields(item) for item in out["rich"]]
        return RunCodeOutput(
            stdout=out["stdout"],
            stderr=out["stderr"],
            text=out["text"],
            error=out["error"],
            rich=[RichResult(r["mime-type"], r["data"], r["is-main-result"]) for r in rich],
        )

    def run_command(
        self,
        command: str,
        cwd: Optional[str] = None,
        envs: Optional[Mapping[str, str]] = None,
        timeout_seconds: Optional[int] = None,
    ) -> CommandOutput:
        """Runs a shell command (``bash -l -c``) and waits for it to exit.
        ``cwd`` defaults to ``/home/user``; ``timeout_seconds`` to 60."""
        args = _filled(
            self._args_type("tools", "run-command"),
            {
                "command": _text("command", command),
                "cwd": _opt_text("cwd", cwd),
                "envs": _key_values("envs", envs),
                "timeout-seconds": _opt_uint("timeout_seconds", timeout_seconds),
            },
        )
        out = _fields(self._tool("run-command", args))
        return CommandOutput(out["command"], out["stdout"], out["stderr"], out["exit-code"])

    def write_file(self, path: str, content: str) -> None:
        """Writes a text file (creating parent directories, replacing old
        content); at most 32 MiB."""
        self._tool(
            "write-file",
            _text("path", path),
            _text("content", content),
        )

    def read_file(self, path: str) -> str:
        """Reads a text file (invalid UTF-8 becomes U+FFFD)."""
        result: str = self._tool("read-file", _text("path", path))
        return result

    def list_files(self, path: Optional[str] = None) -> List[DirEntry]:
        """Lists a directory one level deep (default: the home directory)."""
        entries = self._tool("list-files", _opt_text("path", path))
        return [DirEntry(**_fields(entry)) for entry in entries]

    def start_background_command(
        self,
        command: str,
        port: Optional[int] = None,
        cwd: Optional[str] = None,
        envs: Optional[Mapping[str, str]] = None,
        timeout_seconds: Optional[int] = None,
    ) -> BackgroundProcess:
        """Starts a long-running command and returns once it has started
        (with a ``port``: once it listens, or the readiness wait ends).
        ``timeout_seconds``: its lifetime; None or 0 until the sandbox ends."""
        args = _filled(
            self._args_type("tools", "start-background-command"),
            {
                "command": _text("command", command),
                "port": _opt_uint("port", port, 65535),
                "cwd": _opt_text("cwd", cwd),
                "envs": _key_values("envs", envs),
                "timeout-seconds": _opt_uint("timeout_seconds", timeout_seconds),
            },
        )
        out = _fields(self._tool("start-background-command", args))
        return BackgroundProcess(
            command=out["command"],
            pid=out["pid"],
            preview_url=out["preview-url"],
            readiness=out["readiness"],
            exit_code=out["exit-code"],
            stdout=out["stdout"],
            stderr=out["stderr"],
        )

    def get_background_output(self, pid: int, since: Optional[OutputOffsets] = None) -> ProcessOutput:
        """What a process started by :meth:`start_background_command`
        printed from ``since`` (None: from the start; pass the previous
        answer's ``next_since`` for only the new output), and whether it
        runs. Only when enabled by ``configure(tools=...)``."""
        offsets = None
        if since is not None:
            offsets = _record(
                {
                    "stdout": _uint("since.stdout", since.stdout, _U64_MAX),
                    "stderr": _uint("since.stderr", since.stderr, _U64_MAX),
                }
            )
        out = _fields(self._tool("get-background-output", _uint("pid", pid), offsets))
        next_since = _fields(out["next-since"])
        return ProcessOutput(
            pid=out["pid"],
            state=out["state"],
            exit_code=out["exit-code"],
            stdout=out["stdout"],
            stderr=out["stderr"],
            next_since=OutputOffsets(next_since["stdout"], next_since["stderr"]),
        )

    def stop_background_command(self, pid: int, signal: Optional[str] = None) -> StoppedProcess:
        """Stops a process started by :meth:`start_background_command` and
        the processes it started: ``signal`` (``sigterm``, the default,
        ``sigint``, ``sighup``, ``sigquit``, ``sigkill``), then SIGKILL after
        5 seconds. Only when enabled by ``configure(tools=...)``."""
        if isinstance(signal, str):
            signal = signal.strip().lower()
            signal = signal if signal.startswith("sig") else "sig" + signal
        out = _fields(
            self._tool(
                "stop-background-command",
                _uint("pid", pid),
                _opt_choice("signal", signal, _SIGNALS),
            )
        )
        return StoppedProcess(out["pid"], out["exit-code"], out["signal"])

    def create_snapshot(self, name: Optional[str] = None) -> Snapshot:
        """Saves the sandbox's state as a snapshot that outlives it (its
        files; on E2B its memory too). ``name``: letters, digits, ``.``,
        ``_`` and ``-``. Only when enabled by ``configure(tools=...)``."""
        out = _fields(self._tool("create-snapshot", _opt_text("name", name)))
        return Snapshot(out["snapshot-id"], list(out["names"]))

    def fork_sandbox(
        self,
        count: Optional[int] = None,
        timeout_seconds: Optional[int] = None,
        keep: bool = False,
    ) -> Forks:
        """Branches the sandbox into ``count`` (1 to 8) new ones, each
        starting with its state; they end with this instance's
        ``shutdown`` unless ``keep``. Only when enabled by
        ``configure(tools=...)``."""
        if not isinstance(keep, bool):
            raise TypeError(f"keep must be a bool, not {type(keep).__name__}")
        args = _filled(
            self._args_type("tools", "fork-sandbox"),
            {
                "count": _opt_uint("count", count),
                "timeout-seconds": _opt_uint("timeout_seconds", timeout_seconds),
                "keep": keep,
            },
        )
        out = _fields(self._tool("fork-sandbox", args))
        failures = [ForkFailure(_fields(f)["kind"], _fields(f)["message"]) for f in out["failures"]]
        return Forks(list(out["sandbox-ids"]), failures)


_shared_lock = threading.Lock()
_shared: Optional[ToolsComponent] = None


def shared_component() -> ToolsComponent:
    """The process's compiled component, shared by the framework
    integrations (each of their instances is its own sandbox)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = ToolsComponent()
        return _shared


def load(
    wasm: Union[PathLike, bytes, None] = None,
    env: Optional[Mapping[str, str]] = None,
    *,
    cache_dir: Union[PathLike, None, bool] = None,
    policy: Optional[OutboundPolicy] = None,
    on_event: Optional[EventCallback] = None,
) -> E2BTools:
    """Loads the component (from the compile cache when it can) and returns
    one instance of it; see :class:`ToolsComponent` and
    :meth:`ToolsComponent.instantiate`."""
    return ToolsComponent(wasm, cache_dir=cache_dir).instantiate(env, policy=policy, on_event=on_event)
