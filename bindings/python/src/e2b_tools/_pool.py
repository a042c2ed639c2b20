"""A warm pool: instances whose sandboxes are made ahead, so an agent
session's first tool call does not wait for one (on E2B, ~400 ms at the
median and a second at the tail).

The same pool as the Rust host library's ``WarmPool``: ``size`` instances
of one configuration, each with its sandbox made (``prepare``) on a short
timeout (:data:`WAITING_TIMEOUT`) that a background thread refreshes while
it waits, so E2B's timeout is the backstop if the process dies.
:meth:`WarmPool.take` hands one out after one more ``prepare`` that gives
its sandbox the configured timeout and proves it still lives (a dead one is
dropped and the next one taken), and wakes the filler. A pool that cannot
fill (429, quota) backs off, and :meth:`~WarmPool.take` then gives a fresh
instance that creates its sandbox on its first call, as without a pool.
Closing the pool kills the sandboxes still waiting; the reaper kills them
at exit, on SIGTERM and SIGINT like any instance's.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections import deque
from dataclasses import dataclass
from typing import Any, Deque, Mapping, Optional

from . import _reaper
from ._core import InstanceError, ToolError
from ._host import DEFAULT_MEMORY_LIMIT, E2BTools, ToolsComponent, e2b_env, shared_component
from ._policy import OutboundPolicy

#: The timeout of a sandbox waiting in a pool, in seconds: short, so a
#: pool whose process died costs at most this long per sandbox.
WAITING_TIMEOUT = 60
#: The most instances one pool holds.
MAX_POOL_SIZE = 64
#: The longest wait between two attempts to fill a pool that fails.
_MAX_BACKOFF = 60.0
#: How long :meth:`WarmPool.take` waits for a sandbox being made.
_TAKE_WAIT = 30.0
logger = logging.getLogger("e2b_tools")

#: The pools not closed yet: when the process ends (at exit, or on SIGTERM
#: or SIGINT) they stop filling before the reaper kills any sandbox. The
#: reaper kills what waits and the sandbox being made (its instance is one
#: like any other: its component reports the sandbox as soon as it is
#: created), all at once, without waiting for the filler.
_open_pools: "weakref.WeakSet[WarmPool]" = weakref.WeakSet()


def _stop_open_pools(_wait: float) -> None:
    for pool in list(_open_pools):
        pool._stop_filling()


_reaper.before_reap(_stop_open_pools)


@dataclass(frozen=True)
class PoolStats:
    """What a pool did so far."""

    #: Instances waiting now.
    waiting: int
    #: Sandboxes the pool made.
    made: int
    #: Instances handed out ready.
    handed_out: int
    #: Waiting sandboxes found dead (or failing to refresh) and dropped.
    discarded: int
    #: Attempts to make a sandbox that failed.
    failed: int


class WarmPool:
    """``size`` (1 to :data:`MAX_POOL_SIZE`) instances of one configuration
    with their sandboxes made ahead, filled on a daemon thread.

    ``config`` holds :meth:`E2BTools.configure`'s options; ``env``,
    ``policy`` and ``memory_limit`` are :meth:`ToolsComponent.instantiate`'s.
    Use it as a context manager, or call :meth:`close`."""

    def __init__(
        self,
        size: int,
        *,
        component: Optional[ToolsComponent] = None,
        env: Optional[Mapping[str, str]] = None,
        policy: Optional[OutboundPolicy] = None,
        memory_limit: int = DEFAULT_MEMORY_LIMIT,
        **config: Any,
    ) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_POOL_SIZE:
            raise ValueError(f"a warm pool holds 1 to {MAX_POOL_SIZE} sandboxes, not {size!r}")
        self._component = component or shared_component()
        self._env = dict(e2b_env() if env is None else env)
        self._policy = policy
        self._memory_limit = memory_limit
        self._config = _set_options(config)
        self._size = size
        # Fails here, not on the filler, for options the component rejects.
        probe = self._instance()
        probe.close()
        self._waiting: Deque[E2BTools] = deque()
        self._changed = threading.Condition()
        self._filling = False
        self._closed = False
        self._counts = {"made": 0, "handed_out": 0, "discarded": 0, "failed": 0}
        self._filler = threading.Thread(target=self._fill, name="e2b-tools-pool", daemon=True)
        _open_pools.add(self)
        self._filler.start()

    def __enter__(self) -> WarmPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def serves(self, config: Mapping[str, Any]) -> bool:
        """Whether instances configured with ``config`` may come from here."""
        return _set_options(config) == self._config

    def take(self) -> E2BTools:
        """An instance of the pool's configuration: a waiting one, its
        sandbox ready and on the configured timeout; else (none waiting and
        none about to be ready, or the pool closed) a fresh one that creates
        its sandbox on its first call."""
        deadline = time.monotonic() + _TAKE_WAIT
        while True:
            with self._changed:
                if self._closed:
                    break
                if not self._waiting and self._filling and time.monotonic() < deadline:
                    # A sandbox is being made: sooner than making another.
                    self._changed.wait(deadline - time.monotonic())
                    continue
                if not self._waiting:
                    break
                e2b = self._waiting.popleft()
                self._changed.notify_all()
            try:
                # The configured timeout, and the proof it still lives.
                e2b.prepare()
            except (ToolError, InstanceError):
                self._count("discarded")
                _close_quietly(e2b)
                continue
            self._count("handed_out")
            return e2b
        return self._instance()

    @property
    def stats(self) -> PoolStats:
        """What the pool did so far."""
        with self._changed:
            return PoolStats(waiting=len(self._waiting), **self._counts)

    def close(self) -> None:
        """Stops filling and kills every waiting sandbox (instances handed
        out are their holders'). Later :meth:`take` calls give fresh
        instances."""
        self._close(30.0)

    def _stop_filling(self) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        _open_pools.discard(self)

    def _close(self, wait: float) -> None:
        self._stop_filling()
        if self._filler is not threading.current_thread():
            self._filler.join(timeout=wait)
        self._drain()

    def _instance(self) -> E2BTools:
        e2b = self._component.instantiate(self._env, policy=self._policy, memory_limit=self._memory_limit)
        try:
            e2b.configure(**self._config)
        except BaseException:
            e2b.close()
            raise
        return e2b

    def _count(self, name: str) -> None:
        with self._changed:
            self._counts[name] += 1

    def _drain(self) -> None:
        with self._changed:
            waiting = list(self._waiting)
            self._waiting.clear()
        for e2b in waiting:
            _close_quietly(e2b)

    def _make(self) -> Optional[E2BTools]:
        """An instance with its sandbox made on the waiting timeout. Any
        failure is a failed attempt: the filler must outlive it, or
        :meth:`take` would wait for a sandbox that never comes."""
        try:
            e2b = self._instance()
        except Exception as err:  # noqa: BLE001 - counted, backed off
            logger.debug("a warm pool could not make an instance: %s", err)
            return None
        try:
            e2b.prepare(WAITING_TIMEOUT)
        except Exception as err:  # noqa: BLE001 - counted, backed off
            logger.debug("a warm pool could not make a sandbox: %s", err)
            _close_quietly(e2b)
            return None
        return e2b

    def _refresh(self) -> None:
        """Puts every waiting sandbox back on the waiting timeout; one that
        fails is dropped (and refilled)."""
        with self._changed:
            waiting = list(self._waiting)
            self._waiting.clear()
        for e2b in waiting:
            try:
                e2b.prepare(WAITING_TIMEOUT)
            except Exception:  # noqa: BLE001 - the sandbox is dropped either way
                self._count("discarded")
                _close_quietly(e2b)
                continue
            with self._changed:
                if self._closed:
                    _close_quietly(e2b)
                else:
                    self._waiting.append(e2b)
                    self._changed.notify_all()

    def _fill(self) -> None:
        backoff = 0.25
        refresh_every = WAITING_TIMEOUT / 3
        last_refresh = time.monotonic()
        while True:
            if time.monotonic() - last_refresh >= refresh_every:
                self._refresh()
                last_refresh = time.monotonic()
            with self._changed:
                if self._closed:
                    break
                if len(self._waiting) >= self._size:
                    # Full: until one is taken, the pool closes, or the next refresh.
                    self._changed.wait(max(0.0, refresh_every - (time.monotonic() - last_refresh)))
                    continue
                self._filling = True
            e2b = self._make()
            with self._changed:
                self._filling = False
                if e2b is not None and not self._closed:
                    self._waiting.append(e2b)
                    self._counts["made"] += 1
                    backoff = 0.25
                elif e2b is None:
                    self._counts["failed"] += 1
                self._changed.notify_all()
                closed = self._closed
            if e2b is not None and closed:
                _close_quietly(e2b)
            if e2b is None and not closed:
                with self._changed:
                    self._changed.wait(backoff)
                backoff = min(backoff * 2, _MAX_BACKOFF)
        self._drain()


def _close_quietly(e2b: E2BTools) -> None:
    """Closes an instance the pool drops; a failed kill is left to E2B's
    (short) timeout."""
    try:
        e2b.close()
    except Exception as err:  # noqa: BLE001 - never fatal to the filler
        logger.debug("a warm pool could not close an instance: %s", err)


def _set_options(config: Mapping[str, Any]) -> dict:
    """``config`` without its unset options, as pools compare them."""
    return {key: value for key, value in config.items() if value is not None}
