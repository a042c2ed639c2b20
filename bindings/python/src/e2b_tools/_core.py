"""One instance's calls into the component, and what its events and its
cleanup need: the store and instance, the locks, the sandbox it holds.

:class:`E2BTools` wraps a :class:`Core`; the core never refers back to it,
so a finalizer can hold the core and kill the sandbox once the wrapper is
garbage-collected (see ``_reaper``).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Dict, Optional, Tuple, cast

import wasmtime
from wasmtime import Store
from wasmtime.component import Func, Record, Variant

from . import _reaper
from ._events import Events

_PACKAGE = "e2b:tools/{}@0.1.0"

logger = logging.getLogger("e2b_tools")


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
        self.path: Optional[str] = fields["path"]
        #: The command the call was about, if any.
        self.command: Optional[str] = fields["command"]


class InstanceError(RuntimeError):
    """The instance trapped (a bug in the component, or its memory cap was
    reached) and cannot be called any more, or it was closed; make a new
    one. A trapped instance's sandbox ends at its timeout."""


def unwrap(value: Any) -> Any:
    """A ``result<T, tool-error>`` as wasmtime-py gives it: T, or raises
    :class:`ToolError`."""
    if isinstance(value, Variant):
        # wasmtime-py tags the result when `ok` and `err` are both records.
        if value.tag == "err":
            raise ToolError(cast(Record, value.payload))
        return value.payload
    # Untagged: `ok` is not a record, so a record is the `tool-error`.
    if isinstance(value, Record):
        raise ToolError(value)
    return value


