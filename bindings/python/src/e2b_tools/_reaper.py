"""No sandbox outlives its process: the sandbox of an instance that was
never shut down is killed when the instance is garbage-collected, when the
interpreter exits (``atexit``), and on SIGTERM or SIGINT.

Each kill is bounded (:data:`KILL_TIMEOUT`): it runs on a daemon thread,
through the instance itself when it is idle, or, when a call is still
running in it, through a fresh instance that attaches to the sandbox and
shuts it down. E2B's timeout remains the backstop for ``kill -9``.

Signal handlers are installed once, from the main thread, and chain: a
previous Python handler is called as before (it decides what the signal
does; ``atexit`` cleans up if it exits); with the default action, the
sandboxes are killed and the signal is raised again with the default
action, so the process still ends by it; an ignored signal stays ignored.
Python's own SIGINT handler (KeyboardInterrupt, then ``atexit``) is left
alone, so ``asyncio.run`` keeps its Ctrl-C handling.
"""

from __future__ import annotations

import atexit
import os
import queue
import signal
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Set

#: The longest one kill may take.
KILL_TIMEOUT = 10.0

_lock = threading.Lock()
#: The live instances' cores (see ``_host._Core``).
_cores: Set[Any] = set()
#: Kills started by finalizers, joined at exit.
_running: List[threading.Thread] = []
_installed = False
#: Called with the time allowed before the sandboxes are killed at exit or
#: on a signal (a warm pool stops, and kills the sandbox it is making).
_before_reap: List[Callable[[float], None]] = []
#: Set once a handler chained in by this module exists: calls made on the
#: main thread then wait interruptibly, so the handler runs mid-call.
handlers_installed = False


def track(core: Any) -> None:
    """Registers a live instance; installs the exit hooks the first time."""
    with _lock:
        _cores.add(core)
    _install()


def untrack(core: Any) -> None:
    with _lock:
        _cores.discard(core)


def reap_later(core: Any) -> None:
    """The instance was garbage-collected: kill its sandbox on a thread."""
    untrack(core)
    thread = threading.Thread(target=core.reap, args=("dropped",), name="e2b-tools-reaper", daemon=True)
    with _lock:
        _running[:] = [t for t in _running if t.is_alive()]
        _running.append(thread)
    thread.start()


def before_reap(hook: Callable[[float], None]) -> None:
    """Registers ``hook``, called with a time limit when :func:`reap_all`
    starts, before any sandbox is killed."""
    with _lock:
        _before_reap.append(hook)


def reap_all(reason: str = "exit", timeout: float = KILL_TIMEOUT) -> None:
    """Kills the sandboxes of every live instance, at once, and waits (at
    most ``timeout``) for them and for the kills already under way (after
    the :func:`before_reap` hooks)."""
    with _lock:
        hooks = list(_before_reap)
    for hook in hooks:
        hook(timeout)
    with _lock:
        cores = list(_cores)
        _cores.clear()
        running = list(_running)
    threads = [threading.Thread(target=core.reap, args=(reason,), daemon=True) for core in cores]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + timeout
    for thread in threads + running:
        thread.join(max(0.0, deadline - time.monotonic()))


def _install() -> None:
    global _installed, handlers_installed
    with _lock:
        if _installed:
            return
        _installed = True
    atexit.register(reap_all)
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in (signal.SIGTERM, signal.SIGINT):
        previous = signal.getsignal(signum)
        # Python's own SIGINT handler raises KeyboardInterrupt, and the exit
        # that follows runs atexit; asyncio.run replaces only that handler,
        # so it is left in place.
        if previous in (signal.SIG_IGN, None, signal.default_int_handler):
            continue
        signal.signal(signum, _chained(signum, previous))
        handlers_installed = True


def _chained(signum: int, previous: Any) -> Callable[[int, Any], None]:
    def handler(received: int, frame: Any) -> None:
        if callable(previous):
            # Theirs decides (SIGINT's raises KeyboardInterrupt); atexit
            # cleans up if the process then exits.
            previous(received, frame)
            return
        # The default action: clean up, then end by the signal as before.
        reap_all("exit")
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    return handler


class Helper:
    """The thread that runs one instance's calls made on the main thread,
    so the main thread waits interruptibly (a wasm call blocks its thread
    in native code, where no signal handler runs). Started on first use;
    ended by :meth:`stop`."""

    def __init__(self) -> None:
        self._jobs: "queue.SimpleQueue[Any]" = queue.SimpleQueue()
        self._thread: Optional[threading.Thread] = None
        self._lock = threading.Lock()

    def run(self, call: Callable[[], Any]) -> Any:
        """``call()`` on the helper thread when the caller is the main
        thread and a handler is installed; else ``call()`` directly."""
        if not handlers_installed or threading.current_thread() is not threading.main_thread():
            return call()
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="e2b-tools-call", daemon=True)
                self._thread.start()
        done = threading.Event()
        box: Dict[str, Any] = {}
        self._jobs.put((call, done, box))
        done.wait()
        if "error" in box:
            raise box["error"]
        return box["value"]

    def stop(self) -> None:
        with self._lock:
            if self._thread is not None:
                self._jobs.put(None)
                self._thread = None

    def _loop(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            call, done, box = job
            try:
                box["value"] = call()
            except BaseException as err:  # noqa: BLE001 - handed to the caller
                box["error"] = err
            finally:
                done.set()
