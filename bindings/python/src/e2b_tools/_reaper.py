"""No sandbox outlives its process: the sandboxes an instance owns (the
one it created and its forks, as its component reports them: see
``_sandboxes``) are killed when the instance is garbage-collected, when the
interpreter exits (``atexit``), and on SIGTERM or SIGINT. One it attached
to (``sandbox_id``) or left to pause is not, unless ``kill_on_exit``.

Each kill is bounded: it runs on a daemon thread, through the instance
itself when it is idle, or, when a call still runs in it (the call that is
creating the sandbox included: it is waited for until it has reported
it), through a fresh instance that kills the sandboxes by id (the
component's ``kill``). E2B's timeout remains the backstop for ``kill -9``.

Signal handlers are installed once, from the main thread, and chain: a
previous Python handler is called as before (it decides what the signal
does; ``atexit`` cleans up if it exits); with the default action, the
sandboxes are killed (within :data:`STOP_TIMEOUT`) and the signal is raised
again with the default action, so the process still ends by it, within 5
seconds; an ignored signal stays ignored. Python's own SIGINT handler
(KeyboardInterrupt, then ``atexit``) is left alone, so ``asyncio.run``
keeps its Ctrl-C handling; a KeyboardInterrupt that stopped a call makes
the kills at exit as short (as does an uncaught one). While the kills at the end run on the main
thread, a second SIGTERM or SIGINT waits for them, then takes its course.
Once they began, no call that may make a sandbox starts.
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import os
import queue
import signal
import sys
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Set

#: The longest the kills of one instance may take (garbage collection, the
#: end of the interpreter).
KILL_TIMEOUT = 10.0
#: The longest the kills may take when a signal ends the process (SIGTERM,
#: or SIGINT's KeyboardInterrupt through a call): it still ends within 5 s.
STOP_TIMEOUT = 4.0

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
#: Set when the kills at the end of the process began.
_stopping = False
#: Set when a KeyboardInterrupt (or SystemExit) stopped a call.
_interrupted = False


def stopping() -> bool:
    """Whether the kills at the end of the process began: no call that may
    make a sandbox starts then."""
    return _stopping


def interrupted() -> None:
    """A KeyboardInterrupt or SystemExit stopped a call: the process is
    likely ending by it, so its kills at exit are as short as a signal's."""
    global _interrupted
    _interrupted = True


def track(core: Any) -> None:
    """Registers a live instance; installs the exit hooks the first time."""
    with _lock:
        _cores.add(core)
    _install()


def untrack(core: Any) -> None:
    with _lock:
        _cores.discard(core)


def reap_later(core: Any) -> None:
    """The instance was garbage-collected: kill its sandboxes on a thread."""
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


def reap_all(reason: str = "exit", timeout: Optional[float] = None) -> None:
    """Kills the sandboxes of every live instance, at once, and waits (at
    most ``timeout``; default :data:`KILL_TIMEOUT`, or :data:`STOP_TIMEOUT`
    after a KeyboardInterrupt stopped a call) for them and for the kills
    already under way (after the :func:`before_reap` hooks). A SIGTERM or
    SIGINT that comes meanwhile takes its course after."""
    global _stopping
    _stopping = True
    if timeout is None:
        # An uncaught KeyboardInterrupt is `sys.last_value` by the time
        # atexit runs: the process ends by SIGINT after.
        by_sigint = isinstance(getattr(sys, "last_value", None), KeyboardInterrupt)
        timeout = STOP_TIMEOUT if _interrupted or by_sigint else KILL_TIMEOUT
    deadline = time.monotonic() + timeout
    with _signals_deferred() as deferred:
        with _lock:
            hooks = list(_before_reap)
        for hook in hooks:
            hook(timeout)
        with _lock:
            cores = list(_cores)
            _cores.clear()
            running = list(_running)
        threads = [
            threading.Thread(target=core.reap, args=(reason, deadline), name="e2b-tools-reaper", daemon=True)
            for core in cores
        ]
        for thread in threads:
            thread.start()
        for thread in threads + running:
            thread.join(max(0.0, deadline - time.monotonic()))
    _redeliver(deferred)


@contextlib.contextmanager
def _signals_deferred() -> Iterator[List[int]]:
    """On the main thread: SIGTERM and SIGINT are noted, not acted on,
    inside the block (a second signal must not cut the kills short, nor
    print a KeyboardInterrupt from inside ``atexit``)."""
    deferred: List[int] = []
    replaced: Dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGINT):
            current = signal.getsignal(signum)
            if current is None or current == signal.SIG_IGN:
                continue
            try:
                replaced[signum] = signal.signal(signum, lambda received, _frame: deferred.append(received))
            except (ValueError, OSError):
                pass
    try:
        yield deferred
    finally:
        for signum, handler in replaced.items():
            signal.signal(signum, handler)


def _redeliver(deferred: List[int]) -> None:
    """The signals that came during the kills, now: with the default
    action (or Python's SIGINT handler, which would raise inside
    ``atexit``), the process ends by the first; a handler runs."""
    for signum in dict.fromkeys(deferred):
        handler = signal.getsignal(signum)
        if handler in (signal.SIG_DFL, signal.default_int_handler):
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
        elif callable(handler):
            signal.raise_signal(signum)


def _at_exit() -> None:
    """:func:`reap_all` at exit. A Ctrl-C already pending when it starts
    raises KeyboardInterrupt before the signals are deferred (nothing was
    taken yet): it is tried again, and the process then ends by SIGINT,
    rather than a traceback from inside ``atexit`` and no kill."""
    insisted = False
    for _ in range(3):
        try:
            reap_all()
            break
        except KeyboardInterrupt:
            insisted = True
    if insisted and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)


def _install() -> None:
    global _installed, handlers_installed
    with _lock:
        if _installed:
            return
        _installed = True
    atexit.register(_at_exit)
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
        reap_all("exit", STOP_TIMEOUT)
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
        # The caller's context (an ADK run's, for the events) goes along.
        context = contextvars.copy_context()
        self._jobs.put((lambda: context.run(call), done, box))
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