class Core:
    """The component instance of one :class:`E2BTools`, and its state."""

    def __init__(self, component: Any, store: Store, env: Dict[str, str], gate: Any) -> None:
        #: The ToolsComponent, for a fresh instance that kills the sandbox
        #: while a call still runs in this one.
        self.component = component
        self.store = store
        self.instance: Any = None
        self.env = env
        self.gate = gate
        #: One caller's sequence of calls (a tool call, then ``sandbox-id``).
        self.lock = threading.RLock()
        #: The one component call in flight (a call may run on a helper
        #: thread, see ``_reaper.Helper``).
        self.running = threading.Lock()
        self.helper = _reaper.Helper()
        self.funcs: Dict[Tuple[str, str], Func] = {}
        self.broken: Optional[str] = None
        self.closed = False
        self.events = Events()
        #: The sandbox the component reported after the last call, and
        #: since when.
        self.sandbox_id: Optional[str] = None
        self.since: Optional[float] = None
        #: The sandbox ``configure(sandbox_id=)`` attached to: not ours to kill.
        self.attached: Optional[str] = None
        #: ``on_timeout="pause"``: the sandbox is left to pause, not killed.
        self.pauses = False
        #: The connection options, for a fresh instance attaching to it.
        self.connection: Dict[str, Any] = {}

    def func(self, interface: str, name: str) -> Func:
        key = (interface, name)
        if key not in self.funcs:
            parent = self.instance.get_export_index(self.store, _PACKAGE.format(interface))
            index = self.instance.get_export_index(self.store, name, parent)
            func = self.instance.get_func(self.store, index) if index else None
            if func is None:
                raise LookupError(f"the component exports no {interface}.{name}")
            self.funcs[key] = func
        return self.funcs[key]

    def call(self, interface: str, name: str, *args: Any, quick: bool = False) -> Any:
        """One component call; ``quick`` ones (no request to E2B) run on
        the calling thread even where others run on the helper."""
        with self.lock:
            if self.closed:
                raise InstanceError("this instance is closed")
            if self.broken is not None:
                raise InstanceError(f"this instance trapped earlier and cannot be used: {self.broken}")
            func = self.func(interface, name)

            def run() -> Any:
                with self.running:
                    return func(self.store, *args)

            try:
                return run() if quick else self.helper.run(run)
            except wasmtime.WasmtimeError as err:
                # Arguments are checked before the call, so this is a trap.
                self.broken = str(err).splitlines()[0] if str(err) else type(err).__name__
                self.events.emit("error", error_kind="trapped", sandbox_id=self.sandbox_id, detail=self.broken)
                raise InstanceError(f"the component trapped in {interface}.{name}: {err}") from err

    def execute(self, tool: str, run: Callable[[], Any], succeeded: Callable[[Any], bool]) -> Any:
        """One tool call with its events: ``exec_start``, the sandbox's
        start or stop it caused, ``exec_end`` (and ``snapshot``)."""
        with self.lock:
            self.events.emit("exec_start", tool=tool, sandbox_id=self.sandbox_id)
            started = time.monotonic()
            success, error_kind, value = False, None, None
            try:
                value = run()
                success = succeeded(value)
                return value
            except ToolError as err:
                error_kind = err.kind
                raise
            except InstanceError:
                error_kind = "trapped"
                raise
            except BaseException:
                # KeyboardInterrupt, or SystemExit from a signal handler: the
                # call may still run on its helper thread, so nothing more
                # is asked of the instance.
                error_kind = "interrupted"
                raise
            finally:
                took = time.monotonic() - started
                if error_kind not in ("trapped", "interrupted"):
                    self.observe()
                self.events.emit(
                    "exec_end",
                    tool=tool,
                    sandbox_id=self.sandbox_id,
                    duration=took,
                    success=success,
                    error_kind=error_kind,
                )
                if tool == "create_snapshot" and success:
                    # A call-tool dict, or the typed call's WIT record.
                    snapshot_id = value.get("snapshot_id") if isinstance(value, dict) else getattr(value, "snapshot-id", "")
                    self.events.emit("snapshot", tool=tool, sandbox_id=self.sandbox_id, detail=str(snapshot_id))

    def observe(self) -> None:
        """Reads the component's sandbox; tells of its start or loss."""
        try:
            current = self.call("lifecycle", "sandbox-id", quick=True)
        except InstanceError:
            return
        if current == self.sandbox_id:
            return
        if self.sandbox_id is not None:
            self.stopped("gone", False)
        if current is not None:
            detail = "resumed" if current == self.attached else "created"
            self.events.emit("sandbox_start", sandbox_id=current, detail=detail)
            self.since = time.monotonic()
        self.sandbox_id = current

    def stopped(self, reason: str, killed: bool) -> None:
        duration = None if self.since is None else time.monotonic() - self.since
        self.events.emit("sandbox_stop", sandbox_id=self.sandbox_id, detail=reason, success=killed, duration=duration)
        self.sandbox_id = None
        self.since = None

    def shutdown(self, reason: str = "shutdown") -> bool:
        with self.lock:
            try:
                killed = bool(unwrap(self.call("lifecycle", "shutdown")))
            except (ToolError, InstanceError) as err:
                kind = getattr(err, "kind", "session")
                self.events.emit(
                    "error", error_kind=kind, sandbox_id=self.sandbox_id, detail=f"sandbox shutdown failed: {err}"
                )
                raise
            if self.sandbox_id is not None:
                self.stopped(reason, killed)
            self.attached = None
            return killed

    def reap(self, reason: str) -> None:
        """Kills the sandbox this instance created, if it has one (bounded;
        see ``_reaper``). Never raises."""
        self.helper.stop()
        sandbox = self.sandbox_id
        if sandbox is None or sandbox == self.attached or self.pauses or self.broken or self.closed:
            return
        try:
            if self.running.acquire(timeout=0.5):
                # Idle: its own shutdown. The lock is held, so no `call`.
                try:
                    killed = bool(unwrap(self.func("lifecycle", "shutdown")(self.store)))
                finally:
                    self.running.release()
            else:
                killed = self._kill_through_another(sandbox)
            self.stopped(reason, killed)
        except Exception as err:  # noqa: BLE001 - cleanup at exit must not raise
            logger.warning("e2b_tools: could not kill sandbox %s at %s: %s", sandbox, reason, err)
            self.events.emit("error", error_kind="session", sandbox_id=sandbox, detail=f"kill at {reason}: {err}")

    def _kill_through_another(self, sandbox: str) -> bool:
        """A call still runs in this instance: a fresh one attaches to the
        sandbox (a listing connects it) and shuts it down."""
        fresh = self.component.instantiate(self.env, policy=self.gate.policy)
        try:
            fresh.configure(sandbox_id=sandbox, **self.connection)
            fresh.call_tool("list_files", {"path": "/"})
            return bool(fresh.shutdown())
        finally:
            fresh.close()
