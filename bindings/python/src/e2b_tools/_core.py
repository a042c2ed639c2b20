"""One instance's calls into the component, and what its events and its
cleanup need: the store and instance, the locks, the sandboxes it holds
(as its component reports them, ``_sandboxes``).

:class:`E2BTools` wraps a :class:`Core`; the core never refers back to it,
so a finalizer can hold the core and kill the sandboxes once the wrapper is
garbage-collected (see ``_reaper``).
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple, cast

import wasmtime
from wasmtime import Store
from wasmtime.component import Func, Record, Variant

from . import _reaper
from ._events import Events
from ._sandboxes import Call, Tracker

_PACKAGE = "e2b:tools/{}@0.1.0"

#: The calls that may make a sandbox: none starts once the process is
#: stopping (``_reaper.stopping``), so none is made after its kills.
_MAKERS = {("lifecycle", "prepare"), ("catalog", "call-tool")}

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

    def __init__(
        self, component: Any, store: Store, env: Dict[str, str], gate: Any, tracker: Optional[Tracker] = None
    ) -> None:
        #: The ToolsComponent, for a fresh instance that kills the sandboxes
        #: while a call still runs in this one (or after it trapped).
        self.component = component
        self.store = store
        self.instance: Any = None
        self.env = env
        self.gate = gate
        #: One caller's sequence of calls.
        self.lock = threading.RLock()
        #: The one component call in flight (a call may run on a helper
        #: thread, see ``_reaper.Helper``).
        self.running = threading.Lock()
        self.helper = _reaper.Helper()
        self.funcs: Dict[Tuple[str, str], Func] = {}
        self.broken: Optional[str] = None
        self.closed = False
        #: What the component reported: the sandboxes, the call in flight.
        #: A fresh instance killing this one's sandboxes shares its tracker
        #: (and so its events).
        self.tracker = tracker if tracker is not None else Tracker(Events())
        self.events = self.tracker.events
        #: ``configure(kill_on_exit=True)``: the sandbox attached to (or
        #: left to pause) is killed at the end too, as the owned ones.
        self.kill_on_exit = False
        #: The connection options, for a fresh instance killing by id.
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

    def call(self, interface: str, name: str, *args: Any, record: Optional[Call] = None) -> Any:
        """One component call (on the helper thread when the caller is the
        main thread, see ``_reaper.Helper``); ``record`` is the tool call
        it is, for its reports."""
        with self.lock:
            if self.closed:
                raise InstanceError("this instance is closed")
            if self.broken is not None:
                raise InstanceError(f"this instance trapped earlier and cannot be used: {self.broken}")
            func = self.func(interface, name)
            call = record if record is not None else Call()
            tracker = self.tracker
            makes = interface == "tools" or (interface, name) in _MAKERS

            def run() -> Any:
                with self.running:
                    # Entered before `stopping` is read, as the reaper sets
                    # it before it looks for a call making a sandbox: one of
                    # the two sees the other.
                    tracker.enter(call)
                    try:
                        if makes and _reaper.stopping():
                            raise InstanceError("the process is stopping: no call that may make a sandbox starts now")
                        return func(self.store, *args)
                    finally:
                        tracker.leave(call)

            try:
                return self.helper.run(run)
            except wasmtime.WasmtimeError as err:
                # Arguments are checked before the call, so this is a trap.
                self.broken = str(err).splitlines()[0] if str(err) else type(err).__name__
                tracker.start_by_host(call)
                self.events.emit("error", error_kind="trapped", sandbox_id=tracker.current(), detail=self.broken)
                raise InstanceError(f"the component trapped in {interface}.{name}: {err}") from err

    def execute(self, tool: str, run: Callable[[Call], Any]) -> Any:
        """One tool call. Its events (``exec_start`` once it has its
        sandbox, a start or stop of the sandbox, ``exec_end``, ``snapshot``)
        come from the component as they happen; the host tells the end only
        of a call it stopped waiting for (``interrupted``) or that trapped."""
        with self.lock:
            call = Call(tool)
            try:
                return run(call)
            except InstanceError:
                if call.entered and self.broken is not None:
                    self.tracker.end_by_host(call, "trapped")
                raise
            except ToolError:
                raise
            except BaseException:
                # KeyboardInterrupt, or SystemExit from a signal handler: the
                # call may still run on its helper thread, so nothing more
                # is asked of the instance, and the process may be ending.
                if not isinstance(sys.exc_info()[1], Exception):
                    _reaper.interrupted()
                self.tracker.end_by_host(call, "interrupted")
                raise

    def shutdown(self) -> bool:
        """The component's ``shutdown`` (its stop events come from it)."""
        with self.lock:
            try:
                return bool(unwrap(self.call("lifecycle", "shutdown")))
            except (ToolError, InstanceError) as err:
                kind = getattr(err, "kind", "session")
                self.events.emit(
                    "error",
                    error_kind=kind,
                    sandbox_id=self.tracker.current(),
                    detail=f"sandbox shutdown failed: {err}",
                )
                raise

    def to_kill(self) -> List[str]:
        """What the host kills at the end: the sandboxes it owns, newest
        first, and with ``kill_on_exit`` the one it attached to."""
        ids = self.tracker.owned()
        current = self.tracker.current()
        if self.kill_on_exit and current is not None and current not in ids:
            ids.append(current)
        return ids

    def reap(self, reason: str, deadline: Optional[float] = None) -> None:
        """Kills the sandboxes that are this instance's to kill (:meth:`to_kill`),
        by ``deadline`` (``time.monotonic()``; default: in
        ``_reaper.KILL_TIMEOUT``): through the instance when it is idle (or
        frees up within half the time), else, while a call still runs in it
        or after a trap, through a fresh instance configured the same way
        (the component's ``kill``, by id). A call that is creating a
        sandbox is waited for (within the same half) until it has reported
        it. Never raises; a failed kill is an ``error`` event."""
        if deadline is None:
            deadline = time.monotonic() + _reaper.KILL_TIMEOUT
        self.helper.stop()
        tracker = self.tracker
        if not self.to_kill() and not tracker.making():
            return
        tracker.killing_for = reason
        grace = time.monotonic() + max(0.0, deadline - time.monotonic()) / 2
        try:
            if self.broken is None and not self.closed and self._idle(grace):
                # Idle: its own kills. `running` is held, so no `call`.
                try:
                    self._kill_each(self._own_kill, deadline, reason)
                finally:
                    self.running.release()
            if self.to_kill() and time.monotonic() < deadline:
                self._kill_through_another(deadline, reason)
        except Exception as err:  # noqa: BLE001 - cleanup at the end must not raise
            self._kill_failed(", ".join(self.to_kill()) or "?", reason, err)

    def _idle(self, until: float) -> bool:
        """Takes ``running`` if the instance is idle or frees up by ``until``;
        gives up sooner once the call running has made its sandbox or
        begun its work (it makes no other)."""
        while True:
            if self.running.acquire(timeout=0.05):
                return True
            if time.monotonic() >= until or (self.to_kill() and not self.tracker.making()):
                return False

    def _own_kill(self, sandbox: str) -> bool:
        call = Call()
        self.tracker.enter(call)
        try:
            return bool(unwrap(self.func("lifecycle", "kill")(self.store, sandbox)))
        except wasmtime.WasmtimeError as err:
            self.broken = str(err).splitlines()[0] if str(err) else type(err).__name__
            raise InstanceError(f"the component trapped in lifecycle.kill: {err}") from err
        finally:
            self.tracker.leave(call)

    def _kill_each(self, kill: Callable[[str], bool], deadline: float, reason: str) -> None:
        for sandbox in self.to_kill():
            if time.monotonic() >= deadline:
                return
            try:
                kill(sandbox)
            except ToolError as err:
                self._kill_failed(sandbox, reason, err)
            except InstanceError as err:
                # A trap: the rest goes through another instance.
                self._kill_failed(sandbox, reason, err)
                return

    def _kill_through_another(self, deadline: float, reason: str) -> None:
        """A call still runs in this instance (or it trapped): a fresh one,
        configured the same way, kills the sandboxes by id. Its reports go
        to this instance's tracker."""
        tracker = self.tracker.forwarding()
        fresh = self.component._instantiate(self.env, policy=self.gate.policy, tracker=tracker, reaped=False)
        try:
            fresh.configure(**self.connection)
            core = fresh._core

            def kill(sandbox: str) -> bool:
                was_there = bool(unwrap(core.call("lifecycle", "kill", sandbox)))
                # The fresh instance reports no stop of a sandbox that is
                # not its own: this instance's tracker is told here (once).
                stop = {"sandbox-id": sandbox, "reason": "killed" if was_there else "gone"}
                self.tracker.report("sandbox-stopped", stop)
                return was_there

            self._kill_each(kill, deadline, reason)
        finally:
            # It holds no sandbox: nothing to shut down.
            fresh._core.closed = True
            fresh._core.helper.stop()

    def _kill_failed(self, sandbox: str, reason: str, err: BaseException) -> None:
        logger.warning("e2b_tools: could not kill sandbox %s at %s: %s", sandbox, reason, err)
        self.events.emit("error", error_kind="session", sandbox_id=sandbox, detail=f"kill at {reason}: {err}")
