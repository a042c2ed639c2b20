"""Lifecycle events: what an instance does, told to callbacks.

Six kinds, spelled as in the Rust and Node hosts: ``sandbox_start``,
``sandbox_stop``, ``exec_start``, ``exec_end``, ``snapshot`` and ``error``.
A callback (a function or a coroutine function) gets each :class:`Event`
on a thread of its own behind a bounded queue, so a callback that raises,
blocks or never returns loses events (counted, logged once) and never
holds a tool call up.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
import queue
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Dict, List, Optional

logger = logging.getLogger("e2b_tools")

#: The event kinds.
KINDS = ("sandbox_start", "sandbox_stop", "exec_start", "exec_end", "snapshot", "error")

#: How many undelivered events a callback's queue holds; past that, new
#: events for it are dropped and counted.
QUEUE_CAPACITY = 1024


@dataclass(frozen=True)
class Event:
    """One lifecycle event. Argument values are never in it; ``detail``
    comes from the component, which redacts secrets from all it returns."""

    #: One of :data:`KINDS`.
    kind: str
    #: The tool, for ``exec_*`` and ``snapshot``.
    tool: Optional[str] = None
    #: The instance's sandbox, when it has one.
    sandbox_id: Optional[str] = None
    #: Seconds the call took (``exec_end``), or the instance had the sandbox
    #: (``sandbox_stop``).
    duration: Optional[float] = None
    #: Whether the call succeeded (``exec_end``), or the sandbox was killed
    #: (``sandbox_stop``).
    success: Optional[bool] = None
    #: The failure's kind (``not-found``, ``timeout``, …, ``trapped`` or
    #: ``interrupted``).
    error_kind: Optional[str] = None
    #: ``sandbox_start``: ``created``, ``resumed`` or ``forked``;
    #: ``sandbox_stop``: ``shutdown``, ``gone``, ``released``, ``dropped`` or
    #: ``exit``; ``snapshot``: the snapshot id; ``error``: what failed.
    detail: Optional[str] = None
    #: The run (an ADK invocation id) the event belongs to, where known.
    run_id: Optional[str] = None
    #: The agent whose call it was, where known.
    agent: Optional[str] = None
    #: When it happened (``time.time()``).
    time: float = field(default_factory=time.time)


#: The run and agent a call is made for (the ADK integration sets it; it
#: follows calls into ``asyncio.to_thread``).
call_context: contextvars.ContextVar[Optional[Dict[str, Optional[str]]]] = contextvars.ContextVar(
    "e2b_tools_call_context", default=None
)


class Subscription:
    """One registered callback: its counts, and :meth:`unsubscribe`."""

    def __init__(self, owner: Events, callback: Callable[[Event], Any]) -> None:
        self._owner = owner
        self._callback = callback
        self._queue: queue.Queue[Optional[Event]] = queue.Queue(QUEUE_CAPACITY)
        # A coroutine callback subscribed from inside an event loop runs on
        # that loop; otherwise on this subscription's thread.
        try:
            self._loop: Optional[asyncio.AbstractEventLoop] = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None
        #: Events the callback returned from (or, for a coroutine, finished).
        self.delivered = 0
        #: Events lost: the queue was full, or the callback raised on them.
        self.dropped = 0
        self._warned = False
        self._thread = threading.Thread(target=self._run, name="e2b-tools-events", daemon=True)
        self._thread.start()

    def unsubscribe(self) -> None:
        """Removes the callback; events already queued are still delivered."""
        self._owner._remove(self)
        try:
            self._queue.put_nowait(None)
        except queue.Full:
            pass

    def _offer(self, event: Event) -> None:
        try:
            self._queue.put_nowait(event)
        except queue.Full:
            self._drop(event, "its queue is full (the callback blocks or is slow)")

    def _drop(self, event: Event, why: str) -> None:
        self.dropped += 1
        with self._owner._lock:  # every subscription's thread counts here
            self._owner.dropped += 1
        if not self._warned:
            self._warned = True
            logger.warning("e2b_tools: an event callback lost a %s event: %s", event.kind, why)

    def _run(self) -> None:
        while True:
            event = self._queue.get()
            if event is None:
                return
            try:
                result = self._callback(event)
                if inspect.isawaitable(result):
                    self._await(event, result)
                    continue
                self.delivered += 1
            except Exception as err:  # noqa: BLE001 - a callback's bug must not end delivery
                self._drop(event, f"it raised {type(err).__name__}: {err}")

    def _await(self, event: Event, awaitable: Any) -> None:
        async def run() -> Any:
            return await awaitable

        loop = self._loop
        if loop is None or loop.is_closed():
            asyncio.run(run())
            self.delivered += 1
            return
        future = asyncio.run_coroutine_threadsafe(run(), loop)

        def finished(done: Any) -> None:
            if done.cancelled() or done.exception() is not None:
                self._drop(event, f"it raised {done.exception()!r}")
            else:
                self.delivered += 1

        future.add_done_callback(finished)


class Events:
    """The callbacks of one instance."""

    def __init__(self) -> None:
        self._subscriptions: List[Subscription] = []
        self._lock = threading.Lock()
        #: Events lost over all callbacks.
        self.dropped = 0

    def subscribe(self, callback: Callable[[Event], Any]) -> Subscription:
        if not callable(callback):
            raise TypeError(f"an event callback must be callable, not {type(callback).__name__}")
        subscription = Subscription(self, callback)
        with self._lock:
            self._subscriptions.append(subscription)
        return subscription

    def _remove(self, subscription: Subscription) -> None:
        with self._lock:
            if subscription in self._subscriptions:
                self._subscriptions.remove(subscription)

    def emit(self, kind: str, **fields: Any) -> None:
        """Queues one event for every callback; never waits."""
        with self._lock:
            subscriptions = list(self._subscriptions)
        if not subscriptions:
            return
        context = call_context.get() or {}
        event = Event(kind, **fields)
        if context:
            event = replace(event, run_id=context.get("run_id"), agent=context.get("agent"))
        for subscription in subscriptions:
            subscription._offer(event)
