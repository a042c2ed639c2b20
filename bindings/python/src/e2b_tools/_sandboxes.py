"""What an instance's component reports as it happens (the WIT ``events``
import, ``wit/events.wit``): turned into the instance's lifecycle events
at once, and kept where the reaper can read them without the instance, so
a process stopping in the middle of a call still knows every sandbox that
is its to kill (the one that call is creating included, once created).

The ``report`` a linker holds refers to a :class:`Tracker` only, never to
the instance or its store: the store keeps its host functions alive, so a
reference back would keep every instance alive forever (as ``_outbound``'s
gate). A fresh instance that kills the sandboxes of a busy one reports to
the busy one's tracker.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Dict, List, Optional, Set, Tuple

from ._events import Events

logger = logging.getLogger("e2b_tools")

#: The interface the component imports for its reports.
EVENTS_IMPORT = "e2b:tools/events@0.1.0"

#: ``sandbox_start``'s detail for each origin.
_STARTED = {"created": "created", "attached": "resumed", "forked": "forked"}
#: ``sandbox_stop``'s detail for each reason but ``killed``.
_STOPPED = {"released": "released", "gone": "gone"}


class Call:
    """One component call, as its reports tell it: a tool call (``tool``)
    or a lifecycle one (None)."""

    __slots__ = ("tool", "began", "entered", "started", "made", "ended", "told", "abandoned")

    def __init__(self, tool: Optional[str] = None) -> None:
        self.tool = tool
        self.began = time.monotonic()
        #: The component runs it (or ran it).
        self.entered = False
        #: Its ``exec-started`` came: it has its sandbox, its work began.
        self.started = False
        #: A sandbox became the instance's during it.
        self.made = False
        #: Its ``exec-ended`` came.
        self.ended = False
        #: The host told its ``exec_start`` (the component had not).
        self.told = False
        #: The host told its end (interrupted, trapped): what the component
        #: reports of it later is not told again.
        self.abandoned = False


class Tracker:
    """One instance's sandboxes and its call in flight, as reported."""

    def __init__(self, events: Events) -> None:
        self.events = events
        # Reentrant: a signal handler may run on a thread that holds it.
        self._lock = threading.RLock()
        #: The instance's own sandbox (not a fork), and since when.
        self._current: Optional[Tuple[str, float]] = None
        #: The sandboxes alive that are the host's to kill, oldest first.
        self._owned: List[str] = []
        #: The sandboxes started and not stopped (a stop is told once).
        self._known: Set[str] = set()
        #: The component call running now.
        self.call: Optional[Call] = None
        #: Set while the host itself kills them at the end (``dropped``,
        #: ``exit``): what their stop events say instead of ``shutdown``.
        self.killing_for: Optional[str] = None

    def forwarding(self) -> Tracker:
        """A tracker for a fresh instance that kills this one's sandboxes:
        its reports are taken here (and told to these subscribers), its call
        in flight is its own."""
        return _Forwarding(self)

    # Read without the lock: a reaper thread must never wait for it (each
    # is one read of a reference, or a copy of a list, under the GIL).

    def current(self) -> Optional[str]:
        """The instance's own sandbox, if it has one."""
        current = self._current
        return None if current is None else current[0]

    def owned(self) -> List[str]:
        """The sandboxes that are the host's to kill, newest first (forks
        before the sandbox they came from)."""
        return list(reversed(list(self._owned)))

    def making(self) -> bool:
        """Whether the call running may still make a sandbox nobody was
        told of yet: it has neither made one nor begun its work."""
        call = self.call
        return call is not None and not (call.started or call.made)

    # The call in flight (set on the thread that runs it).

    def enter(self, call: Call) -> None:
        call.entered = True
        self.call = call

    def leave(self, call: Call) -> None:
        if self.call is call:
            self.call = None

    def start_by_host(self, call: Call) -> None:
        """Tells the tool call's ``exec_start`` if the component did not
        (it trapped, or was interrupted, before it had its sandbox)."""
        with self._lock:
            if call.tool is not None and not (call.started or call.told or call.ended or call.abandoned):
                # Not `started`: that one says the component has its
                # sandbox, which the reaper waits for.
                call.told = True
                self.events.emit("exec_start", tool=call.tool, sandbox_id=self.current())

    def end_by_host(self, call: Call, error_kind: str) -> None:
        """The call ended for the host before the component said so (it was
        interrupted, or the instance trapped): its ``exec_end`` is told now
        (after its ``exec_start``, if that was not told yet), and whatever
        the component reports of it later is not."""
        with self._lock:
            if call.ended or call.abandoned:
                return
            self.start_by_host(call)
            call.abandoned = True
            sandbox = self.current()
            self.events.emit(
                "exec_end",
                tool=call.tool,
                sandbox_id=sandbox,
                duration=time.monotonic() - call.began,
                success=False,
                error_kind=error_kind,
            )

    # The import.

    def install(self, linker: Any) -> None:
        """Defines the component's ``events.report`` in ``linker``."""
        tracker = self

        def report(_ctx: Any, event: Any) -> None:
            # An exception here would trap the instance: log it instead.
            try:
                tracker.report(event.tag, dict(vars(event.payload)))
            except Exception as err:  # noqa: BLE001
                logger.debug("e2b_tools: a report could not be taken: %s", err)

        with linker.root() as root:
            with root.add_instance(EVENTS_IMPORT) as events:
                events.add_func("report", report)

    def report(self, kind: str, fields: Dict[str, Any]) -> None:
        """Takes one report (the WIT ``event``'s case and its record's
        kebab-case fields): remembers what it says, and tells the
        subscribers."""
        events = self.events
        with self._lock:
            call = self.call
            if kind == "sandbox-started":
                sandbox, origin = fields["sandbox-id"], fields["origin"]
                if fields["owned"] and sandbox not in self._owned:
                    self._owned.append(sandbox)
                if origin != "forked":
                    self._current = (sandbox, time.monotonic())
                if call is not None:
                    call.made = True
                self._known.add(sandbox)
                events.emit("sandbox_start", sandbox_id=sandbox, detail=_STARTED.get(origin, origin))
            elif kind == "sandbox-stopped":
                sandbox, reason = fields["sandbox-id"], fields["reason"]
                if sandbox in self._owned:
                    self._owned.remove(sandbox)
                duration = None
                if self._current is not None and self._current[0] == sandbox:
                    duration = time.monotonic() - self._current[1]
                    self._current = None
                if sandbox not in self._known:
                    # Not this instance's (a kill by id of another one), or
                    # told already (by the instance that killed it).
                    return
                self._known.discard(sandbox)
                detail = (self.killing_for or "shutdown") if reason == "killed" else _STOPPED.get(reason, reason)
                events.emit(
                    "sandbox_stop", sandbox_id=sandbox, detail=detail, success=reason == "killed", duration=duration
                )
            elif kind == "exec-started":
                if call is not None:
                    call.started = True
                    if call.abandoned:
                        return
                events.emit("exec_start", tool=fields["tool"], sandbox_id=fields["sandbox-id"])
            elif kind == "exec-ended":
                if call is not None:
                    call.ended = True
                    if call.abandoned:
                        return
                error_kind = fields["error-kind"]
                events.emit(
                    "exec_end",
                    tool=fields["tool"],
                    sandbox_id=fields["sandbox-id"],
                    duration=fields["duration-ms"] / 1000,
                    success=error_kind is None,
                    error_kind=error_kind,
                )
            elif kind == "snapshot-created":
                events.emit(
                    "snapshot", tool="create_snapshot", sandbox_id=fields["sandbox-id"], detail=fields["snapshot-id"]
                )
            else:
                logger.debug("e2b_tools: an unknown report: %s", kind)


class _Forwarding(Tracker):
    """See :meth:`Tracker.forwarding`."""

    def __init__(self, parent: Tracker) -> None:
        super().__init__(parent.events)
        self._parent = parent

    def report(self, kind: str, fields: Dict[str, Any]) -> None:
        self._parent.report(kind, fields)
